// Command redis is a Redis-compatible server (RESP2) on spindle: one shard
// per core, each key owned by one shard, connections served by the loops
// themselves through netio.
//
//	go run ./examples/redis -addr 127.0.0.1:6380
//	redis-cli -p 6380 set greeting hello
//	redis-benchmark -p 6380 -t set,get -P 16 -r 1000000
//
// See README.md for the commands it knows, the limits and how it compares
// with redis-server.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spindle-rt/spindle/netio"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "listen address")
	shards := flag.Int("shards", 0, "number of shards (0: GOMAXPROCS)")
	maxBulk := flag.Int64("proto-max-bulk-len", DefaultMaxBulk, "longest argument, in bytes")
	highWater := flag.Int("client-output-high-water", DefaultOutputHighWater, "unsent reply bytes past which a connection's requests wait until its output drains (backpressure)")
	outLimit := flag.Int("client-output-buffer-limit", 0, "unsent reply bytes past which a connection is closed (0: none, as Redis's normal clients)")
	outTimeout := flag.Duration("client-output-timeout", DefaultOutputTimeout, "close a connection whose peer takes none of its replies for this long, whether they wait in the server or in the kernel (negative: never)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to this file until shutdown")
	debugAddr := flag.String("debug", "", "serve net/http/pprof on this address (for example 127.0.0.1:6060)")
	tlsAddr := flag.String("tls-addr", "", "also serve TLS on this address (as redis-server's --tls-port; needs -tls-cert-file and -tls-key-file)")
	tlsCert := flag.String("tls-cert-file", "", "the TLS listener's certificate chain (PEM)")
	tlsKey := flag.String("tls-key-file", "", "the TLS listener's private key (PEM)")
	appendOnly := flag.String("appendonly", "no", "keep every write in an append-only file, replayed at start (yes or no)")
	appendFsync := flag.String("appendfsync", FsyncEverySec, "when the append-only file is synced: always (a write is answered once on disk), everysec or no")
	dir := flag.String("dir", ".", "the directory of the append-only file")
	appendFilename := flag.String("appendfilename", DefaultAppendFilename, "the append-only file's name in -dir")
	aofIO := flag.String("aofio", AOFIOThread, "how the append-only file is written and synced: thread (a goroutine of its own, with package os) or loop (package fileio, from the first shard's loop)")
	flag.Parse()

	if *appendOnly != "yes" && *appendOnly != "no" {
		log.Fatalf("-appendonly %q: yes or no", *appendOnly)
	}
	switch *appendFsync {
	case FsyncAlways, FsyncEverySec, FsyncNo:
	default:
		log.Fatalf("-appendfsync %q: always, everysec or no", *appendFsync)
	}
	if *aofIO != AOFIOThread && *aofIO != AOFIOLoop {
		log.Fatalf("-aofio %q: thread or loop", *aofIO)
	}
	if *appendFilename == "" || strings.ContainsAny(*appendFilename, `/\`) {
		log.Fatalf("-appendfilename %q: a file name, without a directory", *appendFilename)
	}

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if *debugAddr != "" {
		go func() { log.Print(http.ListenAndServe(*debugAddr, nil)) }()
	}

	s := NewServer(Config{
		Shards:          *shards,
		MaxBulk:         *maxBulk,
		OutputHighWater: *highWater,
		OutputLimit:     *outLimit,
		OutputTimeout:   *outTimeout,
		AppendOnly:      *appendOnly == "yes",
		AppendFsync:     *appendFsync,
		Dir:             *dir,
		AppendFilename:  *appendFilename,
		AOFIO:           *aofIO,
	})
	if err := s.Listen("tcp", *addr); err != nil {
		s.Close()
		log.Fatal(err)
	}
	log.Printf("listening on %s with %d shards", s.Addr(), s.g.Len())
	if *tlsAddr != "" || *tlsCert != "" || *tlsKey != "" {
		a, err := listenTLS(s, *tlsAddr, *tlsCert, *tlsKey)
		if err != nil {
			s.Close()
			log.Fatal(err)
		}
		log.Printf("serving TLS on %s", a)
	}

	stop, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	<-stop.Done()
	// Stop accepting, answer every request read, let the replies reach the
	// clients, then close the shards; past the deadline everything closes
	// at once.
	ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if err := s.Shutdown(ctx); err != nil {
		log.Print(err)
	}
}

// listenTLS serves TLS on addr beside the plain listener, with the
// certificate and key in certFile and keyFile: one listener per shard,
// as the plain one. It returns the address served.
func listenTLS(s *Server, addr, certFile, keyFile string) (net.Addr, error) {
	if addr == "" || certFile == "" || keyFile == "" {
		return nil, errors.New("redis: -tls-addr, -tls-cert-file and -tls-key-file go together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	ls, err := netio.ListenGroup(s.g, "tcp", addr, netio.WithTLS(cfg))
	if err != nil {
		return nil, err
	}
	s.Serve(ls...)
	return ls[0].Addr(), nil
}
