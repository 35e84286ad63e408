package testcert_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/internal/testkit/testcert"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// handshake runs a TLS handshake over a loopback connection between a
// server with srv and a client with cli, and returns the client's and the
// server's errors.
func handshake(srv, cli *tls.Config) (cerr, serr error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err, err
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		a, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer a.Close()
		a.SetDeadline(time.Now().Add(time.Minute))
		done <- tls.Server(a, srv).Handshake()
	}()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err, <-done
	}
	b.SetDeadline(time.Now().Add(time.Minute))
	cerr = tls.Client(b, cli).Handshake()
	b.Close()
	return cerr, <-done
}

// The certificates verify for the names they were made for and no other,
// and a client certificate passes client authentication.
func TestCertificates(t *testing.T) {
	ca := testcert.MustNew("test CA")
	other := testcert.MustNew("another CA")
	srv := ca.MustServer("localhost", "127.0.0.1")
	for _, tt := range []struct {
		name   string
		server tls.Certificate
		pool   *x509.CertPool
		sni    string
		ok     bool
	}{
		{"DNS name", srv, ca.Pool, "localhost", true},
		{"IP address", srv, ca.Pool, "127.0.0.1", true},
		{"another name", srv, ca.Pool, "example.com", false},
		{"another CA", srv, other.Pool, "localhost", false},
		{"self-signed, untrusted", testcert.MustSelfSigned("localhost"), ca.Pool, "localhost", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cerr, _ := handshake(&tls.Config{Certificates: []tls.Certificate{tt.server}},
				&tls.Config{RootCAs: tt.pool, ServerName: tt.sni})
			if (cerr == nil) != tt.ok {
				t.Fatalf("handshake: %v, want ok %v", cerr, tt.ok)
			}
		})
	}
	t.Run("client certificate", func(t *testing.T) {
		cli := ca.MustClient("alice")
		cerr, serr := handshake(
			&tls.Config{Certificates: []tls.Certificate{srv}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool},
			&tls.Config{RootCAs: ca.Pool, ServerName: "localhost", Certificates: []tls.Certificate{cli}})
		if cerr != nil || serr != nil {
			t.Fatalf("handshake: client %v, server %v", cerr, serr)
		}
		if cli.Leaf.Subject.CommonName != "alice" {
			t.Fatalf("common name %q", cli.Leaf.Subject.CommonName)
		}
	})
}

// WriteFiles writes PEM files that tls.LoadX509KeyPair reads, the key
// readable by its owner only; a missing directory is an error.
func TestWriteFiles(t *testing.T) {
	ca := testcert.MustNew("test CA")
	f, err := ca.WriteFiles(t.TempDir(), "localhost")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("ca.pem holds no certificate")
	}
	if cerr, _ := handshake(&tls.Config{Certificates: []tls.Certificate{cert}}, &tls.Config{RootCAs: pool, ServerName: "localhost"}); cerr != nil {
		t.Fatal(cerr)
	}
	if st, err := os.Stat(f.Key); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key.pem: %v, %v", st.Mode(), err)
	}
	if _, err := ca.WriteFiles(t.TempDir()+"/missing", "localhost"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("WriteFiles into a missing directory: %v", err)
	}
}

func Example() {
	ca := testcert.MustNew("example CA")
	srv := &tls.Config{Certificates: []tls.Certificate{ca.MustServer("localhost")}}
	cli := &tls.Config{RootCAs: ca.Pool, ServerName: "localhost"}
	cerr, serr := handshake(srv, cli)
	fmt.Println(cerr, serr)
	// Output: <nil> <nil>
}
