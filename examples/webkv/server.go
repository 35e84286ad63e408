package main

// The server: shards, the store and the routes.
//
// Each key is owned by one shard (Server.owner): its value lives in that
// shard's store and is read and written only on that shard's loop. A
// request is handled on the loop of the shard whose listener accepted its
// connection; for a key owned elsewhere the handler calls the owner with
// shard.Invoke and answers when the reply comes back (the response is held
// with Later and finished with End), so the connection's loop goes on
// serving meanwhile. A change is announced to the watchers (/ws/watch) of
// every shard: the owner sends "put KEY" or "del KEY" to its own and hands
// the line to the other shards, in the order of the changes it made, and
// the change's response waits until every shard has sent it on. So a
// request that starts once another's response has come back makes a change
// that every watcher sees after the other's, as with one store behind a
// lock: the watchers see the changes in the order they were answered.
//
// Invariants: a store and its set of watchers are touched only by its
// shard's loop. The watchers are told in the order they joined, less the
// swaps of removals (a slice, never a map's random order), so that one
// run of a simulation sends the same bytes in the same order each time.
// The WebSockets need no set of their own for the shutdown:
// web.Server.Shutdown sends each one that websocket.Upgrade made a close
// frame with 1001 and waits for it.

import (
	"context"
	"crypto/tls"
	"hash/maphash"
	"html/template"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
	"github.com/spindle-rt/spindle/web"
	"github.com/spindle-rt/spindle/web/websocket"
)

// MaxValue is the largest value (a PUT's body) and the largest WebSocket
// message.
const MaxValue = 1 << 20

// Server is the webkv server over a shard group.
type Server struct {
	g    *shard.Group
	st   *shard.Sharded[store]
	web  *web.Server
	mux  *web.Mux
	hash func(key string) uint64 // spreads the keys over the shards
	ls   []*netio.Listener
	tls  []*netio.Listener
}

// store is one shard's part of the keys, and its watchers.
type store struct {
	i        int
	ex       *executor.Executor
	kv       map[string][]byte
	watchers []*websocket.Conn       // in the order told
	at       map[*websocket.Conn]int // each watcher's index in watchers
}

// NewServer starts n shards (n <= 0: one per core).
func NewServer(n int) *Server {
	g := shard.New(n, executor.WithName("webkv"))
	g.Start()
	seed := maphash.MakeSeed()
	return newServer(g, func(key string) uint64 { return maphash.String(seed, key) })
}

// newServer serves on g, whose loops run already or are run by the
// caller (a simulation steps them), with keys spread over its shards by
// hash.
func newServer(g *shard.Group, hash func(key string) uint64) *Server {
	s := &Server{g: g, hash: hash}
	s.st = shard.NewSharded(s.g, func(i int) *store {
		return &store{i: i, ex: s.g.Shard(i), kv: map[string][]byte{}, at: map[*websocket.Conn]int{}}
	})
	mux := web.NewMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("/kv/", s.kv)
	mux.HandleFunc("POST /echo", s.echo)
	mux.HandleFunc("GET /slow/{ms}", s.slow)
	mux.HandleFunc("GET /ws/echo", s.wsEcho)
	mux.HandleFunc("GET /ws/watch", s.wsWatch)
	s.web = &web.Server{Handler: mux, MaxBodyBytes: MaxValue}
	s.mux = mux
	return s
}

// ServeStatic serves the files of dir at /static/ (GET and HEAD) with
// web's file server: http.FileServer's answers (Range, conditional
// requests, index.html, directory redirects, no escape by ".."), the
// bodies sent by sendfile on plain TCP. Call it before Listen.
func (s *Server) ServeStatic(dir string) {
	s.mux.Handle("GET /static/", web.StripPrefix("/static", web.FileServer(http.Dir(dir))))
}

// Listen serves address with one listener per shard (SO_REUSEPORT).
func (s *Server) Listen(network, address string) error {
	ls, err := s.web.ServeGroup(s.g, network, address)
	if err != nil {
		return err
	}
	s.ls = ls
	return nil
}

// ListenTLS serves HTTPS (and WebSocket over TLS, wss://) on address
// with cfg beside the plain listener: one listener per shard, as Listen.
// Without NextProtos in cfg, ALPN offers http/1.1.
func (s *Server) ListenTLS(network, address string, cfg *tls.Config) error {
	cfg = cfg.Clone()
	if len(cfg.NextProtos) == 0 {
		cfg.NextProtos = []string{"http/1.1"}
	}
	ls, err := s.web.ServeGroup(s.g, network, address, netio.WithTLS(cfg))
	if err != nil {
		return err
	}
	s.tls = ls
	return nil
}

// TLSAddr returns the address ListenTLS serves, or nil.
func (s *Server) TLSAddr() net.Addr {
	if len(s.tls) == 0 {
		return nil
	}
	return s.tls[0].Addr()
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ls[0].Addr() }

// Shards returns the number of shards.
func (s *Server) Shards() int { return s.g.Len() }

// Shutdown stops accepting, answers the requests in flight, closes idle
// connections, sends every WebSocket a close frame with 1001 and waits
// for them to close, then stops the shards. Past ctx everything closes
// at once.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.web.Shutdown(ctx) // the WebSockets too: websocket.Upgrade registered them
	if err == nil {
		err = s.g.Shutdown(ctx)
	}
	if err != nil {
		s.g.Close()
	}
	return err
}

// Close closes everything at once.
func (s *Server) Close() error {
	s.web.Close()
	return s.g.Close()
}

func (s *Server) owner(key string) int {
	if s.g.Len() == 1 {
		return 0
	}
	return s.g.Of(s.hash(key))
}

// onOwner runs fn on the store of key's owner and calls done with its
// result on the handler's loop: at once when the key is local, after a
// cross-shard call otherwise (the response is held meanwhile).
func onOwner[R any](s *Server, w *web.ResponseWriter, key string, fn func(*store) R, done func(R)) {
	local := s.st.Local()
	to := s.owner(key)
	if to == local.i {
		done(fn(local))
		return
	}
	w.Later()
	shard.Invoke(s.st, to, func(st *store) (R, error) { return fn(st), nil }).OnComplete(later(w, done))
}

// later returns what ends a held response on the handler's loop: done with
// the result, or a 503 when the owner's shard could not be reached.
func later[R any](w *web.ResponseWriter, done func(R)) func(R, error) {
	return func(v R, err error) {
		if gone(w) {
			return
		}
		if err != nil {
			web.Error(w, "shard unavailable", http.StatusServiceUnavailable)
		} else {
			done(v)
		}
		w.End()
	}
}

// gone reports whether the loop of w's connection has closed: then a
// callback that was to finish w runs off it, on the goroutine that closed
// it (future's OnComplete), and must leave w alone: the connection went
// with its loop, and there is no one to answer.
func gone(w *web.ResponseWriter) bool { return !w.Executor().OnLoop() }

// change runs fn, which changes key's value and returns the line that
// announces it ("" for no change), on the store of key's owner, and calls
// done with its result on the handler's loop once every shard has sent the
// line to its watchers (announce): at once when the key is local and no
// other shard is told, with the response held until then otherwise.
func change[R any](s *Server, w *web.ResponseWriter, key string, fn func(*store) (R, string), done func(R)) {
	local := s.st.Local()
	to := s.owner(key)
	if to == local.i {
		v, line := fn(local)
		told := s.announce(local, line)
		if told == nil || plantedBugs.answerFirst {
			done(v)
			return
		}
		w.Later()
		told.OnComplete(func([]struct{}, error) { later(w, done)(v, nil) }) // this loop's future; an error is a closed shard: the change stands
		return
	}
	// The owner's announcement completes on the owner's loop; a promise of
	// the handler's brings the result back.
	w.Later()
	p := future.NewPromise[R](w.Executor())
	p.Future().OnComplete(later(w, done))
	shard.Invoke(s.st, to, func(st *store) (struct{}, error) {
		v, line := fn(st)
		if told := s.announce(st, line); told != nil && !plantedBugs.answerFirst {
			told.OnComplete(func([]struct{}, error) { p.Resolve(v) })
		} else {
			p.Resolve(v)
		}
		return struct{}{}, nil
	}).OnComplete(func(_ struct{}, err error) {
		if err != nil {
			p.Reject(err)
		}
	})
}

// kv serves /kv/{key}.
func (s *Server) kv(w *web.ResponseWriter, r *web.Request) {
	key := strings.TrimPrefix(r.Path(), "/kv/")
	switch m := r.Method(); m {
	case "GET", "HEAD":
		if key == "" {
			web.NotFound(w, r)
			return
		}
		onOwner(s, w, key, func(st *store) []byte { return st.kv[key] }, func(v []byte) {
			if v == nil {
				web.NotFound(w, r)
				return
			}
			h := w.Header()
			h.Set("Content-Type", "application/octet-stream")
			h.Set("Content-Length", strconv.Itoa(len(v)))
			if m == "GET" {
				w.Write(v)
			}
		})
	case "PUT":
		if key == "" {
			web.NotFound(w, r)
			return
		}
		v := append(make([]byte, 0, len(r.Body())), r.Body()...) // the body is the receive buffer
		key = strings.Clone(key)                                 // stored: a copy of its own does not keep the request's head
		change(s, w, key, func(st *store) (struct{}, string) { return struct{}{}, st.set(key, v) }, func(struct{}) {
			w.WriteHeader(http.StatusNoContent)
		})
	case "DELETE":
		if key == "" {
			web.NotFound(w, r)
			return
		}
		key = strings.Clone(key)
		change(s, w, key, func(st *store) (bool, string) { line := st.del(key); return line != "", line }, func(ok bool) {
			if !ok {
				web.NotFound(w, r)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
	default:
		w.Header().Set("Allow", "DELETE, GET, HEAD, PUT")
		web.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// set stores v under key and returns the line that announces it.
func (st *store) set(key string, v []byte) string {
	st.kv[key] = v
	return "put " + key
}

// del deletes key and returns the line that announces it, or "" if key
// was not there.
func (st *store) del(key string) string {
	if _, ok := st.kv[key]; !ok {
		return ""
	}
	delete(st.kv, key)
	return "del " + key
}

// announce sends line to the watchers of every shard, from st's, and
// returns a future of st's loop that completes once every other shard has
// sent it on (with an error if one has closed), or nil when line is empty
// (no change) or there is no other shard.
func (s *Server) announce(st *store, line string) *future.Future[[]struct{}] {
	if line == "" {
		return nil
	}
	st.tell(line)
	if s.g.Len() == 1 {
		return nil
	}
	fs := make([]*future.Future[struct{}], 0, s.g.Len()-1)
	n := s.g.Len()
	if plantedBugs.lastUntold {
		n--
	}
	for i := range n {
		if i != st.i {
			fs = append(fs, shard.Invoke(s.st, i, func(o *store) (struct{}, error) { o.tell(line); return struct{}{}, nil }))
		}
	}
	return future.All(fs...)
}

// plantedBugs are bugs a test plants to show that the simulation finds
// them (sim_test.go); nothing else sets them.
var plantedBugs struct {
	answerFirst bool // a change is answered before the other shards have sent its line on
	lastUntold  bool // announce skips the last shard: its watchers miss the other shards' changes
}

func (st *store) tell(line string) {
	for _, c := range st.watchers {
		c.WriteText(line)
	}
}

// watch adds c to the watchers.
func (st *store) watch(c *websocket.Conn) {
	st.at[c] = len(st.watchers)
	st.watchers = append(st.watchers, c)
}

// unwatch removes c from the watchers: the last takes its place.
func (st *store) unwatch(c *websocket.Conn) {
	i, ok := st.at[c]
	if !ok {
		return
	}
	last := len(st.watchers) - 1
	st.watchers[i] = st.watchers[last]
	st.at[st.watchers[i]] = i
	st.watchers[last] = nil
	st.watchers = st.watchers[:last]
	delete(st.at, c)
}

// echo serves POST /echo.
func (s *Server) echo(w *web.ResponseWriter, r *web.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(r.Body())))
	w.Write(r.Body())
}

// slow serves GET /slow/{ms} from a timer of the loop: the handler returns
// at once.
func (s *Server) slow(w *web.ResponseWriter, r *web.Request) {
	v := r.PathValue("ms")
	ms, err := strconv.Atoi(v)
	if err != nil || ms < 0 || ms > 10000 {
		web.Error(w, "ms must be an integer from 0 to 10000", http.StatusBadRequest)
		return
	}
	w.Later()
	body := "slept " + v
	w.Executor().AfterFunc(time.Duration(ms)*time.Millisecond, func() {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteString(body)
		w.End()
	})
}

// upgrade takes a WebSocket on the handler's shard. The web server's
// Shutdown closes it with 1001.
func upgrade(w *web.ResponseWriter, r *web.Request) *websocket.Conn {
	c, err := websocket.Upgrade(w, r, websocket.WithMaxMessageSize(MaxValue))
	if err != nil {
		return nil
	}
	return c
}

// wsEcho serves GET /ws/echo: every message comes back as it came.
func (s *Server) wsEcho(w *web.ResponseWriter, r *web.Request) {
	c := upgrade(w, r)
	if c == nil {
		return
	}
	c.Serve(func(c *websocket.Conn, m websocket.Message) {
		c.WriteMessage(m.Type, m.Data)
	}, nil)
}

// wsWatch serves GET /ws/watch: the changes of every shard, as text
// messages; what the client sends is dropped.
func (s *Server) wsWatch(w *web.ResponseWriter, r *web.Request) {
	c := upgrade(w, r)
	if c == nil {
		return
	}
	st := s.st.Local()
	st.watch(c)
	c.Serve(func(*websocket.Conn, websocket.Message) {}, func(error) { st.unwatch(c) })
}

// page serves GET /: the keys of every shard in the page. The handler's
// own shard is read at once and the others with one call each, so that
// every shard is read in the order of the connection's requests, as the
// changes are: a change pipelined after the page is not in it (the
// handlers of pipelined requests run before the responses before them
// have finished).
func (s *Server) page(w *web.ResponseWriter, r *web.Request) {
	local := s.st.Local()
	own := local.keys()
	if s.g.Len() == 1 {
		s.render(w, own)
		return
	}
	fs := make([]*future.Future[[]string], 0, s.g.Len()-1)
	for i := range s.g.Len() {
		if i != local.i {
			fs = append(fs, shard.Invoke(s.st, i, func(st *store) ([]string, error) { return st.keys(), nil }))
		}
	}
	w.Later()
	future.All(fs...).OnComplete(func(parts [][]string, err error) {
		if gone(w) {
			return
		}
		defer w.End()
		if err != nil {
			web.Error(w, "shard unavailable", http.StatusServiceUnavailable)
			return
		}
		s.render(w, slices.Concat(append(parts, own)...))
	})
}

// keys returns the store's keys.
func (st *store) keys() []string {
	keys := make([]string, 0, len(st.kv))
	for k := range st.kv {
		keys = append(keys, k)
	}
	return keys
}

// render writes the page of keys.
func (s *Server) render(w *web.ResponseWriter, keys []string) {
	slices.Sort(keys)
	var b strings.Builder
	if err := pageTmpl.Execute(&b, keys); err != nil {
		web.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteString(b.String())
}

var pageTmpl = template.Must(template.New("page").Parse(pageHTML))
