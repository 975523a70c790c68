package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/client"
)

// testPKI is a CA made in the test, with a server certificate for
// 127.0.0.1 and a client certificate, written as PEM files.
type testPKI struct {
	dir                           string
	caFile, certFile, keyFile     string
	clientCertFile, clientKeyFile string
	pool                          *x509.CertPool
	clientCert                    tls.Certificate
	otherPool                     *x509.CertPool // a CA that signed nothing here
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	p := &testPKI{dir: dir}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return path
	}
	writeKey := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalECPrivateKey(k)
		require.NoError(t, err)
		return write(name, "EC PRIVATE KEY", der)
	}
	newCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
		require.NoError(t, err)
		c, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		return c, k, der
	}
	ca, caKey, caDER := newCA("weft test CA")
	p.caFile = write("ca.pem", "CERTIFICATE", caDER)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(ca)
	other, _, _ := newCA("another CA")
	p.otherPool = x509.NewCertPool()
	p.otherPool.AddCert(other)

	leaf := func(serial int64, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "weft"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		require.NoError(t, err)
		return der, k
	}
	der, k := leaf(2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	p.certFile, p.keyFile = write("server.pem", "CERTIFICATE", der), writeKey("server-key.pem", k)
	der, k = leaf(3, x509.ExtKeyUsageClientAuth, nil)
	p.clientCertFile, p.clientKeyFile = write("client.pem", "CERTIFICATE", der), writeKey("client-key.pem", k)
	cc, err := tls.LoadX509KeyPair(p.clientCertFile, p.clientKeyFile)
	require.NoError(t, err)
	p.clientCert = cc
	return p
}

func dialWith(t *testing.T, addr string, opts client.Options) *client.Client {
	c, err := client.Dial(addr, opts)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func callCode(c *client.Client) (codes.Code, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.Branches(ctx, "robotics")
	st := status.Convert(err)
	return st.Code(), st.Message()
}

// TestTLSAndTokens: a real flightd with TLS (a certificate made here) and
// tokens on loopback; the Go client connects over TLS with the CA and a
// token; a plaintext client, a client that does not trust the CA, and a
// client without a token are refused.
func TestTLSAndTokens(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	code, secret, msg := runAdmin(t, "token", "create", "--store", dir, "--global-admin", "--name", "root")
	require.Equal(t, exitOK, code, msg)
	secret = strings.TrimSpace(secret)
	p := startFlightd(t, nil, "--store", dir, "--auth", "tokens", "--tls-cert", pki.certFile, "--tls-key", pki.keyFile)

	tlsCfg := &tls.Config{RootCAs: pki.pool, MinVersion: tls.VersionTLS12}
	c := dialWith(t, p.addr, client.Options{TLS: tlsCfg, Token: secret})
	_, err := c.CreateProject(context.Background(), "robotics")
	require.NoError(t, err)
	got, msg := callCode(c)
	require.Equal(t, codes.OK, got, msg)

	for name, opts := range map[string]client.Options{
		"plaintext":    {Token: secret},
		"untrusted CA": {TLS: &tls.Config{RootCAs: pki.otherPool}, Token: secret},
	} {
		got, msg := callCode(dialWith(t, p.addr, opts))
		require.Equal(t, codes.Unavailable, got, "%s: %s", name, msg)
	}
	got, msg = callCode(dialWith(t, p.addr, client.Options{TLS: tlsCfg}))
	require.Equal(t, codes.Unauthenticated, got, msg)
	require.GreaterOrEqual(t, len(msg), 20)
}

// TestMutualTLS: with --tls-client-ca, a client without a certificate
// signed by that CA cannot connect; one with it can.
func TestMutualTLS(t *testing.T) {
	pki := newTestPKI(t)
	p := startFlightd(t, nil, "--store", t.TempDir(), "--tls-cert", pki.certFile, "--tls-key", pki.keyFile, "--tls-client-ca", pki.caFile)
	with := dialWith(t, p.addr, client.Options{TLS: &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.clientCert}}})
	_, err := with.CreateProject(context.Background(), "robotics")
	require.NoError(t, err)
	got, msg := callCode(dialWith(t, p.addr, client.Options{TLS: &tls.Config{RootCAs: pki.pool}}))
	require.Equal(t, codes.Unavailable, got, msg)
}

// TestNonLoopbackRule: serving a non-loopback address without TLS and
// tokens exits 2 with a message saying what to give; with --insecure it
// serves, and says so at warn level.
func TestNonLoopbackRule(t *testing.T) {
	pki := newTestPKI(t)
	for name, args := range map[string][]string{
		"nothing":         {},
		"tokens, no TLS":  {"--auth", "tokens"},
		"TLS, auth none":  {"--tls-cert", pki.certFile, "--tls-key", pki.keyFile, "--auth", "none"},
		"half a TLS pair": {"--tls-cert", pki.certFile},
		"client CA alone": {"--tls-client-ca", pki.caFile},
		"bad auth mode":   {"--auth", "maybe"},
		"unreadable cert": {"--tls-cert", filepath.Join(pki.dir, "nope.pem"), "--tls-key", pki.keyFile},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut syncBuffer
			code := run(context.Background(), append([]string{"serve", "--store", t.TempDir(), "--addr", "0.0.0.0:0"}, args...), &out, &errOut)
			require.Equal(t, exitUsage, code, errOut.String())
			require.NotContains(t, errOut.String(), `msg=serving`)
			if name == "nothing" || name == "tokens, no TLS" {
				require.Contains(t, errOut.String(), "is not a loopback address")
				require.Contains(t, errOut.String(), "--tls-cert")
				require.Contains(t, errOut.String(), "--insecure")
			}
		})
	}
	t.Run("insecure", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var out, errOut syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--store", t.TempDir(), "--addr", "0.0.0.0:0", "--insecure", "--log-format", "json"}, &out, &errOut)
		}()
		require.Eventually(t, func() bool { return strings.Contains(errOut.String(), `"msg":"serving"`) }, 20*time.Second, 10*time.Millisecond)
		cancel()
		require.Equal(t, exitOK, <-done, errOut.String())
		require.Contains(t, errOut.String(), `"level":"WARN","msg":"INSECURE`)
	})
	t.Run("with TLS and tokens", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var out, errOut syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--store", t.TempDir(), "--addr", "0.0.0.0:0", "--tls-cert", pki.certFile, "--tls-key", pki.keyFile, "--log-format", "json"}, &out, &errOut)
		}()
		require.Eventually(t, func() bool { return strings.Contains(errOut.String(), `"msg":"serving"`) }, 20*time.Second, 10*time.Millisecond)
		cancel()
		require.Equal(t, exitOK, <-done, errOut.String())
		require.NotContains(t, errOut.String(), "INSECURE")
		require.Contains(t, errOut.String(), `"auth":"tokens"`)
	})
}
