package websocket_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/wsclient"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web/websocket"
)

type frame = wsclient.Frame

const (
	opCont   = wsclient.OpContinuation
	opText   = wsclient.OpText
	opBinary = wsclient.OpBinary
	opClose  = wsclient.OpClose
	opPing   = wsclient.OpPing
	opPong   = wsclient.OpPong
)

// echoServer serves WebSocket echo on a loopback listener: every netio
// connection is taken as upgraded already (no HTTP), so a test speaks
// frames at once. ended receives how each connection ended.
func echoServer(t *testing.T, opts ...websocket.Option) (addr string, ended chan error) {
	return echoServerB(t, opts...)
}

func echoServerB(t testing.TB, opts ...websocket.Option) (addr string, ended chan error) {
	t.Helper()
	ex := executor.New(executor.WithName(t.Name()))
	ex.Start()
	t.Cleanup(func() { ex.Close() })
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ended = make(chan error, 16)
	netio.Serve(l, func(nc *netio.Conn) {
		c := websocket.NewConn(nc, nil, opts...)
		c.Serve(func(c *websocket.Conn, m websocket.Message) {
			c.WriteMessage(m.Type, m.Data)
		}, func(err error) {
			select {
			case ended <- err:
			default: // a test that does not look
			}
		})
	})
	return l.Addr().String(), ended
}

func dialRaw(t *testing.T, addr string) *wsclient.Client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &wsclient.Client{C: nc, R: newReader(nc), Key: [4]byte{0xA1, 0x07, 0x3C, 0xF0}}
}

func text(s string) frame   { return frame{Fin: true, Op: opText, Payload: []byte(s)} }
func binary(p []byte) frame { return frame{Fin: true, Op: opBinary, Payload: p} }
func closeF(code int, reason string) frame {
	return frame{Fin: true, Op: opClose, Payload: wsclient.ClosePayload(code, reason)}
}

var normalClose = closeF(1000, "")

// seen is a frame the client read, in short: "text:hello", "pong:x",
// "close:1000".
func seen(f frame) string {
	switch f.Op {
	case opText:
		return "text:" + string(f.Payload)
	case opBinary:
		return fmt.Sprintf("binary:%d:%x", len(f.Payload), head(f.Payload))
	case opPong:
		return "pong:" + string(f.Payload)
	case opClose:
		return fmt.Sprintf("close:%d", wsclient.CloseCode(f.Payload))
	case opPing:
		return "ping:" + string(f.Payload)
	}
	return fmt.Sprintf("op%d", f.Op)
}

func head(p []byte) []byte { return p[:min(len(p), 8)] }

func raw(f frame, masked bool) []byte {
	return wsclient.AppendFrame(nil, f, masked, [4]byte{1, 2, 3, 4})
}

func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

func TestFrames(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 70000/16)
	cases := []struct {
		name string
		send []frame
		raw  []byte // sent after send, as it is
		want []string
	}{
		{"text", []frame{text("hello"), normalClose}, nil, []string{"text:hello", "close:1000"}},
		{"empty text", []frame{text(""), normalClose}, nil, []string{"text:", "close:1000"}},
		{"binary 126", []frame{binary(big[:126]), normalClose}, nil, []string{"binary:126:3031323334353637", "close:1000"}},
		{"binary 70000", []frame{binary(big), normalClose}, nil, []string{fmt.Sprintf("binary:%d:3031323334353637", len(big)), "close:1000"}},
		{"fragmented text", []frame{{Op: opText, Payload: []byte("he")}, {Op: opCont, Payload: []byte("ll")}, {Fin: true, Op: opCont, Payload: []byte("o")}, normalClose}, nil,
			[]string{"text:hello", "close:1000"}},
		{"fragmented binary, empty fragments", []frame{{Op: opBinary}, {Op: opCont, Payload: []byte{9}}, {Fin: true, Op: opCont}, normalClose}, nil,
			[]string{"binary:1:09", "close:1000"}},
		{"ping in a fragmented message", []frame{{Op: opText, Payload: []byte("a")}, {Fin: true, Op: opPing, Payload: []byte("p")}, {Fin: true, Op: opCont, Payload: []byte("b")}, normalClose}, nil,
			[]string{"pong:p", "text:ab", "close:1000"}},
		{"ping", []frame{{Fin: true, Op: opPing, Payload: []byte("are you there")}, normalClose}, nil, []string{"pong:are you there", "close:1000"}},
		{"ping of 125 bytes", []frame{{Fin: true, Op: opPing, Payload: bytes.Repeat([]byte("x"), 125)}, normalClose}, nil, []string{"pong:" + strings.Repeat("x", 125), "close:1000"}},
		{"pong dropped", []frame{{Fin: true, Op: opPong, Payload: []byte("unasked")}, text("x"), normalClose}, nil, []string{"text:x", "close:1000"}},
		{"utf-8 split inside a rune", []frame{{Op: opText, Payload: []byte("\xce")}, {Fin: true, Op: opCont, Payload: []byte("\xba")}, normalClose}, nil, []string{"text:κ", "close:1000"}},
		{"close empty", []frame{{Fin: true, Op: opClose}}, nil, []string{"close:1005"}},
		{"close 1000 with reason", []frame{closeF(1000, "bye")}, nil, []string{"close:1000"}},
		{"close 3000", []frame{closeF(3000, "")}, nil, []string{"close:3000"}},
		{"close 4999", []frame{closeF(4999, "")}, nil, []string{"close:4999"}},
		{"data after close dropped", []frame{normalClose, text("late")}, nil, []string{"close:1000"}},

		{"unmasked", nil, raw(text("x"), false), []string{"close:1002"}},
		{"rsv1", []frame{{Fin: true, Rsv: 0x40, Op: opText, Payload: []byte("x")}}, nil, []string{"close:1002"}},
		{"rsv3", []frame{{Fin: true, Rsv: 0x10, Op: opBinary}}, nil, []string{"close:1002"}},
		{"opcode 3", []frame{{Fin: true, Op: 3}}, nil, []string{"close:1002"}},
		{"opcode 0xB", []frame{{Fin: true, Op: 0xB}}, nil, []string{"close:1002"}},
		{"continuation first", []frame{{Fin: true, Op: opCont, Payload: []byte("x")}}, nil, []string{"close:1002"}},
		{"text inside fragments", []frame{{Op: opText, Payload: []byte("a")}, text("b")}, nil, []string{"close:1002"}},
		{"fragmented ping", []frame{{Op: opPing, Payload: []byte("a")}}, nil, []string{"close:1002"}},
		{"ping of 126 bytes", []frame{{Fin: true, Op: opPing, Payload: bytes.Repeat([]byte("x"), 126)}}, nil, []string{"close:1002"}},
		{"close of 126 bytes", []frame{{Fin: true, Op: opClose, Payload: append([]byte{3, 232}, bytes.Repeat([]byte("x"), 124)...)}}, nil, []string{"close:1002"}},
		{"invalid utf-8", []frame{text("\xff")}, nil, []string{"close:1007"}},
		{"surrogate", []frame{text("\xed\xa0\x80")}, nil, []string{"close:1007"}},
		{"invalid utf-8 across fragments", []frame{{Op: opText, Payload: []byte("\xce\xba\xe1\xbd")}, {Fin: true, Op: opCont, Payload: []byte("\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80edited")}}, nil, []string{"close:1007"}},
		{"truncated utf-8 at the end", []frame{{Op: opText, Payload: []byte("ok")}, {Fin: true, Op: opCont, Payload: []byte("\xe2\x82")}}, nil, []string{"close:1007"}},
		{"invalid utf-8 fails fast", []frame{{Op: opText, Payload: []byte("\xc0")}}, nil, []string{"close:1007"}},
		{"close 1005", []frame{closeF(1005, "")}, nil, []string{"close:1002"}},
		{"close 1006", []frame{closeF(1006, "")}, nil, []string{"close:1002"}},
		{"close 1015", []frame{closeF(1015, "")}, nil, []string{"close:1002"}},
		{"close 999", []frame{closeF(999, "")}, nil, []string{"close:1002"}},
		{"close 1004", []frame{closeF(1004, "")}, nil, []string{"close:1002"}},
		{"close 2999", []frame{closeF(2999, "")}, nil, []string{"close:1002"}},
		{"close 5000", []frame{closeF(5000, "")}, nil, []string{"close:1002"}},
		{"close payload of 1 byte", []frame{{Fin: true, Op: opClose, Payload: []byte{3}}}, nil, []string{"close:1002"}},
		{"close reason not utf-8", []frame{closeF(1000, "\xff")}, nil, []string{"close:1007"}},
		{"length not shortest", nil, []byte{0x81, 0x80 | 126, 0, 5, 1, 2, 3, 4, 'h' ^ 1, 'e' ^ 2, 'l' ^ 3, 'l' ^ 4, 'o' ^ 1}, []string{"close:1002"}},
		{"length top bit", nil, []byte{0x82, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}, []string{"close:1002"}},
		{"too big", nil, []byte{0x82, 0x80 | 127, 0, 0, 0, 0, 0, 0x10, 0, 1, 1, 2, 3, 4}, []string{"close:1009"}},
	}
	addr, _ := echoServer(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr)
			b := cat(frames(tc.send), tc.raw)
			if err := c.SendRaw(b); err != nil {
				t.Fatal(err)
			}
			got := readAll(t, c)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func frames(fs []frame) []byte {
	var b []byte
	for _, f := range fs {
		b = wsclient.AppendFrame(b, f, true, [4]byte{0xA1, 0x07, 0x3C, 0xF0})
	}
	return b
}

// readAll reads the server's frames until its close frame, then checks
// the server closes the TCP connection.
func readAll(t *testing.T, c *wsclient.Client) []string {
	t.Helper()
	var got []string
	for {
		f, err := c.Read()
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		if !f.Fin {
			t.Fatalf("the server sent a fragment: %q", seen(f))
		}
		got = append(got, seen(f))
		if f.Op == opClose {
			break
		}
	}
	if n, err := io.Copy(io.Discard, c.R); err != nil || n != 0 {
		t.Errorf("after the close frame: %d bytes, %v; want EOF", n, err)
	}
	return got
}

// TestSplits sends the same frames one byte per write and in one write:
// whatever the receives hold, the answers are the same.
func TestSplits(t *testing.T) {
	addr, _ := echoServer(t)
	msg := strings.Repeat("κόσμε ", 50)
	send := frames([]frame{
		{Op: opText, Payload: []byte(msg[:7])},
		{Fin: true, Op: opPing, Payload: []byte("p")},
		{Fin: true, Op: opCont, Payload: []byte(msg[7:])},
		binary(bytes.Repeat([]byte{7}, 300)),
		normalClose,
	})
	want := []string{"pong:p", "text:" + msg, "binary:300:0707070707070707", "close:1000"}
	for _, step := range []int{1, 3, 7, 64, len(send)} {
		t.Run(fmt.Sprint(step), func(t *testing.T) {
			c := dialRaw(t, addr)
			c.C.(*net.TCPConn).SetNoDelay(true)
			for i := 0; i < len(send); i += step {
				if err := c.SendRaw(send[i:min(i+step, len(send))]); err != nil {
					t.Fatal(err)
				}
			}
			if got := readAll(t, c); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
	}
}

func TestMaxMessageSize(t *testing.T) {
	addr, ended := echoServer(t, websocket.WithMaxMessageSize(1000))
	cases := []struct {
		name string
		send []frame
		want []string
	}{
		{"at the limit", []frame{binary(make([]byte, 1000)), normalClose}, []string{"binary:1000:0000000000000000", "close:1000"}},
		{"one frame over", []frame{binary(make([]byte, 1001))}, []string{"close:1009"}},
		{"fragments over", []frame{{Op: opText, Payload: make([]byte, 600)}, {Fin: true, Op: opCont, Payload: make([]byte, 401)}}, []string{"close:1009"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr)
			c.SendRaw(frames(tc.send))
			if got := readAll(t, c); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			err := <-ended
			ce, ok := err.(*websocket.CloseError)
			if !ok {
				t.Fatalf("ended with %v, want a *CloseError", err)
			}
			want := 1000
			if tc.want[len(tc.want)-1] == "close:1009" {
				want = 1009
			}
			if ce.Code != want || ce.Remote != (want == 1000) {
				t.Errorf("ended with %+v, want code %d", ce, want)
			}
		})
	}
}

// TestAbnormal: a peer that goes away without a close frame ends the
// Conn with CloseAbnormal.
func TestAbnormal(t *testing.T) {
	addr, ended := echoServer(t)
	c := dialRaw(t, addr)
	c.Send(text("x"))
	if _, err := c.Read(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	err := <-ended
	if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != websocket.CloseAbnormal || ce.Remote {
		t.Fatalf("ended with %v, want close 1006", err)
	}
}
