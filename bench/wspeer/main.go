// Command wspeer is the gorilla/websocket side of BenchmarkWeb's ws_echo
// and ws_idle cases: net/http with gorilla/websocket's Upgrader serving a
// WebSocket echo on GET /ws/echo, in a module of its own so that the
// library's go.mod never names gorilla. ./bench builds and starts it, and
// speaks to it over stdin and stdout as it does to its own spindle server
// (bench/wscase): it prints "addr HOST:PORT", then answers each "stats"
// line with "ok MALLOCS LIVE" (the process's allocations so far, and its
// live heap and goroutine stacks after collecting), and exits at EOF.
package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/gorilla/websocket"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	up := websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws/echo", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadLimit(1 << 20)
		for {
			t, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(t, p); err != nil {
				return
			}
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Println("addr", ln.Addr())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "stats" {
			fmt.Println(stats())
		}
	}
}

func stats() string {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return fmt.Sprintf("ok %d %d", mallocs, ms.HeapAlloc+ms.StackInuse)
}
