package netio_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

// refuser takes the first listener it is given and refuses the others.
type refuser struct{ got []*netio.Listener }

var errRefused = errors.New("refused")

func (r *refuser) Serve(l *netio.Listener) error {
	r.got = append(r.got, l)
	if len(r.got) > 1 {
		return errRefused
	}
	return nil
}

// ServeGroupOn hands each shard's listener to the server; when the server
// refuses one, every listener is closed, those it took included, and its
// error returned.
func TestServeGroupOnRefused(t *testing.T) {
	g := shard.New(3)
	g.Start()
	defer g.Close()
	srv := &refuser{}
	ls, err := netio.ServeGroupOn(srv, g, "tcp", "127.0.0.1:0")
	if !errors.Is(err, errRefused) || ls != nil {
		t.Fatalf("ServeGroupOn: %v, %v; want nil and the server's error", ls, err)
	}
	if len(srv.got) != 2 {
		t.Fatalf("the server was given %d listeners, want 2 (it refused the second)", len(srv.got))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, l := range srv.got {
		if _, err := l.Accept().Await(ctx); !errors.Is(err, net.ErrClosed) {
			t.Errorf("listener %d: Accept: %v, want net.ErrClosed", i, err)
		}
	}
}
