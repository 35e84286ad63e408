package web_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spindle-rt/spindle/web"
)

// TestMount serves one route with an http.Handler beside loop routes:
// responses keep request order, the body and path values reach it, and a
// long response streams back.
func TestMount(t *testing.T) {
	mux := web.NewMux()
	mux.HandleFunc("GET /loop", func(w *web.ResponseWriter, r *web.Request) { w.WriteString("loop") })
	mux.Mount("POST /std/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Name", r.PathValue("name"))
		fmt.Fprintf(w, "%s got %s", r.PathValue("name"), b)
	}))
	mux.Mount("GET /big", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 1000 {
			fmt.Fprintf(w, "%04d %s\n", i, strings.Repeat("x", 95))
		}
	}))
	addr, _ := serve(t, &web.Server{Handler: mux})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	io.WriteString(c, "POST /std/ann HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"+
		"GET /loop HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /big HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /loop HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, b := readResponse(t, br, "POST")
	if string(b) != "ann got abc" || resp.Header.Get("X-Name") != "ann" {
		t.Fatalf("std: %q %v", b, resp.Header)
	}
	if _, b := readResponse(t, br, "GET"); string(b) != "loop" {
		t.Fatalf("loop: %q", b)
	}
	resp, b = readResponse(t, br, "GET")
	if len(b) != 101*1000 || !strings.HasPrefix(string(b), "0000 x") || len(resp.TransferEncoding) == 0 {
		t.Fatalf("big: %d bytes, TE %v", len(b), resp.TransferEncoding)
	}
	if _, b := readResponse(t, br, "GET"); string(b) != "loop" {
		t.Fatalf("loop 2: %q", b)
	}
}

// TestMountStreamsBody: a mounted handler reads the start of its body
// before the client has sent the rest; a request pipelined after the body
// is served after it.
func TestMountStreamsBody(t *testing.T) {
	gotStart := make(chan string, 1)
	mux := web.NewMux()
	mux.HandleFunc("GET /loop", func(w *web.ResponseWriter, r *web.Request) { w.WriteString("loop") })
	mux.Mount("PUT /up", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := make([]byte, 5)
		if _, err := io.ReadFull(r.Body, start); err != nil {
			t.Errorf("start: %v", err)
			return
		}
		gotStart <- string(start)
		rest, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("rest: %v", err)
		}
		fmt.Fprintf(w, "%s+%d", start, len(rest))
	}))
	addr, _ := serve(t, &web.Server{Handler: mux})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	const total = 300000
	io.WriteString(c, fmt.Sprintf("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\nhello", total))
	if s := <-gotStart; s != "hello" {
		t.Fatalf("start %q", s)
	}
	io.WriteString(c, strings.Repeat("z", total-5)+"GET /loop HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, b := readResponse(t, br, "PUT"); string(b) != fmt.Sprintf("hello+%d", total-5) {
		t.Fatalf("streamed: %q", b)
	}
	if _, b := readResponse(t, br, "GET"); string(b) != "loop" {
		t.Fatalf("after: %q", b)
	}
}

// TestMountStopsEarly: a mounted handler that answers without reading its
// body: the response comes, and the connection closes (the rest of the
// body cannot be told from a request).
func TestMountStopsEarly(t *testing.T) {
	mux := web.NewMux()
	mux.Mount("PUT /up", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no thanks", http.StatusForbidden)
	}))
	addr, _ := serve(t, &web.Server{Handler: mux})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	io.WriteString(c, "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc")
	resp, _ := readResponse(t, br, "PUT")
	if resp.StatusCode != 403 || !resp.Close {
		t.Fatalf("status %d close=%v", resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after: %v, want EOF", err)
	}
}
