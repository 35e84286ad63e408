package netio_test

import (
	"bytes"
	"fmt"
	"testing"
)

func TestEcho(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	echo(l)
	for _, size := range []int{1, 64, 100 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			nc := dialNet(t, l)
			msg := bytes.Repeat([]byte("x"), size)
			for i := range msg {
				msg[i] = byte(i)
			}
			go nc.Write(msg)
			if got := readN(t, nc, size); !bytes.Equal(got, msg) {
				t.Fatalf("echoed %d bytes differ", size)
			}
		})
	}
}
