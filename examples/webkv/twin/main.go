// Command twin is examples/webkv written with net/http and
// gorilla/websocket: the same routes, answers and limits, one goroutine
// per connection, the keys in one map under a mutex. It is what webkv is
// checked against (the differential test in this module) and measured
// against.
//
//	go run . -addr 127.0.0.1:8081
package main

import (
	"context"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// maxValue is the largest value and the largest WebSocket message.
const maxValue = 1 << 20

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address")
	static := flag.String("static", "", "serve the files of this directory at /static/")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: newTwin(*static), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	log.Printf("listening on http://%s", ln.Addr())
	go srv.Serve(ln)
	stop, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	<-stop.Done()
	ctx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	srv.Shutdown(ctx)
}

type twin struct {
	mu       sync.Mutex
	kv       map[string][]byte
	watchers map[*websocket.Conn]*sync.Mutex
	up       websocket.Upgrader
}

// newTwin returns the twin's routes; with static, the files of that
// directory at /static/.
func newTwin(static string) http.Handler {
	t := &twin{kv: map[string][]byte{}, watchers: map[*websocket.Conn]*sync.Mutex{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", t.page)
	mux.HandleFunc("/kv/", t.kvRoute)
	mux.HandleFunc("POST /echo", t.echo)
	mux.HandleFunc("GET /slow/{ms}", t.slow)
	mux.HandleFunc("GET /ws/echo", t.wsEcho)
	mux.HandleFunc("GET /ws/watch", t.wsWatch)
	if static != "" {
		mux.Handle("GET /static/", http.StripPrefix("/static", http.FileServer(http.Dir(static))))
	}
	return mux
}

func (t *twin) kvRoute(w http.ResponseWriter, r *http.Request) {
	path, _, _ := strings.Cut(r.RequestURI, "?")
	key := strings.TrimPrefix(path, "/kv/")
	switch r.Method {
	case "GET", "HEAD":
		t.mu.Lock()
		v, ok := t.kv[key]
		t.mu.Unlock()
		if key == "" || !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(v)))
		if r.Method == "GET" {
			w.Write(v)
		}
	case "PUT":
		if key == "" {
			http.NotFound(w, r)
			return
		}
		v, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxValue))
		if err != nil {
			w.Header().Set("Connection", "close")
			http.Error(w, "Request Entity Too Large", http.StatusRequestEntityTooLarge)
			return
		}
		t.mu.Lock()
		t.kv[key] = v
		t.mu.Unlock()
		t.announce("put " + key)
		w.WriteHeader(http.StatusNoContent)
	case "DELETE":
		t.mu.Lock()
		_, ok := t.kv[key]
		delete(t.kv, key)
		t.mu.Unlock()
		if key == "" || !ok {
			http.NotFound(w, r)
			return
		}
		t.announce("del " + key)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "DELETE, GET, HEAD, PUT")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

func (t *twin) announce(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c, wmu := range t.watchers {
		wmu.Lock()
		c.WriteMessage(websocket.TextMessage, []byte(line))
		wmu.Unlock()
	}
}

func (t *twin) echo(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxValue))
	if err != nil {
		http.Error(w, "Request Entity Too Large", http.StatusRequestEntityTooLarge)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

func (t *twin) slow(w http.ResponseWriter, r *http.Request) {
	v := r.PathValue("ms")
	ms, err := strconv.Atoi(v)
	if err != nil || ms < 0 || ms > 10000 {
		http.Error(w, "ms must be an integer from 0 to 10000", http.StatusBadRequest)
		return
	}
	time.Sleep(time.Duration(ms) * time.Millisecond)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "slept "+v)
}

func (t *twin) wsEcho(w http.ResponseWriter, r *http.Request) {
	c, err := t.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	c.SetReadLimit(maxValue)
	for {
		typ, p, err := c.ReadMessage()
		if err != nil {
			return
		}
		if err := c.WriteMessage(typ, p); err != nil {
			return
		}
	}
}

func (t *twin) wsWatch(w http.ResponseWriter, r *http.Request) {
	c, err := t.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	c.SetReadLimit(maxValue)
	wmu := new(sync.Mutex)
	c.SetPingHandler(func(p string) error {
		wmu.Lock()
		defer wmu.Unlock()
		return c.WriteControl(websocket.PongMessage, []byte(p), time.Now().Add(time.Second))
	})
	t.mu.Lock()
	t.watchers[c] = wmu
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.watchers, c)
		t.mu.Unlock()
	}()
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			return
		}
	}
}

func (t *twin) page(w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	keys := make([]string, 0, len(t.kv))
	for k := range t.kv {
		keys = append(keys, k)
	}
	t.mu.Unlock()
	slices.Sort(keys)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, `<!doctype html><title>webkv twin</title>
<input id="key"><input id="value"><button id="set">set</button><button id="del">delete</button>
<ul id="keys">`)
	for _, k := range keys {
		io.WriteString(w, "<li>"+templateEscape(k)+"</li>")
	}
	io.WriteString(w, `</ul><script>
const ws = new WebSocket("ws://" + location.host + "/ws/watch");
</script>`)
}

func templateEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}
