// Command echoload measures netio's system calls per request from outside
// the server's process: run the server with -serve, trace it, and drive it
// with -load from another process, so the count is the server's alone.
//
//	go build -o /tmp/echoload ./netio/internal/echoload
//	/tmp/echoload -serve 127.0.0.1:7007 & pid=$!
//	strace -f -c -p $pid -o /tmp/strace.txt & spid=$!
//	/tmp/echoload -load 127.0.0.1:7007 -clients 64 -depth 16 -rounds 200
//	kill -INT $spid; kill $pid; cat /tmp/strace.txt
//
// The server is netio's Echo benchmark's (package echotask).
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/netio/internal/echotask"
)

func main() {
	serve := flag.String("serve", "", "serve echo on this address")
	load := flag.String("load", "", "drive the echo server at this address")
	clients := flag.Int("clients", 64, "connections (-load)")
	depth := flag.Int("depth", 1, "64-byte requests per write (-load)")
	rounds := flag.Int("rounds", 1000, "writes per connection (-load)")
	flag.Parse()
	switch {
	case *serve != "":
		runServer(*serve)
	case *load != "":
		runLoad(*load, *clients, *depth, *rounds)
	default:
		flag.Usage()
		os.Exit(2)
	}
}

func runServer(addr string) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	l, err := netio.Listen(ex, "tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	echotask.Serve(l)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
}

func runLoad(addr string, clients, depth, rounds int) {
	req := make([]byte, 64*depth)
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			log.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer nc.Close()
			buf := make([]byte, len(req))
			for range rounds {
				if _, err := nc.Write(req); err != nil {
					log.Fatal(err)
				}
				if _, err := io.ReadFull(nc, buf); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	n := clients * depth * rounds
	d := time.Since(start)
	fmt.Printf("%d requests in %v: %.0f ns/req\n", n, d, float64(d.Nanoseconds())/float64(n))
}
