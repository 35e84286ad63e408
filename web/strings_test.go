package web_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/web"
)

// kept is what a handler kept of one request: every string it was given.
type kept struct {
	method, target, path, rawQuery, host string
	key, rest, q, n                      string
	id, cookie, trailer                  string
	multi, fields                        []string
}

// keptRequest is what request i sends, and so what its handler must have
// kept: a GET with a path, wildcards (one escaped), a query and headers,
// or, one in five, a chunked POST with a trailer.
func keptRequest(i int) (raw string, want kept) {
	want = kept{
		host:   fmt.Sprintf("h%d.example", i%7),
		key:    fmt.Sprintf("k%d", i),
		id:     fmt.Sprintf("id-%d", i),
		cookie: fmt.Sprintf("c=v%d", i),
	}
	want.fields = []string{"Host: " + want.host, "X-Id: " + want.id}
	if i%5 == 4 {
		want.method = "POST"
		want.path = "/c/" + want.key
		want.target = want.path
		want.trailer = fmt.Sprintf("t%d", i)
		want.fields = append(want.fields, "Transfer-Encoding: chunked", "Cookie: "+want.cookie)
		raw = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nX-Id: %s\r\nTransfer-Encoding: chunked\r\nCookie: %s\r\n\r\n"+
			"3\r\nb%02d\r\n0\r\nX-T: %s\r\n\r\n", want.target, want.host, want.id, want.cookie, i%100, want.trailer)
		return raw, want
	}
	want.method = "GET"
	want.rest = fmt.Sprintf("r%d/t %d", i, i)
	want.path = fmt.Sprintf("/s/%s/r%d/t%%20%d", want.key, i, i)
	want.q, want.n = fmt.Sprintf("q%d", i), fmt.Sprint(i)
	want.rawQuery = "q=" + want.q + "&n=" + want.n
	want.target = want.path + "?" + want.rawQuery
	want.multi = []string{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)}
	want.fields = append(want.fields, "X-Multi: "+want.multi[0], "Cookie: "+want.cookie, "x-multi: "+want.multi[1])
	raw = fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nX-Id: %s\r\nX-Multi: %s\r\nCookie: %s\r\nx-multi: %s\r\n\r\n",
		want.target, want.host, want.id, want.multi[0], want.cookie, want.multi[1])
	return raw, want
}

// TestStringsKept keeps every string the handlers of 10,000 requests are
// given, in a map keyed by a path value (as a counter keyed by r.PathValue
// would), and checks every one once all are served. The requests come
// over loopback connections, keep-alive and pipelined, so the server's
// receive buffers are reused many times meanwhile: a string that was a
// view of one would read other bytes by then, and a map key that changed
// under the map would no longer be found.
func TestStringsKept(t *testing.T) {
	const total = 10_000
	m := map[string]kept{}
	counts := map[string]int{}
	record := func(r *web.Request) kept {
		k := kept{method: r.Method(), target: r.Target(), path: r.Path(), rawQuery: r.RawQuery(), host: r.Host(),
			key: r.PathValue("key"), rest: r.PathValue("rest"), q: r.Query().Get("q"), n: r.Query().Get("n"),
			id: r.Header("x-id"), cookie: r.Header("Cookie"), multi: r.HeaderValues("X-Multi")}
		for name, v := range r.Headers() {
			k.fields = append(k.fields, name+": "+v)
		}
		return k
	}
	mux := web.NewMux()
	mux.HandleFunc("GET /s/{key}/{rest...}", func(w *web.ResponseWriter, r *web.Request) {
		m[r.PathValue("key")] = record(r)
		counts[r.PathValue("key")]++
		w.WriteString(r.PathValue("key"))
	})
	mux.HandleFunc("POST /c/{key}", func(w *web.ResponseWriter, r *web.Request) {
		k := record(r)
		k.trailer = r.Trailer("x-t")
		m[r.PathValue("key")] = k
		counts[r.PathValue("key")]++
		w.WriteString(r.PathValue("key"))
	})
	addr, ex := serve(t, &web.Server{Handler: mux})

	// Four connections: one keep-alive (a request at a time), three
	// pipelined (16 at a time, in one write).
	const conns = 4
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for ci := range conns {
		depth := 16
		if ci == 0 {
			depth = 1
		}
		c := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- keepClient(c, ci, conns, total, depth)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	// What the handlers kept, taken on the loop.
	type state struct {
		m      map[string]kept
		counts map[string]int
	}
	got, err := future.Do(context.Background(), ex, func() (state, error) { return state{m, counts}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(got.m) != total || len(got.counts) != total {
		t.Fatalf("%d requests kept, %d counted; want %d", len(got.m), len(got.counts), total)
	}
	bad := 0
	for i := range total {
		_, want := keptRequest(i)
		k, ok := got.m[want.key]
		switch {
		case !ok:
			t.Errorf("request %d: no entry for key %q", i, want.key)
		case !keptEqual(k, want):
			t.Errorf("request %d: kept\n %+v\nwant\n %+v", i, k, want)
		case got.counts[want.key] != 1:
			t.Errorf("request %d: count %d for key %q, want 1", i, got.counts[want.key], want.key)
		default:
			continue
		}
		if bad++; bad == 10 {
			t.Fatal("10 requests read other strings than they were given; not looking further")
		}
	}
}

func keptEqual(a, b kept) bool {
	return a.method == b.method && a.target == b.target && a.path == b.path && a.rawQuery == b.rawQuery &&
		a.host == b.host && a.key == b.key && a.rest == b.rest && a.q == b.q && a.n == b.n && a.id == b.id &&
		a.cookie == b.cookie && a.trailer == b.trailer && slices.Equal(a.multi, b.multi) && slices.Equal(a.fields, b.fields)
}

// keepClient sends requests ci, ci+step, ... below total on c, depth at a
// time, and reads their responses.
func keepClient(c net.Conn, ci, step, total, depth int) error {
	br := bufio.NewReader(c)
	var batch []int
	for i := ci; i < total; i += step {
		batch = append(batch, i)
		if len(batch) < depth && i+step < total {
			continue
		}
		var raw strings.Builder
		for _, j := range batch {
			r, _ := keptRequest(j)
			raw.WriteString(r)
		}
		if _, err := io.WriteString(c, raw.String()); err != nil {
			return err
		}
		for _, j := range batch {
			resp, err := readKeptResponse(br)
			if err != nil {
				return fmt.Errorf("request %d: %v", j, err)
			}
			if want := fmt.Sprintf("k%d", j); resp != want {
				return fmt.Errorf("request %d: response %q, want %q", j, resp, want)
			}
		}
		batch = batch[:0]
	}
	return nil
}

// readKeptResponse reads a response and returns its body.
func readKeptResponse(br *bufio.Reader) (string, error) {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("status %d (%q)", resp.StatusCode, b)
	}
	return string(b), err
}
