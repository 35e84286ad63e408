package websocket_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/wsclient"
)

// BenchmarkEcho: one client, one 64-byte binary message in flight; the
// client reads the echo into a fixed buffer, so allocs/op are the
// server's.
func BenchmarkEcho(b *testing.B) {
	addr, _ := echoServerB(b)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Minute))
	msg := wsclient.AppendFrame(nil, wsclient.Frame{Fin: true, Op: wsclient.OpBinary, Payload: make([]byte, 64)}, true, [4]byte{1, 2, 3, 4})
	echo := make([]byte, 2+64)
	round := func() {
		if _, err := nc.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(nc, echo); err != nil {
			b.Fatal(err)
		}
	}
	for range 100 {
		round()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		round()
	}
}
