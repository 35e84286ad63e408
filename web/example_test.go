package web_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
)

// get makes one GET request and prints its status and body.
func get(client *http.Client, url string) {
	resp, err := client.Get(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(b))
}

// A server on one loop: the handlers run on it, so the state they share
// (count) needs no lock.
func Example() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	count := 0
	mux := web.NewMux()
	mux.HandleFunc("GET /hello/{name}", func(w *web.ResponseWriter, r *web.Request) {
		count++
		fmt.Fprintf(w, "hello, %s (%d)", r.PathValue("name"), count)
	})
	srv := &web.Server{Handler: mux}
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv.Serve(l)
	defer srv.Close()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	base := "http://" + l.Addr().String()
	get(client, base+"/hello/gopher")
	get(client, base+"/hello/loop")
	get(client, base+"/bye")
	// Output:
	// 200 hello, gopher (1)
	// 200 hello, loop (2)
	// 404 404 page not found
}

// A handler that answers later, from a loop timer: it returns at once and
// the loop goes on serving; End finishes the response.
func ExampleResponseWriter_Later() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	mux := web.NewMux()
	mux.HandleFunc("GET /slow/{ms}", func(w *web.ResponseWriter, r *web.Request) {
		var ms int
		if _, err := fmt.Sscan(r.PathValue("ms"), &ms); err != nil || ms < 0 || ms > 10000 {
			web.Error(w, "bad duration", http.StatusBadRequest)
			return
		}
		msg := "slept " + r.PathValue("ms") // copied: r is not used after End
		w.Later()
		r.Executor().AfterFunc(time.Duration(ms)*time.Millisecond, func() {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteString(msg)
			w.End()
		})
	})
	srv := &web.Server{Handler: mux}
	l, _ := netio.Listen(ex, "tcp", "127.0.0.1:0")
	srv.Serve(l)
	defer srv.Close()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	get(&http.Client{Transport: tr}, "http://"+l.Addr().String()+"/slow/20")
	// Output:
	// 200 slept 20
}

// Moving from net/http route by route: the loop serves /fast, and an
// http.Handler written for net/http keeps /legacy, on a goroutine of its
// own.
func ExampleMux_Mount() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	mux := web.NewMux()
	mux.HandleFunc("GET /fast", func(w *web.ResponseWriter, r *web.Request) { w.WriteString("from the loop") })
	mux.Mount("POST /legacy/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "net/http got %s for %s", body, r.PathValue("id"))
	}))
	srv := &web.Server{Handler: mux}
	l, _ := netio.Listen(ex, "tcp", "127.0.0.1:0")
	srv.Serve(l)
	defer srv.Close()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	base := "http://" + l.Addr().String()
	get(client, base+"/fast")
	resp, err := client.Post(base+"/legacy/7", "text/plain", strings.NewReader("data"))
	if err != nil {
		panic(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(b))
	// Output:
	// 200 from the loop
	// 200 net/http got data for 7
}

// Taking a connection over after an upgrade: the handler answers 101 and
// then owns the connection; here it echoes lines in upper case.
func ExampleResponseWriter_Hijack() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	mux := web.NewMux()
	mux.HandleFunc("GET /upper", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "upper")
		w.WriteHeader(http.StatusSwitchingProtocols)
		c, buffered, err := w.Hijack()
		if err != nil {
			return
		}
		c.Write([]byte(strings.ToUpper(string(buffered))))
		var next func([]byte, error)
		next = func(b []byte, err error) {
			if err != nil {
				c.Close()
				return
			}
			c.Write([]byte(strings.ToUpper(string(b))))
			c.Recv().OnComplete(next)
		}
		c.Recv().OnComplete(next)
	})
	srv := &web.Server{Handler: mux}
	l, _ := netio.Listen(ex, "tcp", "127.0.0.1:0")
	srv.Serve(l)
	defer srv.Close()

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /upper HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: upper\r\n\r\nhello\n")
	br := bufio.NewReader(c)
	resp, _ := http.ReadResponse(br, nil)
	fmt.Println(resp.Status)
	line, _ := br.ReadString('\n')
	fmt.Print(line)
	io.WriteString(c, "world\n")
	line, _ = br.ReadString('\n')
	fmt.Print(line)
	// Output:
	// 101 Switching Protocols
	// HELLO
	// WORLD
}

// The owner of a hijacked connection hears of the server's Shutdown, on
// the connection's loop, and Shutdown waits until it is done with it.
func ExampleResponseWriter_OnShutdown() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	mux := web.NewMux()
	mux.HandleFunc("GET /lines", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "lines")
		w.WriteHeader(http.StatusSwitchingProtocols)
		var c *netio.Conn
		var stop func() bool
		stop = w.OnShutdown(func() { // before Hijack
			c.Write([]byte("bye\n"))
			c.Close() // what was written still leaves
			stop()    // done with c: Shutdown need not wait for it
		})
		c, _, err := w.Hijack()
		if err != nil {
			stop()
			return
		}
		c.Write([]byte("hello\n"))
		c.Done().OnComplete(func(error, error) { stop() }) // ended before the shutdown
	})
	srv := &web.Server{Handler: mux}
	l, _ := netio.Listen(ex, "tcp", "127.0.0.1:0")
	srv.Serve(l)

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /lines HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: lines\r\n\r\n")
	br := bufio.NewReader(c)
	http.ReadResponse(br, nil)
	line, _ := br.ReadString('\n')
	fmt.Print(line)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("Shutdown:", srv.Shutdown(ctx))
	line, _ = br.ReadString('\n')
	fmt.Print(line)
	// Output:
	// hello
	// Shutdown: <nil>
	// bye
}

// Shutdown lets the requests in flight finish, closes idle connections
// and refuses new ones.
func ExampleServer_Shutdown() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	srv := &web.Server{Handler: web.HandlerFunc(func(w *web.ResponseWriter, r *web.Request) { w.WriteString("ok") })}
	l, _ := netio.Listen(ex, "tcp", "127.0.0.1:0")
	srv.Serve(l)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println(srv.Shutdown(ctx))
	fmt.Println(srv.Serve(l))
	// Output:
	// <nil>
	// web: Server closed
}
