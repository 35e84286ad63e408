package web_test

import (
	"bufio"
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
