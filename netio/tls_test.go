package netio_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/internal/testkit/testcert"
	"github.com/spindle-rt/spindle/netio"
)

// testCA is a certificate authority made at test time (nothing secret is
// kept in the repository).
var testCA = sync.OnceValue(func() *testcert.CA { return testcert.MustNew("netio test CA") })

var serverCert = sync.OnceValue(func() tls.Certificate {
	return testCA().MustServer("127.0.0.1", "localhost", "::1")
})

func serverConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{serverCert()}}
}

func clientConfig() *tls.Config {
	return &tls.Config{RootCAs: testCA().Pool, ServerName: "localhost"}
}

// listenTLS opens a TLS listener on ex at a free loopback port.
func listenTLS(t testing.TB, ex *executor.Executor, cfg *tls.Config, opts ...netio.ListenOption) *netio.Listener {
	t.Helper()
	l, err := netio.ListenTLS(ex, "tcp", "127.0.0.1:0", cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// dialTLS connects to l with crypto/tls over package net.
func dialTLS(t testing.TB, l *netio.Listener, cfg *tls.Config) (*tls.Conn, error) {
	t.Helper()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: spindletest.Safety}, Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
	defer cancel()
	nc, err := d.DialContext(ctx, "tcp", l.Addr().String())
	if err != nil {
		return nil, err
	}
	nc.SetDeadline(time.Now().Add(spindletest.Safety))
	t.Cleanup(func() { nc.Close() })
	return nc.(*tls.Conn), nil
}

func mustDialTLS(t testing.TB, l *netio.Listener, cfg *tls.Config) *tls.Conn {
	t.Helper()
	tc, err := dialTLS(t, l, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// states serves l with echo and sends the TLS state of every connection
// it accepts on the channel returned.
func states(l *netio.Listener) <-chan tls.ConnectionState {
	ch := make(chan tls.ConnectionState, 2000)
	netio.Serve(l, func(c *netio.Conn) {
		st, ok := c.ConnectionState()
		if ok {
			ch <- st
		}
		echoConn(c)
	})
	return ch
}

func echoOver(t testing.TB, rw io.ReadWriter, msg string) {
	t.Helper()
	if _, err := io.WriteString(rw, msg); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, rw, len(msg)); string(got) != msg {
		t.Fatalf("echo: got %q, want %q", got, msg)
	}
}

func TestTLSEcho(t *testing.T) {
	ex := started(t)
	l := listenTLS(t, ex, serverConfig())
	st := states(l)
	tc := mustDialTLS(t, l, clientConfig())
	echoOver(t, tc, "hello over TLS")
	big := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB: many records, both ways
	go io.WriteString(tc, big)
	if got := readN(t, tc, len(big)); string(got) != big {
		t.Fatal("128 KiB echo differs")
	}
	s := spindletest.Recv(t, st)
	if !s.HandshakeComplete || s.Version != tls.VersionTLS13 || s.ServerName != "localhost" {
		t.Fatalf("state: complete %v version %x server name %q", s.HandshakeComplete, s.Version, s.ServerName)
	}
}

func TestTLSVersions(t *testing.T) {
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			ex := started(t)
			l := listenTLS(t, ex, serverConfig())
			st := states(l)
			cfg := clientConfig()
			cfg.MaxVersion = v
			tc := mustDialTLS(t, l, cfg)
			for i := range 50 {
				echoOver(t, tc, fmt.Sprint("message ", i))
			}
			if s := spindletest.Recv(t, st); s.Version != v {
				t.Fatalf("version %x, want %x", s.Version, v)
			}
		})
	}
}

func TestTLSPlainConnHasNoState(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	ch := make(chan bool, 1)
	netio.Serve(l, func(c *netio.Conn) {
		_, ok := c.ConnectionState()
		ch <- ok
		c.Close()
	})
	dialNet(t, l)
	if spindletest.Recv(t, ch) {
		t.Fatal("a plain connection reports a TLS state")
	}
}

func TestTLSBadCertificates(t *testing.T) {
	ex := started(t)
	l := listenTLS(t, ex, serverConfig())
	st := states(l)
	other := x509.NewCertPool() // trusts nothing
	tests := []struct {
		name string
		cfg  *tls.Config
		want string
	}{
		{"unknown authority", &tls.Config{RootCAs: other, ServerName: "localhost"}, "certificate"},
		{"wrong name", &tls.Config{RootCAs: testCA().Pool, ServerName: "example.com"}, "certificate"},
		{"no common version", &tls.Config{RootCAs: testCA().Pool, ServerName: "localhost", MaxVersion: tls.VersionTLS11}, "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dialTLS(t, l, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("handshake error %v, want one about %q", err, tt.want)
			}
		})
	}
	// The failed handshakes cost their connections only.
	tc := mustDialTLS(t, l, clientConfig())
	echoOver(t, tc, "still serving")
	spindletest.Recv(t, st)
	select {
	case <-st:
		t.Fatal("a connection whose handshake failed was delivered")
	default:
	}
}

func TestTLSClientCertificates(t *testing.T) {
	ex := started(t)
	cfg := serverConfig()
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	cfg.ClientCAs = testCA().Pool
	l := listenTLS(t, ex, cfg)
	st := states(l)

	// Without a certificate: the server refuses (in TLS 1.3 the client
	// learns it at its first read).
	tc, err := dialTLS(t, l, clientConfig())
	if err == nil {
		tc.Write([]byte("x"))
		_, err = tc.Read(make([]byte, 1))
	}
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without a client certificate: %v", err)
	}

	ccfg := clientConfig()
	ccfg.Certificates = []tls.Certificate{testCA().MustClient("client-1")}
	tc = mustDialTLS(t, l, ccfg)
	echoOver(t, tc, "with a certificate")
	s := spindletest.Recv(t, st)
	if len(s.PeerCertificates) != 1 || s.PeerCertificates[0].Subject.CommonName != "client-1" {
		t.Fatalf("peer certificates %v", s.PeerCertificates)
	}
}

func TestTLSALPNAndSNI(t *testing.T) {
	ex := started(t)
	certs := map[string]tls.Certificate{
		"a.test": testCA().MustServer("a.test"),
		"b.test": testCA().MustServer("b.test"),
	}
	var asked sync.Map
	cfg := &tls.Config{
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) {
			asked.Store(hi.ServerName, true)
			c, ok := certs[hi.ServerName]
			if !ok {
				return nil, fmt.Errorf("no certificate for %q", hi.ServerName)
			}
			return &c, nil
		},
	}
	l := listenTLS(t, ex, cfg)
	st := states(l)
	for _, tt := range []struct{ name, proto string }{{"a.test", "http/1.1"}, {"b.test", "h2"}} {
		tc := mustDialTLS(t, l, &tls.Config{RootCAs: testCA().Pool, ServerName: tt.name, NextProtos: []string{tt.proto}})
		echoOver(t, tc, tt.name)
		if p := tc.ConnectionState().NegotiatedProtocol; p != tt.proto {
			t.Fatalf("client negotiated %q, want %q", p, tt.proto)
		}
		s := spindletest.Recv(t, st)
		if s.NegotiatedProtocol != tt.proto || s.ServerName != tt.name {
			t.Fatalf("server: protocol %q name %q", s.NegotiatedProtocol, s.ServerName)
		}
		if got := tc.ConnectionState().PeerCertificates[0].DNSNames[0]; got != tt.name {
			t.Fatalf("certificate for %q served to %q", got, tt.name)
		}
	}
	if _, err := dialTLS(t, l, &tls.Config{RootCAs: testCA().Pool, ServerName: "c.test"}); err == nil {
		t.Fatal("handshake without a certificate for the name succeeded")
	}
}

// TestTLSStalledHandshake: peers that stop mid-handshake are closed at the
// handshake timeout, and others are served meanwhile.
func TestTLSStalledHandshake(t *testing.T) {
	ex := started(t)
	l := listenTLS(t, ex, serverConfig(), netio.WithHandshakeTimeout(200*time.Millisecond))
	st := states(l)
	// The clients served meanwhile use a listener on the same loop with
	// the default timeout, which a slow run cannot reach.
	good := listenTLS(t, ex, serverConfig())
	gst := states(good)

	// A peer that sends half a ClientHello, one that sends nothing, and one
	// that completes its half but never sends its Finished.
	hello := clientHello(t)
	half := dialNet(t, l)
	half.Write(hello[:len(hello)/2])
	silent := dialNet(t, l)
	stalled := dialNet(t, l)
	stalled.Write(hello)

	for i := range 3 {
		tc := mustDialTLS(t, good, clientConfig())
		echoOver(t, tc, fmt.Sprint("meanwhile ", i))
		spindletest.Recv(t, gst)
	}
	for _, nc := range []net.Conn{half, silent, stalled} {
		// The server closes it: the read ends (EOF, or a reset), well
		// before the safety deadline.
		var ne net.Error
		if _, err := io.ReadAll(nc); errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("a stalled handshake was not closed: %v", err)
		}
	}
	select {
	case <-st:
		t.Fatal("a stalled connection was delivered")
	default:
	}
}

// clientHello returns the first flight of a crypto/tls client.
func clientHello(t testing.TB) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go tls.Client(a, clientConfig()).Handshake()
	buf := make([]byte, 64<<10)
	b.SetReadDeadline(time.Now().Add(spindletest.Safety))
	n, err := b.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func TestTLSGarbageCostsItsConnectionOnly(t *testing.T) {
	ex := started(t)
	l := listenTLS(t, ex, serverConfig())
	st := states(l)
	for _, junk := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "\x16\x03\x01\xff\xff" + strings.Repeat("A", 100), "\x80\x00\x00\x00\x00\x00"} {
		nc := dialNet(t, l)
		nc.Write([]byte(junk))
		io.ReadAll(nc) // the server answers with an alert, or nothing, and closes
	}
	tc := mustDialTLS(t, l, clientConfig())
	echoOver(t, tc, "after the junk")
	spindletest.Recv(t, st)
}

// byteConn writes everything one byte at a time: each TLS record reaches
// the server split into one-byte segments.
type byteConn struct{ net.Conn }

func (c byteConn) Write(p []byte) (int, error) {
	for i := range p {
		if _, err := c.Conn.Write(p[i : i+1]); err != nil {
			return i, err
		}
	}
	return len(p), nil
}

func TestTLSOneByteSegments(t *testing.T) {
	ex := started(t)
	l := listenTLS(t, ex, serverConfig())
	st := states(l)
	nc := dialNet(t, l)
	nc.(*net.TCPConn).SetNoDelay(true)
	tc := tls.Client(byteConn{nc}, clientConfig())
	msg := strings.Repeat("split into one-byte segments; ", 40)
	for range 3 {
		echoOver(t, tc, msg)
	}
	spindletest.Recv(t, st)
}

func TestTLSCloseNotify(t *testing.T) {
	ex := started(t)
	l := listenTLS(t, ex, serverConfig())
	conns := make(chan *netio.Conn, 4)
	netio.Serve(l, func(c *netio.Conn) { conns <- c })

	t.Run("server Close sends close_notify", func(t *testing.T) {
		tc := mustDialTLS(t, l, clientConfig())
		tc.Handshake()
		c := spindletest.Recv(t, conns)
		write(t, c, "last words")
		c.Close()
		got, err := io.ReadAll(tc) // crypto/tls returns EOF only after close_notify
		if err != nil || string(got) != "last words" {
			t.Fatalf("client read %q, %v", got, err)
		}
	})
	t.Run("client close_notify ends the stream", func(t *testing.T) {
		tc := mustDialTLS(t, l, clientConfig())
		io.WriteString(tc, "bye")
		tc.CloseWrite()
		c := spindletest.Recv(t, conns)
		got, err := recvAll(t, c)
		if string(got) != "bye" || err != io.EOF {
			t.Fatalf("server received %q, %v; want bye, io.EOF", got, err)
		}
		c.Close()
	})
	t.Run("truncation", func(t *testing.T) {
		tc := mustDialTLS(t, l, clientConfig())
		io.WriteString(tc, "cut")
		c := spindletest.Recv(t, conns)
		b, err := spindletest.Await(t, c.Recv())
		if err != nil || string(b) != "cut" {
			t.Fatalf("received %q, %v", b, err)
		}
		tc.NetConn().Close() // no close_notify
		got, err := recvAll(t, c)
		if len(got) != 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("after truncation: %q, %v; want an error matching io.ErrUnexpectedEOF", got, err)
		}
		c.Close()
	})
	t.Run("truncation mid-record", func(t *testing.T) {
		nc := dialNet(t, l)
		tc := tls.Client(nc, clientConfig())
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		c := spindletest.Recv(t, conns)
		// A record header announcing more than is sent.
		nc.Write([]byte{23, 3, 3, 0, 100, 1, 2, 3})
		nc.(*net.TCPConn).CloseWrite()
		_, err := recvAll(t, c)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("after a cut record: %v; want an error matching io.ErrUnexpectedEOF", err)
		}
		c.Close()
	})
}

func TestTLSServerWritesFirstAndCloseWrite(t *testing.T) {
	ex := started(t)
	l := listenTLS(t, ex, serverConfig())
	netio.Serve(l, func(c *netio.Conn) {
		c.Write([]byte("greeting"))
		c.Flush().OnComplete(func(struct{}, error) { c.CloseWrite() })
		echoConn(c)
	})
	tc := mustDialTLS(t, l, clientConfig())
	got, err := io.ReadAll(tc) // close_notify after the greeting
	if err != nil || string(got) != "greeting" {
		t.Fatalf("read %q, %v", got, err)
	}
}

func TestTLSListenErrors(t *testing.T) {
	ex := started(t)
	tests := []struct {
		name string
		opts []netio.ListenOption
		want string
	}{
		{"nil config", []netio.ListenOption{netio.WithTLS(nil)}, "nil *tls.Config"},
		{"no certificate", []netio.ListenOption{netio.WithTLS(&tls.Config{})}, "no certificate"},
		{"timeout without TLS", []netio.ListenOption{netio.WithHandshakeTimeout(time.Second)}, "without WithTLS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := netio.Listen(ex, "tcp", "127.0.0.1:0", tt.opts...)
			if err == nil {
				l.Close()
				t.Fatal("Listen succeeded")
			}
			if !strings.HasPrefix(err.Error(), "netio: ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestDialTLS(t *testing.T) {
	ex := started(t)
	ctx := spindletest.Context(t)

	// Against crypto/tls over package net.
	ln := goTLSEcho(t)
	cfg := &tls.Config{RootCAs: testCA().Pool, NextProtos: []string{"x"}}
	c, err := spindletest.Await(t, netio.DialTLS(ctx, ex, "tcp", ln.Addr().String(), cfg))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := c.ConnectionState()
	// No ServerName was given: DialTLS took it from the address (crypto/tls
	// refuses to verify without one).
	if !ok || st.NegotiatedProtocol != "x" || len(st.PeerCertificates) == 0 {
		t.Fatalf("state ok %v protocol %q", ok, st.NegotiatedProtocol)
	}
	write(t, c, "ping over DialTLS")
	var got []byte
	for len(got) < len("ping over DialTLS") {
		b, err := spindletest.Await(t, c.Recv())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
	}
	if string(got) != "ping over DialTLS" {
		t.Fatalf("got %q", got)
	}
	c.Close()

	// A server whose certificate is not trusted.
	_, err = spindletest.Await(t, netio.DialTLS(ctx, ex, "tcp", ln.Addr().String(), &tls.Config{RootCAs: x509.NewCertPool()}))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted server: %v", err)
	}

	// netio on both ends, on one loop.
	l := listenTLS(t, ex, serverConfig())
	echo(l)
	c, err = spindletest.Await(t, netio.DialTLS(ctx, ex, "tcp", l.Addr().String(), clientConfig()))
	if err != nil {
		t.Fatal(err)
	}
	write(t, c, "loop to loop")
	b, err := spindletest.Await(t, c.Recv())
	if err != nil || string(b) != "loop to loop" {
		t.Fatalf("got %q, %v", b, err)
	}
	c.Close()

	// A cancelled context ends a handshake that cannot finish.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	cctx, cancel := context.WithCancel(ctx)
	f := netio.DialTLS(cctx, ex, "tcp", silent.Addr().String(), clientConfig())
	peer, err := silent.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	cancel()
	if _, err := spindletest.Await(t, f); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled DialTLS: %v", err)
	}
}

// goTLSEcho starts an echo server of crypto/tls over package net (ALPN
// "x"), closed with t.
func goTLSEcho(t *testing.T) net.Listener {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serverCert()}, NextProtos: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(nc, nc); nc.Close() }()
		}
	}()
	return ln
}

// TestTLSManyHandshakesBesidePlainTraffic: 1,000 concurrent handshakes (250
// under the race detector) on a loop that also serves plain echo; the plain requests go on being
// answered while the handshakes run, and every handshake completes.
func TestTLSManyHandshakesBesidePlainTraffic(t *testing.T) {
	ex := started(t)
	// The bound is the safety net: on a loaded machine under the race
	// detector a queued handshake may wait long for a CPU slot.
	l := listenTLS(t, ex, serverConfig(), netio.WithHandshakeTimeout(spindletest.Safety))
	st := states(l)
	plain := listen(t, ex)
	echo(plain)
	pc := dialNet(t, plain)

	n := spindletest.Scale(1000) // a quarter under the race detector
	var done, handshaking atomic.Int64
	handshaking.Store(1)
	stop := make(chan struct{})
	pings := make(chan int, 1)
	go func() {
		k, during := 0, 0
		buf := make([]byte, 4)
		for {
			select {
			case <-stop:
				pings <- during
				return
			default:
			}
			pc.SetDeadline(time.Now().Add(spindletest.Safety))
			pc.Write([]byte("ping"))
			if _, err := io.ReadFull(pc, buf); err != nil {
				pings <- -1
				return
			}
			k++
			if handshaking.Load() == 1 {
				during++
			}
		}
	}()
	var failed atomic.Int64
	sem := make(chan struct{}, 100) // clients in flight at once
	// The clients check no certificate: their chain verification (pure
	// Go) would cost more than the server's handshakes.
	ccfg := &tls.Config{InsecureSkipVerify: true}
	spindletest.Parallel(n, func(i int) {
		sem <- struct{}{}
		defer func() { <-sem }()
		tc, err := dialTLS(t, l, ccfg)
		if err != nil {
			failed.Add(1)
			t.Errorf("handshake %d: %v", i, err)
			return
		}
		echoOver(t, tc, "x")
		tc.Close()
		done.Add(1)
	})
	handshaking.Store(0)
	close(stop)
	during := spindletest.Recv(t, pings)
	if done.Load() != int64(n) {
		t.Fatalf("%d of %d handshakes completed (%d failed)", done.Load(), n, failed.Load())
	}
	for range n {
		spindletest.Recv(t, st)
	}
	if during <= 0 {
		t.Fatalf("no plain request was answered while the handshakes ran (%d)", during)
	}
	t.Logf("%d plain round trips during %d handshakes", during, n)
}

func TestTLSNoFDOrGoroutineOutlivesExecutorClose(t *testing.T) {
	before := openFDs(t)
	ex := executor.New()
	ex.Start()
	l, err := netio.ListenTLS(ex, "tcp", "127.0.0.1:0", serverConfig())
	if err != nil {
		t.Fatal(err)
	}
	echo(l)
	var ncs []net.Conn
	for range 10 {
		tc := mustDialTLS(t, l, clientConfig())
		echoOver(t, tc, "x")
		ncs = append(ncs, tc)
	}
	hello := clientHello(t)
	for range 5 { // handshakes in progress when the executor closes
		nc := dialNet(t, l)
		nc.Write(hello[:10])
		ncs = append(ncs, nc)
	}
	c, err := spindletest.Await(t, netio.DialTLS(spindletest.Context(t), ex, "tcp", l.Addr().String(), clientConfig()))
	if err != nil {
		t.Fatal(err)
	}
	_ = c
	ex.Close()
	for _, nc := range ncs {
		nc.Close()
	}
	if after := openFDs(t); after > before {
		t.Fatalf("%d file descriptors open before, %d after Executor.Close", before, after)
	}
	// goleak (TestMain) checks that no handshake goroutine is left.
}

// Server.Shutdown drains TLS connections as plain ones: a receive that
// would wait for the peer fails with ErrServerClosed, so an idle TLS
// connection ends (with close_notify) and Shutdown returns.
func TestTLSServerShutdown(t *testing.T) {
	ex := started(t)
	l := listenTLS(t, ex, serverConfig())
	ls := newLineServer()
	srv := &netio.Server{Handler: ls.handle}
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	tc := mustDialTLS(t, l, clientConfig())
	io.WriteString(tc, "hello\n")
	br := bufio.NewReader(tc)
	if s, err := br.ReadString('\n'); s != "+hello\n" || err != nil {
		t.Fatalf("before Shutdown: %q, %v", s, err)
	}
	ctx, cancel := context.WithTimeout(spindletest.Context(t), 5*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	if b, err := io.ReadAll(br); len(b) != 0 || err != nil {
		t.Errorf("after Shutdown the client read %q, %v; want close_notify (EOF)", b, err)
	}
	tc.Close() // the server's close lingers until the peer's end
	if err := spindletest.Recv(t, shut); err != nil {
		t.Fatalf("Shutdown with an idle TLS connection: %v", err)
	}
	if err := spindletest.Recv(t, ls.ended); !errors.Is(err, netio.ErrServerClosed) {
		t.Errorf("the connection's reads ended with %v, want ErrServerClosed", err)
	}
}
