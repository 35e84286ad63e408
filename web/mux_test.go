package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spindle-rt/spindle/web"
	"github.com/spindle-rt/spindle/web/webtest"
)

// TestMuxAgainstServeMux registers the same patterns on a Mux and on
// net/http's ServeMux and checks that every request goes to the same
// pattern, with the same wildcard values, or gets the same 404, 405
// (Allow) or redirect (Location).
func TestMuxAgainstServeMux(t *testing.T) {
	patterns := []string{
		"/",
		"GET /{$}",
		"GET /kv/{key}",
		"PUT /kv/{key}",
		"GET /kv/special",
		"GET /files/{rest...}",
		"GET /files/readme",
		"/dir/",
		"POST /dir/{x}/new",
		"GET /a/{x}/c",
		"GET /a/b/{y}/d",
		"GET /exact/{$}",
		"DELETE /only/delete",
		"GET example.com/host",
		"/esc%2Fslash",
	}
	mux := web.NewMux()
	std := http.NewServeMux()
	for _, p := range patterns {
		mux.HandleFunc(p, func(w *web.ResponseWriter, r *web.Request) {
			w.WriteString(p + "|" + r.PathValue("key") + r.PathValue("rest") + r.PathValue("x") + r.PathValue("y"))
		})
		std.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(p + "|" + r.PathValue("key") + r.PathValue("rest") + r.PathValue("x") + r.PathValue("y")))
		})
	}
	requests := []string{
		"GET /", "POST /", "GET /kv/a", "HEAD /kv/a", "PUT /kv/a", "DELETE /kv/a", "GET /kv/special",
		"GET /kv/", "GET /kv", "GET /kv/a/b", "GET /files/", "GET /files/a/b/c", "GET /files/readme",
		"GET /files/readme/x", "GET /files", "GET /dir", "GET /dir/", "PATCH /dir/anything/deep",
		"POST /dir/q/new", "GET /dir/q/new", "GET /a/b/c", "GET /a/z/c", "GET /a/b/z", "GET /a/b/z/d", "GET /exact/",
		"GET /exact/x", "GET /exact", "GET /only/delete", "DELETE /only/delete", "GET /host",
		"GET /kv/a%20b", "GET /kv/a%2Fb", "GET /esc%2Fslash", "GET /esc/slash", "GET /kv/../files/x",
		"GET //kv/a", "GET /kv/./a", "GET /kv/a?x=1", "GET /dir?q=1", "OPTIONS /kv/a", "GET /a/b/c/",
	}
	for _, rq := range requests {
		method, target, _ := strings.Cut(rq, " ")
		rec := webtest.Do(mux, webtest.NewRequest(method, target, nil))
		sr := httptest.NewRequest(method, target, nil)
		sw := httptest.NewRecorder()
		std.ServeHTTP(sw, sr)
		want := sw.Result()
		got := rq + ": " + itoa(rec.Code) + " " + rec.Header.Get("Allow") + " " + rec.Header.Get("Location")
		exp := rq + ": " + itoa(want.StatusCode) + " " + want.Header.Get("Allow") + " " + want.Header.Get("Location")
		if method != "HEAD" {
			got += " " + string(rec.Body)
			exp += " " + sw.Body.String()
		}
		if got != exp {
			t.Errorf("\n web:      %s\n net/http: %s", got, exp)
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestMuxBadPatterns(t *testing.T) {
	for _, p := range []string{"", "GET", "GET kv", "/a/{x", "/a/x{y}", "/{a...}/b", "/{a}/{a}", "/{1x}", "/{$}/x", "G(T /"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("pattern %q: no panic", p)
				}
			}()
			web.NewMux().HandleFunc(p, func(*web.ResponseWriter, *web.Request) {})
		}()
	}
	m := web.NewMux()
	m.HandleFunc("GET /a/{x}", func(*web.ResponseWriter, *web.Request) {})
	defer func() {
		if recover() == nil {
			t.Error("duplicate pattern: no panic")
		}
	}()
	m.HandleFunc("GET /a/{y}", func(*web.ResponseWriter, *web.Request) {})
}
