package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
)

// securityConfig is what `flightd serve` takes from its TLS and auth flags.
//
// The rule: on a loopback --addr (127.0.0.1, ::1, localhost) the server
// may run open, as in development. On any other address it refuses to
// start without TLS and tokens, unless --insecure says so (logged at warn
// on every start).
type securityConfig struct {
	tlsCert, tlsKey, tlsClientCA string
	// auth is "none", "tokens", or "" (none on a loopback --addr, tokens
	// otherwise).
	auth     string
	insecure bool
}

// Auth modes of --auth.
const (
	authNone   = "none"
	authTokens = "tokens"
)

func securityFlags(fs *flag.FlagSet, c *securityConfig) {
	fs.StringVar(&c.tlsCert, "tls-cert", "", "serve TLS (clients use grpc+tls://) with this PEM certificate `FILE` (the chain, leaf first); needs --tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM private key `FILE` of --tls-cert")
	fs.StringVar(&c.tlsClientCA, "tls-client-ca", "", "mutual TLS: accept only clients with a certificate signed by a CA in this PEM `FILE`")
	fs.StringVar(&c.auth, "auth", "", "`MODE`: none (every caller may do everything) or tokens (bearer tokens from 'flightd admin token create'); default none on a loopback --addr, tokens otherwise")
	fs.BoolVar(&c.insecure, "insecure", false, "allow serving a non-loopback --addr without TLS or without tokens (logged as a warning at every start)")
}

// security is what the flags build: the parts the Flight service takes and
// the gRPC server options (transport credentials).
type security struct {
	authenticator auth.Authenticator
	signer        *auth.Signer
	serverOptions []grpc.ServerOption
}

// errInsecure: a non-loopback address without TLS and tokens.
var errInsecure = errors.New("insecure")

// build checks the flags against addr and builds the parts over b. An
// error is a usage error (exit 2).
func (c securityConfig) build(ctx context.Context, addr string, b bucket.Bucket, log *slog.Logger) (*security, error) {
	loopback := auth.IsLoopback(addr)
	mode := c.auth
	switch mode {
	case "":
		mode = authTokens
		if loopback {
			mode = authNone
		}
	case authNone, authTokens:
	default:
		return nil, fmt.Errorf("--auth %q: want none or tokens", c.auth)
	}
	switch {
	case (c.tlsCert == "") != (c.tlsKey == ""):
		return nil, errors.New("--tls-cert and --tls-key go together: give both, or neither")
	case c.tlsClientCA != "" && c.tlsCert == "":
		return nil, errors.New("--tls-client-ca (mutual TLS) needs --tls-cert and --tls-key")
	}
	useTLS := c.tlsCert != ""
	if !loopback && (!useTLS || mode != authTokens) {
		var missing []string
		if !useTLS {
			missing = append(missing, "TLS (--tls-cert, --tls-key)")
		}
		if mode != authTokens {
			missing = append(missing, "tokens (--auth tokens)")
		}
		what := missing[0]
		if len(missing) == 2 {
			what += " and " + missing[1]
		}
		if !c.insecure {
			return nil, fmt.Errorf("%w: --addr %s is not a loopback address, and serving it without %s would let anyone who reaches it read and write every project; give %s, or --insecure to serve it anyway", errInsecure, addr, what, what)
		}
		log.Warn("INSECURE: serving a non-loopback address without "+what+" (--insecure): anyone who can reach it can read the tokens it is sent and the data, or do anything", "addr", addr)
	}

	sec := &security{}
	if mode == authTokens {
		ao := auth.DefaultOptions()
		ao.Logger = log
		store, err := auth.NewStore(b, ao)
		if err != nil {
			return nil, err
		}
		sec.authenticator = store
	} else {
		sec.authenticator = auth.Open{}
	}
	so := auth.DefaultSignerOptions()
	so.Logger = log
	signer, err := auth.NewSigner(ctx, b, so)
	if err != nil {
		return nil, fmt.Errorf("ticket signing keys: %w", err)
	}
	sec.signer = signer
	if useTLS {
		cfg, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		sec.serverOptions = append(sec.serverOptions, grpc.Creds(credentials.NewTLS(cfg)))
	}
	log.Info("security", "auth", mode, "tls", useTLS, "mtls", c.tlsClientCA != "", "loopback", loopback)
	return sec, nil
}

// tlsConfig loads the server certificate and, for mutual TLS, the client CA.
func (c securityConfig) tlsConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", c.tlsCert, c.tlsKey, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.tlsClientCA != "" {
		pem, err := os.ReadFile(c.tlsClientCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca %s: no PEM certificate in it", c.tlsClientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}
