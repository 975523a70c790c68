package bucket

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
)

// retryPolicy retries transient faults with capped exponential backoff and
// jitter.
type retryPolicy struct {
	attempts int           // tries in all, at least 1
	base     time.Duration // wait before the first retry, doubled each time
	max      time.Duration // cap on one wait
}

// defaultRetry waits about 0.1, 0.2, 0.4, 0.8 and 1.6 s (less jitter): a
// server gets about 3 s to come back before an operation fails.
var defaultRetry = retryPolicy{attempts: 6, base: 100 * time.Millisecond, max: 2 * time.Second}

// do runs op until it succeeds, fails with an error isTransient rejects,
// runs out of tries, or ctx is done. It returns the number of tries and
// op's last error.
func (p retryPolicy) do(ctx context.Context, op func() error) (int, error) {
	for try := 1; ; try++ {
		err := op()
		if err == nil || !isTransient(err) || try >= p.attempts || !p.sleep(ctx, try-1) {
			return try, err
		}
	}
}

// sleep waits before retry number n (0-based) and reports false if ctx
// ended first.
func (p retryPolicy) sleep(ctx context.Context, n int) bool {
	if ctx.Err() != nil {
		return false
	}
	d := p.base << min(n, 30)
	if d > p.max || d <= 0 {
		d = p.max
	}
	d = d/2 + rand.N(d/2+1) // "equal jitter": spread retries of many clients
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// transientS3Codes are S3 error codes worth another try whatever their
// HTTP status.
var transientS3Codes = map[string]bool{
	"SlowDown":                   true,
	"RequestTimeout":             true,
	"InternalError":              true,
	"ServiceUnavailable":         true,
	"ConditionalRequestConflict": true, // AWS: a concurrent conditional write is in progress
}

// isTransient reports whether a failed request may succeed if sent again:
// server faults and throttling, timeouts, and connections that failed or
// broke. Client errors (4xx but 408 and 429), the caller's context ending,
// and TLS verification failures are final.
func isTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var er minio.ErrorResponse
	if errors.As(err, &er) && (er.StatusCode != 0 || er.Code != "") {
		if transientS3Codes[er.Code] {
			return true
		}
		switch st := er.StatusCode; {
		case st == http.StatusRequestTimeout, st == http.StatusTooManyRequests:
			return true
		case st == http.StatusNotImplemented, st == http.StatusHTTPVersionNotSupported:
			return false
		default:
			return st >= 500
		}
	}
	var cve *tls.CertificateVerificationError
	var uae x509.UnknownAuthorityError
	var hne x509.HostnameError
	var cie x509.CertificateInvalidError
	if errors.As(err, &cve) || errors.As(err, &uae) || errors.As(err, &hne) || errors.As(err, &cie) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	}
	// Any other failure to get a response at all (minio-go reports a
	// connection closed mid-request as a url.Error).
	var ue *url.Error
	return errors.As(err, &ue)
}
