package web_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"
	"testing/fstest"
	"time"

	"github.com/spindle-rt/spindle/sim"
	"github.com/spindle-rt/spindle/web"
)

// TestSimStaticFS: under package sim, a FileServerFS over an fs.FS is
// served on the world's clock: its calls run on the simulated disk's
// latency (fileio's sim engine), the answers are net/http's, and the same
// seed gives the same bytes at the same simulated times.
func TestSimStaticFS(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 9000) // 144,000 bytes: three pieces
	fsys := fstest.MapFS{
		"hello.txt":      {Data: []byte("hello, world\n"), ModTime: staticTime},
		"big.bin":        {Data: big, ModTime: staticTime},
		"dir/a.txt":      {Data: []byte("a"), ModTime: staticTime},
		"site/index.htm": {Data: []byte("<p>x</p>"), ModTime: staticTime},
	}
	raw := sget("/hello.txt") + sget("/big.bin", rangeHdr("bytes=5-70000,100000-")) + sget("/dir/") + sget("/nope") +
		sget("/hello.txt", "Connection: close\r\n")
	run := func(seed int64) ([]byte, time.Duration) {
		w := sim.New(seed)
		defer w.Close()
		srv := &web.Server{Handler: web.FileServerFS(fsys)}
		got, _, at, closed := simTimeoutRun(t, w, srv, raw, time.Minute)
		if !closed {
			t.Fatalf("seed %d: the server did not close after Connection: close (%d bytes)", seed, len(got))
		}
		return got, at
	}
	got, at := run(5)
	again, at2 := run(5)
	// The multipart boundary is random (as net/http's), the rest the seed's.
	if boundary.ReplaceAllString(string(got), "B") != boundary.ReplaceAllString(string(again), "B") || at != at2 {
		t.Fatalf("seed 5 twice: %d bytes at %v, then %d at %v", len(got), at, len(again), at2)
	}
	if at <= 0 {
		t.Fatalf("the answers took no simulated time")
	}

	stdAddr := serveStd(t, http.FileServerFS(fsys))
	want := staticExchange(t, stdAddr, raw, nil)
	br := bufio.NewReader(bytes.NewReader(got))
	for i, w := range want {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if resp.StatusCode != w.Code || boundary.ReplaceAllString(string(b), "BOUNDARY") != w.Body {
			t.Errorf("response %d: %d with %d bytes; net/http: %d with %d bytes", i, resp.StatusCode, len(b), w.Code, len(w.Body))
		}
	}
}
