package main

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStatic serves a directory at /static/ and checks the file server's
// answers through webkv's routes; without ServeStatic the route is 404.
func TestStatic(t *testing.T) {
	dir := t.TempDir()
	body := strings.Repeat("0123456789", 100_000) // 1 MB: sendfile meets a full socket
	for name, b := range map[string]string{"a.txt": "hello", "big.bin": body, "site/index.html": "<h1>i</h1>"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(filepath.Dir(dir), "outside.txt"), []byte("no"), 0o644)
	s, _ := startWith(t, 2, func(s *Server) { s.ServeStatic(dir) })
	base := "http://" + s.Addr().String()
	_, plain := start(t)
	c := client(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	for _, tc := range []struct {
		method, path, rangeHdr string
		code                   int
		body, header, value    string
	}{
		{"GET", "/static/a.txt", "", 200, "hello", "Content-Type", "text/plain; charset=utf-8"},
		{"HEAD", "/static/a.txt", "", 200, "", "Content-Length", "5"},
		{"GET", "/static/big.bin", "", 200, body, "Accept-Ranges", "bytes"},
		{"GET", "/static/big.bin", "bytes=10-19", 206, "0123456789", "Content-Range", "bytes 10-19/1000000"},
		{"GET", "/static/site/", "", 200, "<h1>i</h1>", "Content-Type", "text/html; charset=utf-8"},
		{"GET", "/static/site", "", 301, "", "Location", "site/"},
		{"GET", "/static/site/index.html", "", 301, "", "Location", "./"},
		{"GET", "/static/nope", "", 404, "404 page not found\n", "", ""},
		{"GET", "/static/%2e%2e/outside.txt", "", 404, "404 page not found\n", "", ""},
		{"PUT", "/static/a.txt", "", 405, "Method Not Allowed\n", "Allow", "GET, HEAD"},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		if tc.rangeHdr != "" {
			req.Header.Set("Range", tc.rangeHdr)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		bb, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		b := string(bb)
		if res.StatusCode != tc.code || b != tc.body || tc.header != "" && res.Header.Get(tc.header) != tc.value {
			t.Errorf("%s %s: %d %s=%q body %d bytes; want %d %q, %d bytes", tc.method, tc.path, res.StatusCode,
				tc.header, res.Header.Get(tc.header), len(b), tc.code, tc.value, len(tc.body))
		}
	}
	res, b := do(t, c, "GET", "http://"+plain+"/static/a.txt", nil)
	if res.StatusCode != 404 {
		t.Errorf("without ServeStatic: %d %q, want 404", res.StatusCode, b)
	}
}

// TestStaticTLS gets files over HTTPS: the body is read and sealed on
// the loop (no sendfile under TLS), whole and by ranges.
func TestStaticTLS(t *testing.T) {
	dir := t.TempDir()
	body := make([]byte, 3<<20+17)
	for i := range body {
		body[i] = byte(i*13 + i>>10)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	pool := testCA(t, dir)
	s, _ := startWith(t, 2, func(s *Server) { s.ServeStatic(dir) })
	if err := listenTLS(s, "127.0.0.1:0", filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	base := "https://" + s.TLSAddr().String() + "/static/big.bin"
	for _, tc := range []struct {
		rangeHdr string
		code     int
		want     []byte
	}{
		{"", 200, body},
		{"bytes=100-2000000", 206, body[100:2000001]},
		{"bytes=-5", 206, body[len(body)-5:]},
		{"", 200, body},
	} {
		req, _ := http.NewRequest("GET", base, nil)
		if tc.rangeHdr != "" {
			req.Header.Set("Range", tc.rangeHdr)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != tc.code || !bytes.Equal(got, tc.want) {
			t.Fatalf("GET %q over TLS: %d, %d bytes (%v); want %d, %d bytes", tc.rangeHdr, res.StatusCode, len(got), err, tc.code, len(tc.want))
		}
	}
}
