package web_test

// The file server's differential test: the same requests go to
// web.FileServer and to net/http's http.FileServer over the same
// directory, and their answers must agree on status, the headers that
// matter, the body and whether the connection closes. The only
// difference allowed is the boundary of multipart/byteranges, random in
// both: it is replaced by "BOUNDARY" before comparing.

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/web"
)

// staticTime is the modification time of every file of the tree.
var staticTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// bigSize is the size of big.bin: more than a socket takes at once, so
// that sendfile meets a full socket, and more than a piece of the copy
// path.
const bigSize = 600 << 10

// staticTree makes the directory both servers serve, and a file beside it
// that a symbolic link inside points to.
func staticTree(t testing.TB) string {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	big := make([]byte, bigSize)
	for i := range big {
		big[i] = byte(i*7 + i>>9)
	}
	files := map[string]string{
		"hello.txt":                 "hello, world\n",
		"page.html":                 "<p>hi</p>",
		"noext":                     "plain words without an extension\n",
		"binary":                    "\x00\x01\x02\x03binary",
		"empty.txt":                 "",
		"big.bin":                   string(big),
		"dir/a.txt":                 "a",
		"dir/x&y <z>.txt":           "xy",
		"dir/q?uery#frag.txt":       "q",
		"dir/sub/b.txt":             "b",
		"site/index.html":           "<h1>index</h1>",
		"site/other.css":            "body{}",
		"sp ace/f.txt":              "space",
		"dots..name.txt":            "dots",
		"nested/deeper/index.html":  "<b>deep</b>",
		"nested/deeper/file.json":   `{"a":1}`,
		"unicode/\u00e9t\u00e9.txt": "summer",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "outside.txt"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside.txt", filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "secret.txt"), []byte("secret"), 0o000); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(base, "outside.txt"), staticTime, staticTime)
	filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		if err == nil {
			os.Chtimes(p, staticTime, staticTime)
		}
		return nil
	})
	return root
}

var staticHeaders = []string{"Content-Type", "Content-Length", "Content-Range", "Accept-Ranges", "Last-Modified",
	"Location", "Etag", "X-Content-Type-Options"}

var boundary = regexp.MustCompile(`[0-9a-f]{60}`)

// staticExchange is exchange with bodies and headers compared whole, but
// for multipart boundaries and the framing of the body.
func staticExchange(t *testing.T, addr string, raw string, methods []string) []answer {
	t.Helper()
	return exchangeFunc(t, addr, raw, methods, func(resp *http.Response, b []byte) answer {
		var hs []string
		for _, h := range staticHeaders {
			if v := resp.Header.Get(h); v != "" {
				hs = append(hs, h+": "+boundary.ReplaceAllString(v, "BOUNDARY"))
			}
		}
		if len(resp.TransferEncoding) > 0 {
			// Framing is the server's choice; the body is what counts.
			hs = slices.DeleteFunc(hs, func(s string) bool { return strings.HasPrefix(s, "Content-Length:") })
		}
		return answer{Code: resp.StatusCode, Headers: strings.Join(hs, "; "),
			Body: boundary.ReplaceAllString(string(b), "BOUNDARY"), Close: resp.Close}
	})
}

func sget(target string, headers ...string) string {
	return "GET " + target + " HTTP/1.1\r\n" + host + strings.Join(headers, "") + "\r\n"
}

func shead(target string, headers ...string) string {
	return "HEAD " + target + " HTTP/1.1\r\n" + host + strings.Join(headers, "") + "\r\n"
}

var (
	lastMod  = staticTime.Format(http.TimeFormat)
	before   = staticTime.Add(-time.Second).Format(http.TimeFormat)
	after    = staticTime.Add(time.Hour).Format(http.TimeFormat)
	rangeHdr = func(v string) string { return "Range: " + v + "\r\n" }
)

var staticCases = []struct {
	name    string
	raw     string
	methods []string
}{
	{name: "file", raw: sget("/hello.txt")},
	{name: "html by extension", raw: sget("/page.html")},
	{name: "sniffed text", raw: sget("/noext")},
	{name: "sniffed binary", raw: sget("/binary")},
	{name: "empty file", raw: sget("/empty.txt")},
	{name: "big file", raw: sget("/big.bin")},
	{name: "head file", raw: shead("/hello.txt"), methods: []string{"HEAD"}},
	{name: "head big", raw: shead("/big.bin"), methods: []string{"HEAD"}},
	{name: "head directory", raw: shead("/dir/"), methods: []string{"HEAD"}},
	{name: "not found", raw: sget("/nope.txt")},
	{name: "under a file", raw: sget("/hello.txt/x")},
	{name: "forbidden", raw: sget("/secret.txt")},
	{name: "dangling link", raw: sget("/dangling")},
	{name: "link out of the tree", raw: sget("/link.txt")},
	{name: "directory listing", raw: sget("/dir/")},
	{name: "root listing", raw: sget("/")},
	{name: "directory redirect", raw: sget("/dir")},
	{name: "directory redirect with query", raw: sget("/dir?a=1&b")},
	{name: "index", raw: sget("/site/")},
	{name: "index redirect", raw: sget("/site/index.html")},
	{name: "index redirect with query", raw: sget("/site/index.html?v=2")},
	{name: "nested index", raw: sget("/nested/deeper/")},
	{name: "file with slash", raw: sget("/hello.txt/")},
	{name: "escaped name", raw: sget("/sp%20ace/f.txt")},
	{name: "escaped listing names", raw: sget("/dir/x%26y%20%3Cz%3E.txt")},
	{name: "escaped question mark", raw: sget("/dir/q%3Fuery%23frag.txt")},
	{name: "unicode name", raw: sget("/unicode/%C3%A9t%C3%A9.txt")},
	{name: "double dots in a name", raw: sget("/dots..name.txt")},
	{name: "dotdot raw", raw: sget("/../../etc/passwd")},
	{name: "dotdot inside", raw: sget("/dir/../hello.txt")},
	{name: "dotdot escaped", raw: sget("/%2e%2e/%2e%2e/etc/passwd")},
	{name: "dotdot escaped slash", raw: sget("/..%2f..%2fetc%2fpasswd")},
	{name: "dotdot backslash", raw: sget("/..%5c..%5cetc%5cpasswd")},
	{name: "dotdot to outside", raw: sget("/../outside.txt")},
	{name: "double slash", raw: sget("//hello.txt")},
	{name: "dot segment", raw: sget("/./hello.txt")},
	{name: "encoded slash", raw: sget("/dir%2fa.txt")},
	{name: "nul byte", raw: sget("/hello.txt%00")},
	{name: "range first bytes", raw: sget("/hello.txt", rangeHdr("bytes=0-4"))},
	{name: "range open end", raw: sget("/hello.txt", rangeHdr("bytes=7-"))},
	{name: "range suffix", raw: sget("/hello.txt", rangeHdr("bytes=-6"))},
	{name: "range suffix too long", raw: sget("/hello.txt", rangeHdr("bytes=-600"))},
	{name: "range past end", raw: sget("/hello.txt", rangeHdr("bytes=5-600"))},
	{name: "range starts past end", raw: sget("/hello.txt", rangeHdr("bytes=600-700"))},
	{name: "range on empty file", raw: sget("/empty.txt", rangeHdr("bytes=0-10"))},
	{name: "range malformed unit", raw: sget("/hello.txt", rangeHdr("items=0-4"))},
	{name: "range malformed spec", raw: sget("/hello.txt", rangeHdr("bytes=abc"))},
	{name: "range reversed", raw: sget("/hello.txt", rangeHdr("bytes=5-2"))},
	{name: "range negative", raw: sget("/hello.txt", rangeHdr("bytes=--2"))},
	{name: "range empty list", raw: sget("/hello.txt", rangeHdr("bytes=,"))},
	{name: "multi range", raw: sget("/hello.txt", rangeHdr("bytes=0-1,4-6,-2"))},
	{name: "multi range overlapping", raw: sget("/hello.txt", rangeHdr("bytes=0-5,3-8"))},
	{name: "multi range over size", raw: sget("/hello.txt", rangeHdr("bytes=0-9,0-9"))},
	{name: "multi range one past end", raw: sget("/hello.txt", rangeHdr("bytes=0-1,500-600"))},
	{name: "multi range big", raw: sget("/big.bin", rangeHdr("bytes=0-99999,300000-450000"))},
	{name: "range big middle", raw: sget("/big.bin", rangeHdr("bytes=100000-400000"))},
	{name: "multi range html", raw: sget("/page.html", rangeHdr("bytes=0-0, 2-3"))},
	{name: "head range", raw: shead("/hello.txt", rangeHdr("bytes=0-4")), methods: []string{"HEAD"}},
	{name: "if-modified-since same", raw: sget("/hello.txt", "If-Modified-Since: "+lastMod+"\r\n")},
	{name: "if-modified-since before", raw: sget("/hello.txt", "If-Modified-Since: "+before+"\r\n")},
	{name: "if-modified-since after", raw: sget("/hello.txt", "If-Modified-Since: "+after+"\r\n")},
	{name: "if-modified-since junk", raw: sget("/hello.txt", "If-Modified-Since: yesterday\r\n")},
	{name: "if-modified-since directory", raw: sget("/dir/", "If-Modified-Since: "+lastMod+"\r\n")},
	{name: "if-unmodified-since before", raw: sget("/hello.txt", "If-Unmodified-Since: "+before+"\r\n")},
	{name: "if-unmodified-since same", raw: sget("/hello.txt", "If-Unmodified-Since: "+lastMod+"\r\n")},
	{name: "if-none-match star", raw: sget("/hello.txt", "If-None-Match: *\r\n")},
	{name: "if-none-match etag", raw: sget("/hello.txt", "If-None-Match: \"abc\"\r\n")},
	{name: "if-none-match beats if-modified-since", raw: sget("/hello.txt", "If-None-Match: \"abc\"\r\nIf-Modified-Since: "+lastMod+"\r\n")},
	{name: "if-match star", raw: sget("/hello.txt", "If-Match: *\r\n")},
	{name: "if-match etag", raw: sget("/hello.txt", "If-Match: \"abc\"\r\n")},
	{name: "if-match junk", raw: sget("/hello.txt", "If-Match: abc\r\n")},
	{name: "if-range date", raw: sget("/hello.txt", rangeHdr("bytes=0-3"), "If-Range: "+lastMod+"\r\n")},
	{name: "if-range old date", raw: sget("/hello.txt", rangeHdr("bytes=0-3"), "If-Range: "+before+"\r\n")},
	{name: "if-range etag", raw: sget("/hello.txt", rangeHdr("bytes=0-3"), "If-Range: \"abc\"\r\n")},
	{name: "head if-none-match", raw: shead("/hello.txt", "If-None-Match: *\r\n"), methods: []string{"HEAD"}},
	{name: "post", raw: "POST /hello.txt HTTP/1.1\r\n" + host + "Content-Length: 0\r\n\r\n"},
	{name: "post if-none-match", raw: "POST /hello.txt HTTP/1.1\r\n" + host + "If-None-Match: *\r\nContent-Length: 0\r\n\r\n"},
	{name: "pipelined", raw: sget("/big.bin") + sget("/hello.txt", rangeHdr("bytes=0-1,3-4")) + shead("/hello.txt") + sget("/dir") + sget("/big.bin", rangeHdr("bytes=1-300000")) + sget("/page.html"),
		methods: []string{"GET", "GET", "HEAD", "GET", "GET", "GET"}},
	{name: "http10", raw: "GET /hello.txt HTTP/1.0\r\n\r\n"},
	{name: "connection close", raw: sget("/big.bin", "Connection: close\r\n") + sget("/hello.txt")},
}

func TestStaticDifferential(t *testing.T) {
	root := staticTree(t)
	mux := web.NewMux()
	mux.Handle("/", web.FileServer(http.Dir(root)))
	mux.Handle("/static/", web.StripPrefix("/static", web.FileServer(http.Dir(root))))
	addr, _ := serve(t, &web.Server{Handler: mux})

	std := http.NewServeMux()
	std.Handle("/", http.FileServer(http.Dir(root)))
	std.Handle("/static/", http.StripPrefix("/static", http.FileServer(http.Dir(root))))
	stdAddr := serveStd(t, std)

	for _, prefix := range []string{"", "/static"} {
		for _, tc := range staticCases {
			t.Run(strings.TrimPrefix(prefix+"/", "/")+tc.name, func(t *testing.T) {
				raw := strings.ReplaceAll(tc.raw, " /", " "+prefix+"/")
				got := staticExchange(t, addr, raw, tc.methods)
				want := staticExchange(t, stdAddr, raw, tc.methods)
				if len(want) == 0 {
					t.Fatal("net/http answered nothing")
				}
				if !slices.Equal(got, want) {
					t.Errorf("answers differ\n web:      %v\n net/http: %v", short(got), short(want))
				}
			})
		}
	}
}

// short cuts long bodies for the failure message.
func short(as []answer) []answer {
	as = slices.Clone(as)
	for i := range as {
		if len(as[i].Body) > 300 {
			as[i].Body = as[i].Body[:300] + fmt.Sprintf("...(%d bytes)", len(as[i].Body))
		}
	}
	return as
}

// serveStd serves h with net/http until the test ends.
func serveStd(t testing.TB, h http.Handler) string {
	return serveStdServer(t, &http.Server{Handler: h})
}

// TestStaticFS serves an fs.FS (its files have no ReadAt: the copy path
// seeks and reads) and compares with net/http's FileServerFS.
func TestStaticFS(t *testing.T) {
	root := staticTree(t)
	os.Chmod(filepath.Join(root, "secret.txt"), 0o644)
	fsys := os.DirFS(root)
	addr, _ := serve(t, &web.Server{Handler: web.FileServerFS(fsys)})
	stdAddr := serveStd(t, http.FileServerFS(fsys))
	for _, raw := range []string{
		sget("/big.bin"), sget("/big.bin", rangeHdr("bytes=5-70000,200000-")), sget("/dir/"), sget("/noext"),
		sget("/site/"), sget("/../hello.txt"), sget("/link.txt"), shead("/big.bin"),
	} {
		methods := []string{raw[:strings.IndexByte(raw, ' ')]}
		got := staticExchange(t, addr, raw, methods)
		want := staticExchange(t, stdAddr, raw, methods)
		if !slices.Equal(got, want) {
			t.Errorf("%q: answers differ\n web:      %v\n net/http: %v", raw, short(got), short(want))
		}
	}
}

// TestServeFile compares ServeFile with net/http's, whose request path
// and file name differ.
func TestServeFile(t *testing.T) {
	root := staticTree(t)
	name := filepath.Join(root, "big.bin")
	addr, _ := serve(t, &web.Server{Handler: web.HandlerFunc(func(w *web.ResponseWriter, r *web.Request) {
		web.ServeFile(w, r, name)
	})})
	stdAddr := serveStd(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, name) }))
	for _, raw := range []string{sget("/x"), sget("/a/../x"), sget("/x/index.html"), sget("/x", rangeHdr("bytes=-10"))} {
		methods := []string{raw[:strings.IndexByte(raw, ' ')]}
		got := staticExchange(t, addr, raw, methods)
		want := staticExchange(t, stdAddr, raw, methods)
		if !slices.Equal(got, want) {
			t.Errorf("%q: answers differ\n web:      %v\n net/http: %v", raw, short(got), short(want))
		}
	}
}

// openCount counts the process's descriptors open on name.
func openCount(t *testing.T, name string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, e := range ents {
		if p, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && p == name {
			n++
		}
	}
	return n
}

// TestStaticCloseReleasesFiles: files being sent to clients that do not
// read are closed once the server, or the executor, closes.
func TestStaticCloseReleasesFiles(t *testing.T) {
	root := staticTree(t)
	name := filepath.Join(root, "big.bin")
	for _, how := range []string{"server", "executor"} {
		t.Run(how, func(t *testing.T) {
			srv := &web.Server{Handler: web.FileServer(http.Dir(root))}
			addr, ex := serve(t, srv)
			for range 4 {
				c := dial(t, addr) // closed when the test ends
				// Many requests, never read: the sends wait on full sockets.
				go io.WriteString(c, strings.Repeat(sget("/big.bin"), 50))
			}
			// Wait until the server holds the file open for them.
			for deadline := time.Now().Add(10 * time.Second); openCount(t, name) < 4; {
				if time.Now().After(deadline) {
					t.Fatalf("the file is open %d times, want 4", openCount(t, name))
				}
				time.Sleep(time.Millisecond)
			}
			if how == "server" {
				srv.Close()
			} else {
				ex.Close()
			}
			for deadline := time.Now().Add(10 * time.Second); openCount(t, name) > 0; {
				if time.Now().After(deadline) {
					t.Fatalf("the file is still open %d times after the %s closed", openCount(t, name), how)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// panicFS is a file system whose Open panics.
type panicFS struct{}

func (panicFS) Open(string) (http.File, error) { panic("broken file system") }

// TestStaticRootPanics: a panic in the root's code, which runs on the file
// workers, is recovered there: the request gets a 500 and the connection
// goes on serving.
func TestStaticRootPanics(t *testing.T) {
	addr, _ := serve(t, &web.Server{Handler: web.FileServer(panicFS{})})
	got := staticExchange(t, addr, sget("/a.txt")+sget("/b.txt"), nil)
	if len(got) != 2 || got[0].Code != http.StatusInternalServerError || got[1].Code != http.StatusInternalServerError || got[0].Close {
		t.Fatalf("answers %v, want two 500s on one connection", short(got))
	}
}
