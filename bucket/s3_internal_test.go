package bucket

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/x509"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestIsTransient(t *testing.T) {
	s3err := func(status int, code string) error {
		return minio.ErrorResponse{StatusCode: status, Code: code}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"503", s3err(503, "ServiceUnavailable"), true},
		{"500", s3err(500, "InternalError"), true},
		{"502 without code", s3err(502, ""), true},
		{"504", s3err(504, "GatewayTimeout"), true},
		{"wrapped 503", fmt.Errorf("stat: %w", s3err(503, "SlowDown")), true},
		{"429", s3err(429, "TooManyRequests"), true},
		{"408", s3err(408, "RequestTimeout"), true},
		{"400 RequestTimeout", s3err(400, "RequestTimeout"), true},
		{"409 ConditionalRequestConflict", s3err(409, "ConditionalRequestConflict"), true},
		{"501", s3err(501, "NotImplemented"), false},
		{"400", s3err(400, "BadRequest"), false},
		{"403", s3err(403, "AccessDenied"), false},
		{"404", s3err(404, "NoSuchKey"), false},
		{"409 nested key", s3err(409, "ObjectParentIsFile"), false},
		{"412", s3err(412, "PreconditionFailed"), false},
		{"416", s3err(416, "InvalidRange"), false},
		{"connection reset", &url.Error{Op: "Get", URL: "u", Err: syscall.ECONNRESET}, true},
		{"connection refused", &url.Error{Op: "Get", URL: "u", Err: syscall.ECONNREFUSED}, true},
		{"connection closed", &url.Error{Op: "Put", URL: "u", Err: errors.New("Connection closed by foreign host u. Retry again.")}, true},
		{"timeout", &url.Error{Op: "Get", URL: "u", Err: timeoutErr{}}, true},
		{"body cut short", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), true},
		{"unknown authority", &url.Error{Op: "Get", URL: "u", Err: x509.UnknownAuthorityError{}}, false},
		{"canceled", fmt.Errorf("get: %w", context.Canceled), false},
		{"deadline", &url.Error{Op: "Get", URL: "u", Err: context.DeadlineExceeded}, false},
		{"other", errors.New("boom"), false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, isTransient(tc.err))
		})
	}
}

// fakeS3 is a minimal path-style S3 server for one bucket, with hooks to
// inject faults per request.
type fakeS3 struct {
	bucket string
	mu     sync.Mutex
	objs   map[string]fakeObject
	counts map[string]int // "METHOD key[?subresource]" → requests seen
	// fault, when set, may answer a request instead of the store; n counts
	// the requests with the same op, from 1. It returns the action taken.
	fault   func(op string, n int) action
	uploads map[string]map[int][]byte
	nextID  int
}

type fakeObject struct {
	data []byte
	etag string
}

type action int

const (
	pass      action = iota // serve normally
	drop                    // close the connection without an answer
	dropAfter               // serve, then close the connection without the answer
	cut                     // serve, but cut the body short
	status403
	status500
	status503
)

func newFakeS3(t *testing.T) (*fakeS3, *httptest.Server) {
	f := &fakeS3{bucket: "bkt", objs: map[string]fakeObject{}, counts: map[string]int{}, uploads: map[string]map[int][]byte{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeS3) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"+f.bucket), "/")
	op := r.Method + " " + key
	q := r.URL.Query()
	switch {
	case q.Has("uploads"):
		op += "?uploads"
	case q.Has("partNumber"):
		op += "?part"
	case q.Has("uploadId"):
		op += "?uploadId"
	}
	f.mu.Lock()
	f.counts[op]++
	n := f.counts[op]
	fault := f.fault
	f.mu.Unlock()
	act := pass
	if fault != nil {
		act = fault(op, n)
	}
	switch act {
	case drop:
		hijackClose(w)
		return
	case status403:
		writeS3Error(w, r, 403, "AccessDenied")
		return
	case status500:
		writeS3Error(w, r, 500, "InternalError")
		return
	case status503:
		writeS3Error(w, r, 503, "ServiceUnavailable")
		return
	}
	rec := httptest.NewRecorder()
	f.serve(rec, r, key)
	switch act {
	case dropAfter:
		hijackClose(w)
	case cut:
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(rec.Body.Len()))
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes()[:rec.Body.Len()/2]) // the server then closes the connection
	default:
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}
}

func hijackClose(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

func writeS3Error(w http.ResponseWriter, r *http.Request, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>1</RequestId></Error>`, code, code)
	}
}

func md5Hex(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}

func (f *fakeS3) serve(w http.ResponseWriter, r *http.Request, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := r.URL.Query()
	if key == "" {
		if r.Method == http.MethodHead {
			w.WriteHeader(200) // the bucket exists
			return
		}
		writeS3Error(w, r, 501, "NotImplemented")
		return
	}
	obj, exists := f.objs[key]
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		f.nextID++
		id := strconv.Itoa(f.nextID)
		f.uploads[id] = map[int][]byte{}
		fmt.Fprintf(w, `<InitiateMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>`, f.bucket, key, id)
	case r.Method == http.MethodPut && q.Has("partNumber"):
		parts, ok := f.uploads[q.Get("uploadId")]
		if !ok {
			writeS3Error(w, r, 404, "NoSuchUpload")
			return
		}
		data, _ := io.ReadAll(r.Body)
		num, _ := strconv.Atoi(q.Get("partNumber"))
		parts[num] = data
		w.Header().Set("ETag", `"`+md5Hex(data)+`"`)
	case r.Method == http.MethodPost && q.Has("uploadId"):
		parts, ok := f.uploads[q.Get("uploadId")]
		if !ok {
			writeS3Error(w, r, 404, "NoSuchUpload")
			return
		}
		var req struct {
			Parts []struct{ PartNumber int } `xml:"Part"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := xml.Unmarshal(body, &req); err != nil {
			writeS3Error(w, r, 400, "MalformedXML")
			return
		}
		var data []byte
		h := md5.New()
		for _, p := range req.Parts {
			data = append(data, parts[p.PartNumber]...)
			sum := md5.Sum(parts[p.PartNumber])
			h.Write(sum[:])
		}
		etag := fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil)), len(req.Parts))
		f.objs[key] = fakeObject{data: data, etag: etag}
		delete(f.uploads, q.Get("uploadId"))
		fmt.Fprintf(w, `<CompleteMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key><ETag>"%s"</ETag></CompleteMultipartUploadResult>`, f.bucket, key, etag)
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		delete(f.uploads, q.Get("uploadId"))
		w.WriteHeader(204)
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		if !exists {
			writeS3Error(w, r, 404, "NoSuchKey")
			return
		}
		if m := r.Header.Get("If-Match"); m != "" && strings.Trim(m, `"`) != obj.etag {
			writeS3Error(w, r, 412, "PreconditionFailed")
			return
		}
		w.Header().Set("ETag", `"`+obj.etag+`"`)
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/octet-stream")
		body, code := obj.data, 200
		if rg := r.Header.Get("Range"); rg != "" {
			var a, b int
			fmt.Sscanf(rg, "bytes=%d-%d", &a, &b)
			body, code = obj.data[a:b+1], 206
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", a, b, len(obj.data)))
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(code)
		if r.Method == http.MethodGet {
			w.Write(body)
		}
	case r.Method == http.MethodPut:
		if r.Header.Get("If-None-Match") == "*" && exists {
			writeS3Error(w, r, 412, "PreconditionFailed")
			return
		}
		if m := r.Header.Get("If-Match"); m != "" {
			if !exists {
				writeS3Error(w, r, 404, "NoSuchKey")
				return
			}
			if strings.Trim(m, `"`) != obj.etag {
				writeS3Error(w, r, 412, "PreconditionFailed")
				return
			}
		}
		data, err := io.ReadAll(r.Body)
		if err != nil {
			writeS3Error(w, r, 400, "IncompleteBody")
			return
		}
		f.objs[key] = fakeObject{data: data, etag: md5Hex(data)}
		w.Header().Set("ETag", `"`+md5Hex(data)+`"`)
	case r.Method == http.MethodDelete:
		delete(f.objs, key)
		w.WriteHeader(204)
	default:
		writeS3Error(w, r, 501, "NotImplemented")
	}
}

var fastRetry = retryPolicy{attempts: 4, base: time.Millisecond, max: 5 * time.Millisecond}

func newFakeBucket(t *testing.T) (*S3, *fakeS3) {
	f, srv := newFakeS3(t)
	s, err := newS3(t.Context(), S3Config{Endpoint: srv.URL, AccessKey: "k", SecretKey: "s", Bucket: f.bucket}, fastRetry)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, f
}

func TestS3Retry(t *testing.T) {
	ctx := t.Context()
	t.Run("503 then 200", func(t *testing.T) {
		s, f := newFakeBucket(t)
		f.objs["k"] = fakeObject{data: []byte("v"), etag: md5Hex([]byte("v"))}
		f.fault = func(op string, n int) action {
			if n == 1 {
				return status503
			}
			return pass
		}
		info, err := s.Stat(ctx, "k")
		require.NoError(t, err)
		require.EqualValues(t, 1, info.Size)
		require.Equal(t, 2, f.count("HEAD k"))
		data, _, err := s.Get(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, "v", string(data))
		require.Equal(t, 2, f.count("GET k"))
		_, err = s.Put(ctx, "k2", strings.NewReader("w"), 1)
		require.NoError(t, err)
		require.Equal(t, 2, f.count("PUT k2"))
		require.NoError(t, s.Delete(ctx, "k2"))
		require.Equal(t, 2, f.count("DELETE k2"))
	})
	t.Run("403 is never retried", func(t *testing.T) {
		s, f := newFakeBucket(t)
		f.fault = func(op string, n int) action { return status403 }
		_, err := s.Stat(ctx, "k")
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrNotFound)
		_, _, err = s.Get(ctx, "k")
		require.ErrorContains(t, err, "AccessDenied")
		_, err = s.PutIfAbsent(ctx, "k", []byte("v"))
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrExists)
		_, err = s.CompareAndSwap(ctx, "k2", "etag", []byte("v"))
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrConflict)
		_, err = s.Put(ctx, "k3", strings.NewReader("v"), 1)
		require.Error(t, err)
		require.Error(t, s.Delete(ctx, "k"))
		for _, op := range []string{"HEAD k", "GET k", "PUT k", "PUT k2", "PUT k3", "DELETE k"} {
			require.Equal(t, 1, f.count(op), op)
		}
	})
	t.Run("500 until the tries run out", func(t *testing.T) {
		s, f := newFakeBucket(t)
		f.fault = func(op string, n int) action { return status500 }
		_, err := s.Stat(ctx, "k")
		require.Error(t, err)
		require.Equal(t, fastRetry.attempts, f.count("HEAD k"))
	})
	t.Run("dropped connection then 200", func(t *testing.T) {
		s, f := newFakeBucket(t)
		f.objs["k"] = fakeObject{data: []byte("v"), etag: md5Hex([]byte("v"))}
		f.fault = func(op string, n int) action {
			if n == 1 {
				return drop
			}
			return pass
		}
		_, err := s.Stat(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, 2, f.count("HEAD k"))
	})
	t.Run("a canceled context stops retrying", func(t *testing.T) {
		f, srv := newFakeS3(t)
		s, err := newS3(ctx, S3Config{Endpoint: srv.URL, Bucket: f.bucket}, retryPolicy{attempts: 100, base: 20 * time.Millisecond, max: 20 * time.Millisecond})
		require.NoError(t, err)
		defer s.Close()
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		f.fault = func(op string, n int) action { return status503 }
		_, err = s.Stat(cctx, "k")
		require.Error(t, err)
		require.Less(t, f.count("HEAD k"), 20)
	})
	t.Run("ReadAt body cut short", func(t *testing.T) {
		s, f := newFakeBucket(t)
		data := []byte(strings.Repeat("0123456789", 100))
		f.objs["k"] = fakeObject{data: data, etag: md5Hex(data)}
		r, err := s.Open(ctx, "k")
		require.NoError(t, err)
		f.fault = func(op string, n int) action {
			if op == "GET k" && n == 1 {
				return cut
			}
			return pass
		}
		p := make([]byte, 500)
		n, err := r.ReadAt(p, 250)
		require.NoError(t, err)
		require.Equal(t, 500, n)
		require.Equal(t, data[250:750], p)
		require.Equal(t, 2, f.count("GET k"))
	})
	t.Run("ReadAt after an overwrite fails", func(t *testing.T) {
		s, f := newFakeBucket(t)
		f.objs["k"] = fakeObject{data: []byte("old"), etag: md5Hex([]byte("old"))}
		r, err := s.Open(ctx, "k")
		require.NoError(t, err)
		f.objs["k"] = fakeObject{data: []byte("new"), etag: md5Hex([]byte("new"))}
		_, err = r.ReadAt(make([]byte, 3), 0)
		require.ErrorIs(t, err, ErrConflict)
	})
}

// TestS3ConditionalRetry covers a conditional PUT whose first answer is
// lost: the retry meets the first try's own success as 412.
func TestS3ConditionalRetry(t *testing.T) {
	ctx := t.Context()
	loseFirstPut := func(op string, n int) action {
		if strings.HasPrefix(op, "PUT ") && n == 1 {
			return dropAfter
		}
		return pass
	}
	t.Run("PutIfAbsent landed", func(t *testing.T) {
		s, f := newFakeBucket(t)
		f.fault = loseFirstPut
		etag, err := s.PutIfAbsent(ctx, "k", []byte("mine"))
		require.NoError(t, err, "our own first try created it")
		require.Equal(t, ETag(md5Hex([]byte("mine"))), etag)
		require.Equal(t, 2, f.count("PUT k"))
	})
	t.Run("PutIfAbsent someone else's", func(t *testing.T) {
		s, f := newFakeBucket(t)
		f.objs["k"] = fakeObject{data: []byte("theirs"), etag: md5Hex([]byte("theirs"))}
		f.fault = loseFirstPut
		_, err := s.PutIfAbsent(ctx, "k", []byte("mine"))
		require.ErrorIs(t, err, ErrExists)
	})
	t.Run("PutIfAbsent 412 on the first try is not checked", func(t *testing.T) {
		s, f := newFakeBucket(t)
		f.objs["k"] = fakeObject{data: []byte("mine"), etag: md5Hex([]byte("mine"))}
		_, err := s.PutIfAbsent(ctx, "k", []byte("mine"))
		require.ErrorIs(t, err, ErrExists, "same bytes, but nothing of ours was in flight")
		require.Equal(t, 0, f.count("HEAD k"))
	})
	t.Run("CompareAndSwap landed", func(t *testing.T) {
		s, f := newFakeBucket(t)
		f.objs["k"] = fakeObject{data: []byte("base"), etag: md5Hex([]byte("base"))}
		f.fault = loseFirstPut
		etag, err := s.CompareAndSwap(ctx, "k", ETag(md5Hex([]byte("base"))), []byte("next"))
		require.NoError(t, err)
		require.Equal(t, ETag(md5Hex([]byte("next"))), etag)
	})
	t.Run("CompareAndSwap lost to another writer", func(t *testing.T) {
		s, f := newFakeBucket(t)
		f.objs["k"] = fakeObject{data: []byte("base"), etag: md5Hex([]byte("base"))}
		f.fault = func(op string, n int) action {
			if op == "PUT k" && n == 1 {
				// Another writer wins while our first try's answer is lost.
				f.mu.Lock()
				f.objs["k"] = fakeObject{data: []byte("theirs"), etag: md5Hex([]byte("theirs"))}
				f.mu.Unlock()
				return drop
			}
			return pass
		}
		_, err := s.CompareAndSwap(ctx, "k", ETag(md5Hex([]byte("base"))), []byte("next"))
		require.ErrorIs(t, err, ErrConflict)
	})
}

func TestS3Multipart(t *testing.T) {
	ctx := t.Context()
	data := bytes.Repeat([]byte("abcdefghij"), 1000) // 10,000 bytes
	newSmallParts := func(t *testing.T) (*S3, *fakeS3) {
		s, f := newFakeBucket(t)
		s.partSize = 3000
		return s, f
	}
	for _, size := range []int64{int64(len(data)), -1} {
		t.Run(fmt.Sprintf("size %d, a part retried", size), func(t *testing.T) {
			s, f := newSmallParts(t)
			f.fault = func(op string, n int) action {
				if op == "PUT k?part" && n == 2 {
					return status503
				}
				return pass
			}
			etag, err := s.Put(ctx, "k", bytes.NewReader(data), size)
			require.NoError(t, err)
			require.Equal(t, data, f.objs["k"].data)
			require.Equal(t, f.objs["k"].etag, string(etag))
			require.True(t, strings.HasSuffix(string(etag), "-4"), etag)
			require.Equal(t, 5, f.count("PUT k?part"), "4 parts, one of them twice")
		})
	}
	t.Run("complete's answer lost", func(t *testing.T) {
		s, f := newSmallParts(t)
		f.fault = func(op string, n int) action {
			if op == "POST k?uploadId" && n == 1 {
				return dropAfter
			}
			return pass
		}
		etag, err := s.Put(ctx, "k", bytes.NewReader(data), int64(len(data)))
		require.NoError(t, err, "the retry finds the upload completed, with our parts' ETag")
		require.Equal(t, f.objs["k"].etag, string(etag))
		require.Equal(t, 2, f.count("POST k?uploadId"))
	})
	t.Run("a failed part aborts the upload", func(t *testing.T) {
		s, f := newSmallParts(t)
		f.fault = func(op string, n int) action {
			if op == "PUT k?part" {
				return status403
			}
			return pass
		}
		_, err := s.Put(ctx, "k", bytes.NewReader(data), int64(len(data)))
		require.Error(t, err)
		require.Equal(t, 1, f.count("DELETE k?uploadId"), "aborted")
		require.Empty(t, f.uploads)
		_, ok := f.objs["k"]
		require.False(t, ok)
	})
	t.Run("a body shorter than its size aborts", func(t *testing.T) {
		s, f := newSmallParts(t)
		_, err := s.Put(ctx, "k", bytes.NewReader(data), int64(len(data))+1)
		require.ErrorContains(t, err, "size said")
		require.Empty(t, f.uploads)
		_, ok := f.objs["k"]
		require.False(t, ok)
	})
	t.Run("a body longer than its size aborts", func(t *testing.T) {
		s, f := newSmallParts(t)
		_, err := s.Put(ctx, "k", bytes.NewReader(data), int64(len(data))-1)
		require.ErrorContains(t, err, "longer than size")
		require.Empty(t, f.uploads)
		_, ok := f.objs["k"]
		require.False(t, ok)
	})
}

func TestNewS3(t *testing.T) {
	ctx := t.Context()
	t.Run("bucket exists after a 503", func(t *testing.T) {
		f, srv := newFakeS3(t)
		f.fault = func(op string, n int) action {
			if op == "HEAD " && n == 1 {
				return status503
			}
			return pass
		}
		s, err := newS3(ctx, S3Config{Endpoint: srv.URL, Bucket: f.bucket}, fastRetry)
		require.NoError(t, err)
		s.Close()
		require.Equal(t, 2, f.count("HEAD "))
	})
	t.Run("missing bucket", func(t *testing.T) {
		f, srv := newFakeS3(t)
		f.fault = func(op string, n int) action { return pass }
		_, err := newS3(ctx, S3Config{Endpoint: srv.URL, Bucket: "other"}, fastRetry)
		require.ErrorContains(t, err, fmt.Sprintf(`bucket "other" does not exist at %s`, srv.URL))
	})
	t.Run("refused credentials", func(t *testing.T) {
		f, srv := newFakeS3(t)
		f.fault = func(op string, n int) action { return status403 }
		_, err := newS3(ctx, S3Config{Endpoint: srv.URL, Bucket: f.bucket}, fastRetry)
		require.ErrorContains(t, err, fmt.Sprintf(`check bucket %q at %s`, f.bucket, srv.URL))
		require.Equal(t, 1, f.count("HEAD "))
	})
	t.Run("unreachable", func(t *testing.T) {
		_, err := newS3(ctx, S3Config{Endpoint: "http://127.0.0.1:1", Bucket: "bkt"}, fastRetry)
		require.ErrorContains(t, err, `check bucket "bkt" at http://127.0.0.1:1`)
		require.ErrorContains(t, err, "connection refused")
	})
}

func TestParseS3URL(t *testing.T) {
	for _, tc := range []struct{ url, bucket, prefix string }{
		{"s3://b", "b", ""},
		{"s3://b/", "b", ""},
		{"s3://b/p", "b", "p"},
		{"s3://b/p/q/", "b", "p/q"},
		{"s3://b//p", "b", "p"},
	} {
		b, p, err := parseS3URL(tc.url)
		require.NoError(t, err, tc.url)
		require.Equal(t, tc.bucket, b, tc.url)
		require.Equal(t, tc.prefix, p, tc.url)
	}
}

func TestMergeS3Config(t *testing.T) {
	env := S3Config{Endpoint: "http://env", AccessKey: "envkey", SecretKey: "envsecret", Region: "env-1"}
	got := mergeS3Config(env, S3Config{Endpoint: "http://flag", SecretKey: "flagsecret"})
	require.Equal(t, S3Config{Endpoint: "http://flag", AccessKey: "envkey", SecretKey: "flagsecret", Region: "env-1"}, got)
}

func TestValidUTF8Prefix(t *testing.T) {
	require.Equal(t, "t/", validUTF8Prefix("t/\xc3"))
	require.Equal(t, "t/é", validUTF8Prefix("t/é"))
	require.Equal(t, "", validUTF8Prefix("\xff/a"))
	require.Equal(t, "a\uFFFDb", validUTF8Prefix("a\uFFFDb"), "an encoded U+FFFD is valid")
}

// TestS3ReadAtRunsInParallel holds every ranged GET at the server until
// four are in flight at once, which a Reader that serialized its reads
// (like minio.Object.ReadAt) would never reach.
func TestS3ReadAtRunsInParallel(t *testing.T) {
	const readers = 4
	s, f := newFakeBucket(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1024)
	f.objs["k"] = fakeObject{data: data, etag: md5Hex(data)}
	r, err := s.Open(t.Context(), "k")
	require.NoError(t, err)
	var mu sync.Mutex
	inFlight, most := 0, 0
	all := make(chan struct{})
	f.fault = func(op string, n int) action {
		if op != "GET k" {
			return pass
		}
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight == readers {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(5 * time.Second):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return pass
	}
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			p := make([]byte, 1024)
			_, err := r.ReadAt(p, int64(i)*1024)
			assert.NoError(t, err) // not require: this is not the test's goroutine
			assert.Equal(t, data[i*1024:(i+1)*1024], p)
		})
	}
	wg.Wait()
	require.Equal(t, readers, most, "ranged reads in flight at once")
}
