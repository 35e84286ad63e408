// Command webkv is a key-value store served over HTTP/1.1 and WebSocket
// on spindle's web server: one shard per core, each key owned by one
// shard, every connection served by a loop itself (no goroutine per
// connection).
//
//	go run ./examples/webkv -addr 127.0.0.1:8080
//	curl -X PUT --data-binary hello http://127.0.0.1:8080/kv/greeting
//	curl http://127.0.0.1:8080/kv/greeting
//
// With -tls-addr, -tls-cert-file and -tls-key-file (PEM files) it also
// serves HTTPS, and wss:// for the WebSocket routes, on another address:
//
//	go run ./examples/webkv -tls-addr 127.0.0.1:8443 -tls-cert-file cert.pem -tls-key-file key.pem
//	curl --cacert ca.pem https://localhost:8443/kv/greeting
//
// Routes:
//
//	GET /                 a page that lists the keys, sets and deletes them, and shows changes live
//	GET, HEAD /kv/{key}   the value (application/octet-stream), or 404
//	PUT /kv/{key}         the body (at most 1 MiB, else 413) becomes the value: 204
//	DELETE /kv/{key}      204, or 404
//	POST /echo            the request body back
//	GET /slow/{ms}        "slept {ms}" after {ms} milliseconds (0-10000), from a loop timer
//	GET /ws/echo          WebSocket echo of text and binary messages up to 1 MiB
//	GET /ws/watch         WebSocket: "put KEY" or "del KEY" for every change, on any shard
//	GET, HEAD /static/... with -static DIR: the files of DIR, with http.FileServer's answers
//	                      (Range, conditional requests, index.html, directory redirects,
//	                      no escape by ".."), bodies by sendfile on plain TCP; without it, 404
//
// {key} is the escaped path after /kv/ (the query is ignored). SIGINT and
// SIGTERM shut it down gracefully: requests in flight are answered, idle
// connections close, WebSockets get a close frame with 1001.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	shards := flag.Int("shards", 0, "number of shards (0: one per core, GOMAXPROCS)")
	tlsAddr := flag.String("tls-addr", "", "also serve HTTPS on this address (needs -tls-cert-file and -tls-key-file)")
	tlsCert := flag.String("tls-cert-file", "", "the HTTPS listener's certificate chain (PEM)")
	tlsKey := flag.String("tls-key-file", "", "the HTTPS listener's private key (PEM)")
	static := flag.String("static", "", "serve the files of this directory at /static/")
	flag.Parse()

	s := NewServer(*shards)
	if *static != "" {
		if fi, err := os.Stat(*static); err != nil || !fi.IsDir() {
			s.Close()
			log.Fatalf("webkv: -static %s: not a directory", *static)
		}
		s.ServeStatic(*static)
	}
	if err := s.Listen("tcp", *addr); err != nil {
		s.Close()
		log.Fatal(err)
	}
	log.Printf("listening on http://%s with %d shards", s.Addr(), s.Shards())
	if *tlsAddr != "" || *tlsCert != "" || *tlsKey != "" {
		if err := listenTLS(s, *tlsAddr, *tlsCert, *tlsKey); err != nil {
			s.Close()
			log.Fatal(err)
		}
		log.Printf("listening on https://%s", s.TLSAddr())
	}

	stop, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	<-stop.Done()
	ctx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	if err := s.Shutdown(ctx); err != nil {
		log.Print(err)
	}
}

// listenTLS serves HTTPS on addr with the certificate and key in
// certFile and keyFile.
func listenTLS(s *Server, addr, certFile, keyFile string) error {
	if addr == "" || certFile == "" || keyFile == "" {
		return errors.New("webkv: -tls-addr, -tls-cert-file and -tls-key-file go together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	return s.ListenTLS("tcp", addr, &tls.Config{Certificates: []tls.Certificate{cert}})
}
