package webtest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/web"
	"github.com/spindle-rt/spindle/web/webtest"
)

func TestDo(t *testing.T) {
	mux := web.NewMux()
	mux.HandleFunc("GET /kv/{key}", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteString("value of " + r.PathValue("key"))
	})
	tests := []struct {
		method, target string
		code           int
		body           string
	}{
		{"GET", "/kv/a", 200, "value of a"},
		{"GET", "/kv/a%20b", 200, "value of a b"},
		{"HEAD", "/kv/a", 200, ""},
		{"PUT", "/kv/a", 405, "Method Not Allowed\n"},
		{"GET", "/other", 404, "404 page not found\n"},
		{"GET", "/kv/../kv/a", 307, ""},
	}
	for _, tt := range tests {
		rec := webtest.Do(mux, webtest.NewRequest(tt.method, tt.target, nil))
		if rec.Code != tt.code || tt.code != 307 && string(rec.Body) != tt.body {
			t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.target, rec.Code, rec.Body, tt.code, tt.body)
		}
	}
}

func TestServeLaterInOrder(t *testing.T) {
	// The first request answers from a timer, the second at once: the
	// responses still come in request order.
	mux := web.NewMux()
	mux.HandleFunc("GET /slow", func(w *web.ResponseWriter, r *web.Request) {
		w.Later()
		r.Executor().AfterFunc(10*time.Millisecond, func() {
			w.WriteString("slow")
			w.End()
		})
	})
	mux.HandleFunc("GET /fast", func(w *web.ResponseWriter, r *web.Request) { w.WriteString("fast") })
	raw := append(webtest.NewRequest("GET", "/slow", nil).Bytes(), webtest.NewRequest("GET", "/fast", nil).Bytes()...)
	recs, err := webtest.Serve(&web.Server{Handler: mux}, raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || string(recs[0].Body) != "slow" || string(recs[1].Body) != "fast" {
		t.Fatalf("responses: %+v", recs)
	}
}

// The handlers are served over a real connection: many pipelined requests
// (more bytes than the sockets' buffers hold, both ways) are all answered
// in order, a malformed request ends the connection after its 400, and
// Request.Conn, RemoteAddr and Hijack are a connection's.
func TestServeOverAConnection(t *testing.T) {
	mux := web.NewMux()
	mux.HandleFunc("GET /n/{i}", func(w *web.ResponseWriter, r *web.Request) {
		w.WriteString(r.PathValue("i") + strings.Repeat(".", 1000))
	})
	mux.HandleFunc("GET /conn", func(w *web.ResponseWriter, r *web.Request) {
		fmt.Fprintf(w, "%v %s", r.Conn() != nil, r.RemoteAddr().Network())
	})
	mux.HandleFunc("GET /hijack", func(w *web.ResponseWriter, r *web.Request) {
		c, _, err := w.Hijack()
		if err != nil {
			t.Errorf("Hijack: %v", err)
			return
		}
		c.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nhijack!")
		c.Close()
	})
	var many []byte
	const n = 2000
	for i := range n {
		many = append(many, webtest.NewRequest("GET", fmt.Sprintf("/n/%d", i), nil).Bytes()...)
	}
	for _, tc := range []struct {
		name   string
		raw    []byte
		bodies []string
	}{
		{"conn", webtest.NewRequest("GET", "/conn", nil).Bytes(), []string{"true tcp"}},
		{"hijack", webtest.NewRequest("GET", "/hijack", nil).Bytes(), []string{"hijack!"}},
		{"malformed", []byte("GET /n/1 HTTP/1.1\r\nHost x\r\n\r\n" + string(webtest.NewRequest("GET", "/n/2", nil).Bytes())), []string{"400 Bad Request: malformed header line"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := webtest.Serve(&web.Server{Handler: mux}, tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, strings.TrimSpace(string(r.Body)))
			}
			if !slices.Equal(got, tc.bodies) {
				t.Errorf("bodies %q, want %q", got, tc.bodies)
			}
		})
	}
	recs, err := webtest.Serve(&web.Server{Handler: mux}, many)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("%d responses to %d requests", len(recs), n)
	}
	for i, r := range recs {
		if want := fmt.Sprintf("%d%s", i, strings.Repeat(".", 1000)); string(r.Body) != want {
			t.Fatalf("response %d: %.20q..., want %.20q...", i, r.Body, want)
		}
	}
}
