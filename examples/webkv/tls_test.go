package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/testkit/testcert"
	"github.com/spindle-rt/spindle/internal/wsclient"
)

// testCA writes to dir a CA (ca.pem) and a certificate for 127.0.0.1 and
// localhost it signed (cert.pem, key.pem), all made now, and returns a
// pool that trusts the CA.
func testCA(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	ca, err := testcert.New("webkv test CA")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.WriteFiles(dir, "127.0.0.1", "localhost"); err != nil {
		t.Fatal(err)
	}
	return ca.Pool
}

// startTLS runs a server with two shards serving plain HTTP and HTTPS
// (through listenTLS, as the flags do) on free loopback ports.
func startTLS(t *testing.T) (plain, secure string, pool *x509.CertPool, dir string) {
	t.Helper()
	dir = t.TempDir()
	pool = testCA(t, dir)
	s := NewServer(2)
	if err := s.Listen("tcp", "127.0.0.1:0"); err != nil {
		s.Close()
		t.Fatal(err)
	}
	if err := listenTLS(s, "127.0.0.1:0", filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")); err != nil {
		s.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s.Addr().String(), s.TLSAddr().String(), pool, dir
}

func TestListenTLSFlags(t *testing.T) {
	s := NewServer(1)
	defer s.Close()
	for _, f := range [][3]string{{"127.0.0.1:0", "", ""}, {"", "c.pem", "k.pem"}, {"127.0.0.1:0", "c.pem", ""}} {
		if err := listenTLS(s, f[0], f[1], f[2]); err == nil || !strings.Contains(err.Error(), "go together") {
			t.Errorf("listenTLS(%q, %q, %q) = %v, want the three flags go together", f[0], f[1], f[2], err)
		}
	}
	dir := t.TempDir()
	if err := listenTLS(s, "127.0.0.1:0", filepath.Join(dir, "none.pem"), filepath.Join(dir, "none.pem")); err == nil {
		t.Error("listenTLS with missing files: no error")
	}
}

// TestHTTPS: GET and PUT over HTTPS with ALPN http/1.1, the value shared
// with the plain listener, and a WebSocket echo and watch over TLS.
func TestHTTPS(t *testing.T) {
	plain, secure, pool, _ := startTLS(t)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}}}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	base := "https://" + secure

	res, body := do(t, c, "GET", base+"/kv/greeting", nil)
	if res.StatusCode != 404 {
		t.Fatalf("GET missing key: %d %q", res.StatusCode, body)
	}
	if res.TLS == nil || res.TLS.NegotiatedProtocol != "http/1.1" || res.TLS.Version != tls.VersionTLS13 {
		t.Fatalf("connection state %+v, want TLS 1.3 with ALPN http/1.1", res.TLS)
	}
	for i := range 20 {
		k := "key" + string(rune('a'+i))
		if res, _ := do(t, c, "PUT", base+"/kv/"+k, strings.NewReader("over tls "+k)); res.StatusCode != 204 {
			t.Fatalf("PUT %s: %d", k, res.StatusCode)
		}
	}
	pc := client(t)
	for i := range 20 {
		k := "key" + string(rune('a'+i))
		if res, body := do(t, c, "GET", base+"/kv/"+k, nil); res.StatusCode != 200 || body != "over tls "+k {
			t.Fatalf("GET https %s: %d %q", k, res.StatusCode, body)
		}
		if res, body := do(t, pc, "GET", "http://"+plain+"/kv/"+k, nil); res.StatusCode != 200 || body != "over tls "+k {
			t.Fatalf("GET http %s: %d %q", k, res.StatusCode, body)
		}
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB: many records each way
	if res, body := do(t, c, "POST", base+"/echo", bytes.NewReader(big)); res.StatusCode != 200 || body != string(big) {
		t.Fatalf("POST /echo over TLS: %d, %d bytes back of %d", res.StatusCode, len(body), len(big))
	}

	// The page served over HTTPS opens its watch with wss://.
	if res, body := do(t, c, "GET", base+"/", nil); res.StatusCode != 200 ||
		!strings.Contains(body, `(location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/watch"`) {
		t.Fatalf("GET / over TLS: %d; the page does not pick wss:// under https:", res.StatusCode)
	}

	dial := func(path string) *wsclient.Client {
		t.Helper()
		nc, err := tls.Dial("tcp", secure, &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		ws, err := wsclient.Handshake(nc, "localhost", path)
		if err != nil {
			nc.Close()
			t.Fatalf("wss %s: %v", path, err)
		}
		t.Cleanup(func() { ws.Close() })
		return ws
	}
	echo := dial("/ws/echo")
	echo.Text("hello over tls")
	echo.Binary(big)
	for _, want := range []struct {
		op byte
		p  string
	}{{wsclient.OpText, "hello over tls"}, {wsclient.OpBinary, string(big)}} {
		op, p, err := echo.ReadMessage()
		if err != nil || op != want.op || string(p) != want.p {
			t.Fatalf("wss echo: op %d, %d bytes, %v; want op %d, %d bytes", op, len(p), err, want.op, len(want.p))
		}
	}
	watch := dial("/ws/watch")
	// A ping round trip: the upgrade is done and it is watching. A change
	// made now over plain HTTP reaches it over TLS.
	watch.Send(wsclient.Frame{Fin: true, Op: wsclient.OpPing, Payload: []byte("r")})
	if op, _, err := watch.ReadMessage(); err != nil || op != wsclient.OpPong {
		t.Fatalf("wss pong: %d %v", op, err)
	}
	if res, _ := do(t, pc, "DELETE", "http://"+plain+"/kv/keya", nil); res.StatusCode != 204 {
		t.Fatalf("DELETE: %d", res.StatusCode)
	}
	if op, p, err := watch.ReadMessage(); err != nil || op != wsclient.OpText || string(p) != "del keya" {
		t.Fatalf("wss watch: %d %q %v, want \"del keya\"", op, p, err)
	}
}

// TestCurlHTTPS: curl --cacert gets and puts over HTTPS (skipped without
// curl).
func TestCurlHTTPS(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	_, secure, _, dir := startTLS(t)
	_, port, _ := net.SplitHostPort(secure)
	url := "https://localhost:" + port + "/kv/greeting"
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		args = append([]string{"--silent", "--show-error", "--fail", "--cacert", filepath.Join(dir, "ca.pem"),
			"--resolve", "localhost:" + port + ":127.0.0.1"}, args...)
		out, err := exec.CommandContext(ctx, curl, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("-X", "PUT", "--data-binary", "hello", url)
	if got := run(url); got != "hello" {
		t.Fatalf("curl GET: %q, want hello", got)
	}
	if got := run("--http1.1", "-o", "/dev/null", "-w", "%{http_version} %{response_code}", url); got != "1.1 200" {
		t.Fatalf("curl: %q, want 1.1 200", got)
	}
	// Without the CA, curl refuses the certificate.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, curl, "--silent", "--resolve", "localhost:"+port+":127.0.0.1", url).CombinedOutput(); err == nil {
		t.Fatalf("curl without --cacert succeeded: %q", out)
	}
}
