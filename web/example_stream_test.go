package web_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
)

// hasher answers a PUT with the SHA-256 of its body, which it reads as it
// arrives, off the loop, whatever its size.
type hasher struct{}

func (hasher) StreamBody(r *web.Request) bool { return r.Method() == "PUT" }

func (hasher) ServeHTTP(w *web.ResponseWriter, r *web.Request) {
	body := r.BodyStream()
	if body == nil { // it came whole, with the head
		fmt.Fprintf(w, "%x (whole)", sha256.Sum256(r.Body()))
		return
	}
	w.Later()
	go func() {
		h := sha256.New()
		_, err := io.Copy(h, body)
		w.Executor().Submit(func() { // back on the loop to answer
			if err != nil {
				web.Error(w, err.Error(), http.StatusBadRequest)
			} else {
				fmt.Fprintf(w, "%x (streamed)", h.Sum(nil))
			}
			w.End()
		})
	}()
}

// A handler of the program's own takes a large upload as a stream
// (BodyStreamer), behind a Mux route.
func ExampleBodyStreamer() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	mux := web.NewMux()
	mux.Handle("PUT /blob/{name}", hasher{})
	srv := &web.Server{Handler: mux}
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv.Serve(l)
	defer srv.Close()

	body := bytes.Repeat([]byte("spindle "), 1<<17) // 1 MiB
	req, _ := http.NewRequest("PUT", "http://"+l.Addr().String()+"/blob/a", bytes.NewReader(body))
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	fmt.Println(string(got) == fmt.Sprintf("%x (streamed)", sha256.Sum256(body)))
	// Output:
	// true
}
