package web_test

import (
	"bufio"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/web"
)

// pipeRig is a server whose handler logs, on the loop, when each handler
// starts ("PUT /b") and when a response held with Later ends ("end GET
// /a"). A request whose path begins with /later is held: the handler
// calls Later and hands w to the test, which ends it; its body is then
// the log as it was just before the end, what a handler that reads at
// that moment sees.
type pipeRig struct {
	srv  *web.Server
	ex   *executor.Executor
	addr string
	log  []string      // loop only
	held chan heldResp // the held responses, in the order their handlers started
}

// heldResp is a response held with Later, and its request's "METHOD path".
type heldResp struct {
	w    *web.ResponseWriter
	name string
}

func newPipeRig(t *testing.T) *pipeRig {
	p := &pipeRig{held: make(chan heldResp, 16)}
	p.srv = &web.Server{Handler: web.HandlerFunc(func(w *web.ResponseWriter, r *web.Request) {
		name := r.Method() + " " + r.Path()
		p.log = append(p.log, name)
		if !strings.HasPrefix(r.Path(), "/later") {
			w.WriteString(r.Path())
			return
		}
		w.Later()
		p.held <- heldResp{w, name}
	})}
	p.addr, p.ex = serve(t, p.srv)
	return p
}

// onLoop runs fn on the loop and returns once it has run.
func (p *pipeRig) onLoop(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	if err := p.ex.Submit(func() { fn(); close(done) }); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	<-done
}

// events returns a copy of the log.
func (p *pipeRig) events(t *testing.T) []string {
	t.Helper()
	var got []string
	p.onLoop(t, func() { got = slices.Clone(p.log) })
	return got
}

// nextHeld waits for the next held response's handler to have started.
func (p *pipeRig) nextHeld(t *testing.T) heldResp {
	t.Helper()
	select {
	case h := <-p.held:
		return h
	case <-time.After(20 * time.Second):
		t.Fatal("no held request started")
		return heldResp{}
	}
}

// end finishes a held response, its body the log before its end.
func (p *pipeRig) end(t *testing.T, h heldResp) {
	t.Helper()
	p.onLoop(t, func() {
		h.w.WriteString(strings.Join(p.log, ","))
		p.log = append(p.log, "end "+h.name)
		h.w.End()
	})
}

func pipeReq(method, path string) string {
	if method == "PUT" || method == "POST" {
		return method + " " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
	}
	return method + " " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"
}

// TestPipelinedUnsafeWaits: requests pipelined in one write. A request
// whose method is not safe starts only once every earlier response is
// finished, and no request starts while it runs; safe requests run in
// parallel (RFC 9112 §9.3.2). Responses leave in order either way.
func TestPipelinedUnsafeWaits(t *testing.T) {
	type req struct{ method, path string }
	cases := []struct {
		name string
		reqs []req
		// started: the log once the first held handler has started and
		// the loop has handled the input; it is not ended yet.
		started []string
		// log: the whole log, the held responses ended in turn.
		log []string
	}{
		{
			name:    "GET held, then PUT",
			reqs:    []req{{"GET", "/later"}, {"PUT", "/b"}},
			started: []string{"GET /later"},
			log:     []string{"GET /later", "end GET /later", "PUT /b"},
		},
		{
			name:    "PUT held, then GET",
			reqs:    []req{{"PUT", "/later"}, {"GET", "/b"}},
			started: []string{"PUT /later"},
			log:     []string{"PUT /later", "end PUT /later", "GET /b"},
		},
		{
			name:    "GET held, then GETs in parallel",
			reqs:    []req{{"GET", "/later"}, {"GET", "/b"}, {"HEAD", "/c"}, {"OPTIONS", "/d"}},
			started: []string{"GET /later", "GET /b", "HEAD /c", "OPTIONS /d"},
			log:     []string{"GET /later", "GET /b", "HEAD /c", "OPTIONS /d", "end GET /later"},
		},
		{
			name:    "GETs in parallel, DELETE waits for both, the GET after it for it",
			reqs:    []req{{"GET", "/later1"}, {"GET", "/later2"}, {"DELETE", "/c"}, {"GET", "/d"}},
			started: []string{"GET /later1", "GET /later2"},
			log:     []string{"GET /later1", "GET /later2", "end GET /later1", "end GET /later2", "DELETE /c", "GET /d"},
		},
		{
			name:    "GET done at once, POST held, GET waits",
			reqs:    []req{{"GET", "/a"}, {"POST", "/later"}, {"GET", "/c"}},
			started: []string{"GET /a", "POST /later"},
			log:     []string{"GET /a", "POST /later", "end POST /later", "GET /c"},
		},
		{
			name:    "POST held, then PUT held",
			reqs:    []req{{"POST", "/later1"}, {"PUT", "/later2"}, {"GET", "/c"}},
			started: []string{"POST /later1"},
			log:     []string{"POST /later1", "end POST /later1", "PUT /later2", "end PUT /later2", "GET /c"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipeRig(t)
			c := dial(t, p.addr)
			var raw strings.Builder
			held := 0
			for _, r := range tc.reqs {
				raw.WriteString(pipeReq(r.method, r.path))
				if strings.HasPrefix(r.path, "/later") {
					held++
				}
			}
			// One write: the server receives the requests together and
			// parses them in one go, so that only the rule can keep a
			// handler from starting early.
			io.WriteString(c, raw.String())
			w := p.nextHeld(t)
			if got := p.events(t); !slices.Equal(got, tc.started) {
				t.Errorf("started while the first held response is unfinished: %q, want %q", got, tc.started)
			}
			// The held responses end in the order their handlers started;
			// the rule allows at most one unfinished response that is not
			// safe, so each is started by the time the one before ends.
			for i := range held {
				if i > 0 {
					w = p.nextHeld(t)
				}
				p.end(t, w)
			}
			br := bufio.NewReader(c)
			for i, r := range tc.reqs {
				resp, b := readResponse(t, br, r.method)
				if resp.StatusCode != 200 {
					t.Errorf("response %d (%s %s): %d", i, r.method, r.path, resp.StatusCode)
				}
				var want string
				switch {
				case r.method == "HEAD":
				case strings.HasPrefix(r.path, "/later"):
					// What had started before this response ended.
					want = strings.Join(prefixUntil(tc.log, "end "+r.method+" "+r.path), ",")
				default:
					want = r.path
				}
				if string(b) != want {
					t.Errorf("response %d (%s %s): body %q, want %q", i, r.method, r.path, b, want)
				}
			}
			if got := p.events(t); !slices.Equal(got, tc.log) {
				t.Errorf("log %q, want %q", got, tc.log)
			}
		})
	}
}

// prefixUntil returns the events of log before e.
func prefixUntil(log []string, e string) []string {
	var out []string
	for _, x := range log {
		if x == e {
			break
		}
		out = append(out, x)
	}
	return out
}

// TestPipelinedHeldDropped: a request held behind an unfinished response
// is never started once the connection is to close or is taken over: the
// response before it closes the connection, the server closes or shuts
// down, or the handler hijacks. The client gets what was answered, then
// EOF; the package's goleak check sees that nothing is left running.
func TestPipelinedHeldDropped(t *testing.T) {
	cases := []struct {
		name string
		// act, from the test's goroutine, ends the connection while GET
		// /later is held; respond reports whether its response is sent.
		act     func(t *testing.T, p *pipeRig, h heldResp)
		ends    bool // act ends the held response (p.end)
		respond bool
	}{
		{"response closes", func(t *testing.T, p *pipeRig, h heldResp) {
			p.onLoop(t, func() { h.w.Header().Set("Connection", "close") })
			p.end(t, h)
		}, true, true},
		{"server closes", func(t *testing.T, p *pipeRig, h heldResp) {
			p.srv.Close()
			p.end(t, h) // no longer answered: nothing to start after it
		}, true, false},
		{"server shuts down", func(t *testing.T, p *pipeRig, h heldResp) {
			begun := make(chan struct{})
			p.srv.RegisterOnShutdown(func() { close(begun) })
			done := make(chan error, 1)
			go func() { done <- p.srv.Shutdown(context.Background()) }()
			// Shutdown waits for the held response; the request behind it
			// is not started, whether or not the loop has begun draining
			// when the response ends.
			<-begun
			p.end(t, h)
			if err := <-done; err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}, true, true},
		{"handler hijacks", func(t *testing.T, p *pipeRig, h heldResp) {
			p.onLoop(t, func() {
				c, _, err := h.w.Hijack()
				if err != nil {
					t.Errorf("Hijack: %v", err)
					return
				}
				c.Close()
			})
		}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipeRig(t)
			c := dial(t, p.addr)
			io.WriteString(c, pipeReq("GET", "/later")+pipeReq("PUT", "/b")+pipeReq("GET", "/c"))
			h := p.nextHeld(t)
			tc.act(t, p, h)
			br := bufio.NewReader(c)
			if tc.respond {
				if _, b := readResponse(t, br, "GET"); string(b) != "GET /later" {
					t.Errorf("body %q, want %q", b, "GET /later")
				}
			}
			if b, err := io.ReadAll(br); err != nil || len(b) != 0 {
				t.Errorf("after the held request: %q, %v; want EOF", b, err)
			}
			// Twice round the loop: anything the end of the connection
			// posted has run.
			p.onLoop(t, func() {})
			want := []string{"GET /later"}
			if tc.ends {
				want = append(want, "end GET /later")
			}
			if got := p.events(t); !slices.Equal(got, want) {
				t.Errorf("log %q, want %q", got, want)
			}
		})
	}
}
