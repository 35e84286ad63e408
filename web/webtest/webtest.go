// Package webtest runs web handlers on requests, as net/http/httptest does
// for net/http: one call, the request's bytes in, the responses out.
//
// Do sends one request to a handler and returns what it answered:
//
//	rec := webtest.Do(h, webtest.NewRequest("GET", "/kv/a", nil))
//	if rec.Code != 200 || string(rec.Body) != "1" { ... }
//
// The handler runs on the loop of an executor the package starts for the
// call (Serve and Do) or on one the test gives (ServeOn), exactly as the
// server runs it, because it is the server: the bytes go to
// web.Server.ServeConn over a loopback TCP connection the call opens on
// 127.0.0.1 and closes (the client's side sends them, then shuts its
// writing down, and reads the responses until the server closes). A
// handler may answer later (ResponseWriter.Later, then End from a timer
// or a task), pipelined requests are answered in order, and
// Request.Conn, RemoteAddr and Hijack are those of a real connection.
package webtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
)

// Timeout bounds how long Serve and Do wait for a handler to answer.
var Timeout = 30 * time.Second

// Request is a request to send: build one with NewRequest, adjust its
// fields, and give it to Do. Bytes returns what goes on the wire.
type Request struct {
	Method string
	Target string
	Header http.Header // Host is example.com unless set here
	Body   []byte      // sent with a Content-Length when not nil
	Proto  string      // "HTTP/1.1" unless set
}

// NewRequest returns a request of method for target with body (nil: no
// body).
func NewRequest(method, target string, body []byte) *Request {
	return &Request{Method: method, Target: target, Header: make(http.Header), Body: body}
}

// Bytes returns the request as it goes on the wire.
func (r *Request) Bytes() []byte {
	var b bytes.Buffer
	proto := r.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	fmt.Fprintf(&b, "%s %s %s\r\n", r.Method, r.Target, proto)
	if r.Header.Get("Host") == "" {
		b.WriteString("Host: example.com\r\n")
	}
	r.Header.Write(&b)
	if r.Body != nil && r.Header.Get("Content-Length") == "" && r.Header.Get("Transfer-Encoding") == "" {
		b.WriteString("Content-Length: " + strconv.Itoa(len(r.Body)) + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(r.Body)
	return b.Bytes()
}

// Recorder is a response a handler gave: its status, header fields and
// body, the bytes it took on the wire, and whether the server would have
// closed the connection after it.
type Recorder struct {
	Code   int
	Header http.Header
	Body   []byte
	Close  bool
	Raw    []byte // the bytes of every response, as written
}

// Do sends req to h (on a server with default limits) and returns the
// response. It panics if h does not answer within Timeout.
func Do(h web.Handler, req *Request) *Recorder {
	recs, err := Serve(&web.Server{Handler: h}, req.Bytes(), req.Method)
	if err != nil {
		panic("webtest: " + err.Error())
	}
	if len(recs) == 0 {
		panic("webtest: no response")
	}
	return recs[0]
}

// Serve runs srv on raw, the bytes one connection sends (one request or
// several, pipelined, malformed ones included), on an executor of its own,
// and returns the responses, one per request answered; methods are the
// requests' methods, in order (HEAD responses have no body), the last one
// repeated for the rest.
func Serve(srv *web.Server, raw []byte, methods ...string) ([]*Recorder, error) {
	ex := executor.New(executor.WithName("webtest"))
	ex.Start()
	defer ex.Close()
	return ServeOn(ex, srv, raw, methods...)
}

// ServeOn is Serve on ex, a running executor: the handlers run on its
// loop, so they may reach state the test keeps there. The connection is a
// loopback one on ex, served by srv.ServeConn; the server closes it once
// every request of raw is answered (or after a malformed one).
func ServeOn(ex *executor.Executor, srv *web.Server, raw []byte, methods ...string) ([]*Recorder, error) {
	out, err := exchange(ex, srv, raw)
	if err != nil {
		return nil, err
	}
	return ParseResponses(out, methods...)
}

// exchange sends raw to srv over a loopback connection served on ex, then
// shuts the sending side, and returns what srv answered until it closed
// the connection.
func exchange(ex *executor.Executor, srv *web.Server, raw []byte) ([]byte, error) {
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer l.Close()
	accepted := l.Accept()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", l.Addr().String())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	nc, err := accepted.Await(ctx)
	if err != nil {
		return nil, err
	}
	srv.ServeConn(nc)
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	// Send while reading: a server that answers as it reads would
	// otherwise fill both sides' buffers. The server may stop reading (a
	// malformed request), so the write's error is not the test's.
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		if _, err := c.Write(raw); err == nil {
			c.(*net.TCPConn).CloseWrite()
		}
	}()
	out, err := io.ReadAll(c)
	c.Close()
	<-sent
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, fmt.Errorf("handler did not answer within %v", Timeout)
	}
	return out, err
}

// ParseResponses reads the responses in raw with net/http's reader.
func ParseResponses(raw []byte, methods ...string) ([]*Recorder, error) {
	rd := bytes.NewReader(raw)
	br := bufio.NewReader(rd)
	consumed := func() int { return len(raw) - rd.Len() - br.Buffered() }
	var recs []*Recorder
	for i := 0; ; i++ {
		if _, err := br.Peek(1); err == io.EOF {
			return recs, nil
		}
		m := "GET"
		if len(methods) > 0 {
			m = methods[min(i, len(methods)-1)]
		}
		start := consumed()
		resp, err := http.ReadResponse(br, &http.Request{Method: m})
		if err != nil {
			return recs, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return recs, err
		}
		if resp.StatusCode == http.StatusContinue {
			i--
			continue
		}
		end := consumed()
		recs = append(recs, &Recorder{Code: resp.StatusCode, Header: resp.Header, Body: body, Close: resp.Close, Raw: raw[start:end]})
	}
}
