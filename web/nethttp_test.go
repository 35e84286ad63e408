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
