package webtest_test

import (
	"fmt"

	"github.com/spindle-rt/spindle/web"
	"github.com/spindle-rt/spindle/web/webtest"
)

// Testing a loop handler without a socket.
func ExampleDo() {
	mux := web.NewMux()
	mux.HandleFunc("GET /kv/{key}", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteString("value of " + r.PathValue("key"))
	})
	rec := webtest.Do(mux, webtest.NewRequest("GET", "/kv/a", nil))
	fmt.Println(rec.Code, rec.Header.Get("Content-Type"), string(rec.Body))
	rec = webtest.Do(mux, webtest.NewRequest("DELETE", "/kv/a", nil))
	fmt.Println(rec.Code, rec.Header.Get("Allow"))
	// Output:
	// 200 application/octet-stream value of a
	// 405 GET, HEAD
}
