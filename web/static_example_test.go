package web_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/spindle-rt/spindle/web"
	"github.com/spindle-rt/spindle/web/webtest"
)

// A directory served under /static/, as with net/http's FileServer and
// StripPrefix: the loop answers, the pool opens the files, and the bodies
// go by sendfile.
func ExampleFileServer() {
	dir, err := os.MkdirTemp("", "static")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello, world\n"), 0o644)

	mux := web.NewMux()
	mux.Handle("GET /static/", web.StripPrefix("/static", web.FileServer(http.Dir(dir))))

	req := webtest.NewRequest("GET", "/static/hello.txt", nil)
	req.Header.Set("Range", "bytes=7-")
	resp := webtest.Do(mux, req)
	fmt.Println(resp.Code, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Range"))
	fmt.Printf("%q\n", resp.Body)
	// Output:
	// 206 text/plain; charset=utf-8 bytes 7-12/13
	// "world\n"
}
