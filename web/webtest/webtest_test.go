package webtest_test

import (
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
