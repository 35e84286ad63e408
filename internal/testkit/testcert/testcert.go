// Package testcert makes X.509 certificates for tests and benchmarks when
// they run: a certificate authority (New), certificates it signs for
// servers and clients (CA.Server, CA.Client), and the PEM files servers
// read (CA.WriteFiles). Keys are ECDSA P-256, made from crypto/rand each
// time, and certificates are valid from an hour ago to a day from now;
// nothing secret is kept in the repository.
//
// It does not import package testing, so non-test code that serves test
// loads (bench/netcase) can use it too; its errors are returned, and the
// Must forms panic.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// CA is a certificate authority made by New.
type CA struct {
	// Cert is the CA's certificate, DER its encoding.
	Cert *x509.Certificate
	DER  []byte
	// Pool trusts the CA (and nothing else).
	Pool   *x509.CertPool
	key    *ecdsa.PrivateKey
	serial atomic.Int64
}

// New makes a certificate authority named name.
func New(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testcert: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testcert: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("testcert: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	ca := &CA{Cert: cert, DER: der, Pool: pool, key: key}
	ca.serial.Store(1)
	return ca, nil
}

// MustNew is New that panics on an error.
func MustNew(name string) *CA {
	ca, err := New(name)
	if err != nil {
		panic(err)
	}
	return ca
}

// Server returns a server certificate signed by ca for names: each is an
// IP address or a DNS name.
func (ca *CA) Server(names ...string) (tls.Certificate, error) {
	return ca.issue(x509.ExtKeyUsageServerAuth, names)
}

// Client returns a client certificate signed by ca, whose common name is
// names joined with commas.
func (ca *CA) Client(names ...string) (tls.Certificate, error) {
	return ca.issue(x509.ExtKeyUsageClientAuth, names)
}

// MustServer is Server that panics on an error.
func (ca *CA) MustServer(names ...string) tls.Certificate { return must(ca.Server(names...)) }

// MustClient is Client that panics on an error.
func (ca *CA) MustClient(names ...string) tls.Certificate { return must(ca.Client(names...)) }

func (ca *CA) issue(usage x509.ExtKeyUsage, names []string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testcert: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial.Add(1)),
		Subject:      pkix.Name{CommonName: strings.Join(names, ",")},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		addNames(tmpl, names)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testcert: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testcert: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// Files names the PEM files WriteFiles writes.
type Files struct {
	CA   string // the CA's certificate
	Cert string // the server's certificate
	Key  string // its private key (PKCS #8)
}

// WriteFiles writes to dir the CA's certificate (ca.pem), and a server
// certificate it signs for names (cert.pem) with its key (key.pem), the
// key readable by the owner only, and returns their paths.
func (ca *CA) WriteFiles(dir string, names ...string) (Files, error) {
	cert, err := ca.Server(names...)
	if err != nil {
		return Files{}, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return Files{}, fmt.Errorf("testcert: %w", err)
	}
	f := Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem")}
	for _, w := range []struct {
		path string
		b    *pem.Block
	}{
		{f.CA, &pem.Block{Type: "CERTIFICATE", Bytes: ca.DER}},
		{f.Cert, &pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}},
		{f.Key, &pem.Block{Type: "PRIVATE KEY", Bytes: kb}},
	} {
		if err := os.WriteFile(w.path, pem.EncodeToMemory(w.b), 0o600); err != nil {
			return Files{}, fmt.Errorf("testcert: %w", err)
		}
	}
	return f, nil
}

// SelfSigned returns a self-signed server certificate for names (IP
// addresses or DNS names), for a server whose clients check no
// certificate.
func SelfSigned(names ...string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testcert: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: strings.Join(names, ",")},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	addNames(tmpl, names)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testcert: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// MustSelfSigned is SelfSigned that panics on an error.
func MustSelfSigned(names ...string) tls.Certificate { return must(SelfSigned(names...)) }

// addNames names tmpl's subject: each name an IP address or a DNS name.
func addNames(tmpl *x509.Certificate, names []string) {
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
}

func must(c tls.Certificate, err error) tls.Certificate {
	if err != nil {
		panic(err)
	}
	return c
}
