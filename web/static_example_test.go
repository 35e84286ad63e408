package web_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
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

	ex := executor.New()
	ex.Start()
	defer ex.Close()
	mux := web.NewMux()
	mux.Handle("GET /static/", web.StripPrefix("/static", web.FileServer(http.Dir(dir))))
	srv := &web.Server{Handler: mux}
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv.Serve(l)
	defer srv.Close()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	req, _ := http.NewRequest("GET", "http://"+l.Addr().String()+"/static/hello.txt", nil)
	req.Header.Set("Range", "bytes=7-")
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Range"))
	fmt.Printf("%q\n", b)
	// Output:
	// 206 text/plain; charset=utf-8 bytes 7-12/13
	// "world\n"
}
