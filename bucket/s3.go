package bucket

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/sync/errgroup"
)

// S3Config names an S3 bucket and how to reach it.
type S3Config struct {
	// Endpoint is the server's URL, http:// or https://, without a path.
	// Empty means AWS (https://s3.amazonaws.com).
	Endpoint  string
	AccessKey string // empty with SecretKey: anonymous requests
	SecretKey string
	Region    string // empty means us-east-1
	Bucket    string
}

// S3ConfigFromEnv reads the usual AWS variables: AWS_ENDPOINT_URL_S3 or
// else AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, and
// AWS_REGION or else AWS_DEFAULT_REGION. Bucket is left empty.
func S3ConfigFromEnv() S3Config {
	first := func(names ...string) string {
		for _, n := range names {
			if v := os.Getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	return S3Config{
		Endpoint:  first("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		Region:    first("AWS_REGION", "AWS_DEFAULT_REGION"),
	}
}

const (
	defaultS3Endpoint = "https://s3.amazonaws.com"
	defaultS3Region   = "us-east-1"
	// s3PartSize is the part size of multipart uploads, and the largest
	// body Put sends in one request. 10,000 parts make 160 GiB at most.
	s3PartSize = 16 << 20
	// s3PartUploads bounds the parts of one Put in flight (and in memory).
	s3PartUploads = 4
)

// S3 is a Bucket in an S3 bucket, through minio-go.
//
// Conditional writes are single-part PUTs with If-None-Match: * (PutIfAbsent)
// or If-Match (CompareAndSwap): minio-go drops conditions on multipart
// uploads, hence MaxConditionalSize. The ETag is the server's, unquoted: the
// MD5 of the bytes for single-part objects on MinIO, versitygw and AWS
// without KMS, something else for multipart ones.
//
// Open pins the version by its ETag: every ReadAt is its own ranged GET with
// If-Match, so reads run in parallel (unlike minio.Object.ReadAt, which
// serializes behind a mutex), and a Reader whose object was overwritten
// fails with ErrConflict instead of mixing versions.
//
// Put sends bodies up to 16 MiB (and bodies of unknown size that turn out
// that small) as one PUT; larger ones as a multipart upload of 16 MiB parts,
// 4 in flight, aborted on failure.
//
// Retries: minio-go's own retry loop is off; every request goes through one
// policy here. Transient faults are retried with capped, jittered exponential
// backoff, 6 tries in all, stopping early when ctx is done: HTTP 5xx (but
// 501, 505), 408 and 429, the S3 codes SlowDown, RequestTimeout,
// InternalError, ServiceUnavailable and ConditionalRequestConflict, network
// timeouts, refused or reset connections, and bodies cut short. Any other
// 4xx is final at once.
//
// A retried conditional PUT may meet its own earlier success, which the
// server answers with 412 Precondition Failed. So when a conditional PUT
// that needed more than one try gets 412, S3 reads the key's ETag and, if it
// is the MD5 of the body (what a single-part PUT of these bytes produces),
// reports success. The cost of the check: if another writer stored the very
// same bytes at the same time, both callers succeed, which for content-
// addressed objects is harmless; on a server whose ETags are not MD5s (KMS
// encryption) the caller sees ErrExists or ErrConflict for a write that
// landed, and must read the key to learn better.
type S3 struct {
	client    *minio.Client
	core      minio.Core
	bucket    string
	endpoint  string
	transport *http.Transport
	retry     retryPolicy
	partSize  int64
}

var _ Bucket = (*S3)(nil)

// NewS3 connects to cfg's endpoint and checks that the bucket exists; the
// error names the bucket and the endpoint when it does not, or when the
// endpoint cannot be reached or refuses the credentials.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	return newS3(ctx, cfg, defaultRetry)
}

func newS3(ctx context.Context, cfg S3Config, retry retryPolicy) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3: no bucket name")
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = defaultS3Endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("s3 endpoint %q: want http://HOST[:PORT] or https://HOST[:PORT], without a path", endpoint)
	}
	secure := u.Scheme == "https"
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("s3 endpoint %s: %w", endpoint, err)
	}
	tr.MaxIdleConnsPerHost = 64 // parallel ranged reads reuse connections
	region := cfg.Region
	if region == "" {
		region = defaultS3Region
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:    secure,
		Transport: tr,
		Region:    region,
		// Retries are ours (retryPolicy): we need to know when a
		// conditional PUT was sent twice.
		MaxRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 endpoint %s: %w", endpoint, err)
	}
	s := &S3{
		client:    client,
		core:      minio.Core{Client: client},
		bucket:    cfg.Bucket,
		endpoint:  u.Scheme + "://" + u.Host,
		transport: tr,
		retry:     retry,
		partSize:  s3PartSize,
	}
	var exists bool
	_, err = s.retry.do(ctx, func() (err error) {
		exists, err = client.BucketExists(ctx, cfg.Bucket)
		return err
	})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("s3: check bucket %q at %s: %w", cfg.Bucket, s.endpoint, err)
	}
	if !exists {
		s.Close()
		return nil, fmt.Errorf("s3: bucket %q does not exist at %s", cfg.Bucket, s.endpoint)
	}
	return s, nil
}

// Close releases idle connections. The S3 stays usable.
func (s *S3) Close() error {
	s.transport.CloseIdleConnections()
	return nil
}

// String names the bucket and endpoint, for logs.
func (s *S3) String() string { return "s3://" + s.bucket + " at " + s.endpoint }

// fail wraps err from an operation on key with context and the matching
// sentinel, keeping the server's error in the chain.
func (s *S3) fail(op, key string, err error) error {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		switch er.Code {
		case "NoSuchKey":
			return fmt.Errorf("s3 %s %s: %w: %w", op, key, ErrNotFound, err)
		case "NoSuchBucket":
			return fmt.Errorf("s3 %s %s: bucket %q does not exist at %s: %w", op, key, s.bucket, s.endpoint, err)
		case "KeyTooLongError", "XMinioInvalidObjectName":
			return fmt.Errorf("s3 %s %s: %w: %w", op, key, ErrInvalidKey, err)
		case nestedKeyCodes[0], nestedKeyCodes[1], nestedKeyCodes[2], nestedKeyCodes[3]:
			return fmt.Errorf("s3 %s %s: %w: a key cannot be both an object and a directory of other keys here: %w", op, key, ErrInvalidKey, err)
		}
	}
	return fmt.Errorf("s3 %s %s (bucket %q at %s): %w", op, key, s.bucket, s.endpoint, err)
}

// nestedKeyCodes are the errors of servers that map keys to files when a
// write would put "a/b" beside "a/b/c" (versitygw: 409).
var nestedKeyCodes = []string{"ObjectParentIsFile", "ExistingObjectIsDirectory", "XMinioObjectExistsAsDirectory", "XMinioParentIsObject"}

func isCode(err error, codes ...string) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && slices.Contains(codes, er.Code)
}

func isPreconditionFailed(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && (er.Code == "PreconditionFailed" || er.StatusCode == http.StatusPreconditionFailed)
}

func trimETag(etag string) ETag {
	return ETag(strings.Trim(etag, `"`))
}

func (s *S3) info(oi minio.ObjectInfo) ObjectInfo {
	return ObjectInfo{Key: oi.Key, Size: oi.Size, ETag: trimETag(oi.ETag), ModTime: oi.LastModified}
}

func (s *S3) Get(ctx context.Context, key string) ([]byte, ObjectInfo, error) {
	return s.getSmall(ctx, key, -1)
}

// getSmall is Get refusing an object over limit bytes (limit < 0: any),
// by the size the response declares, before reading its body.
func (s *S3) getSmall(ctx context.Context, key string, limit int64) ([]byte, ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return nil, ObjectInfo{}, err
	}
	var data []byte
	var info ObjectInfo
	var big error
	_, err := s.retry.do(ctx, func() error {
		body, oi, _, err := s.core.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
		if err != nil {
			return err
		}
		defer body.Close()
		if limit >= 0 && oi.Size > limit {
			big = tooLarge(key, oi.Size, limit)
			return nil
		}
		var buf bytes.Buffer
		if oi.Size > 0 {
			buf.Grow(int(oi.Size))
		}
		var r io.Reader = body
		if limit >= 0 {
			r = io.LimitReader(body, limit+1) // a size the server did not declare
		}
		if _, err := buf.ReadFrom(r); err != nil {
			return fmt.Errorf("read body: %w", err)
		}
		if limit >= 0 && int64(buf.Len()) > limit {
			big = tooLarge(key, int64(buf.Len()), limit)
			return nil
		}
		if oi.Size >= 0 && int64(buf.Len()) != oi.Size {
			return fmt.Errorf("read body: %d of %d bytes: %w", buf.Len(), oi.Size, io.ErrUnexpectedEOF)
		}
		data, info = buf.Bytes(), s.info(oi)
		info.Key = key
		return nil
	})
	if err != nil {
		return nil, ObjectInfo{}, s.fail("get", key, err)
	}
	if big != nil {
		return nil, ObjectInfo{}, fmt.Errorf("s3 get: %w", big)
	}
	return data, info, nil
}

func (s *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	info, err := s.stat(ctx, key)
	if err != nil {
		return ObjectInfo{}, s.fail("stat", key, err)
	}
	return info, nil
}

// stat returns the raw error for the caller to classify.
func (s *S3) stat(ctx context.Context, key string) (ObjectInfo, error) {
	var info ObjectInfo
	_, err := s.retry.do(ctx, func() error {
		oi, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
		if err != nil {
			return err
		}
		info = s.info(oi)
		info.Key = key
		return nil
	})
	return info, err
}

func (s *S3) Open(ctx context.Context, key string) (Reader, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	info, err := s.stat(ctx, key)
	if err != nil {
		return nil, s.fail("open", key, err)
	}
	if info.ETag == "" {
		return nil, fmt.Errorf("s3 open %s: the server gave no ETag, so the version cannot be pinned", key)
	}
	return &s3Reader{s: s, ctx: ctx, key: key, etag: string(info.ETag), size: info.Size}, nil
}

// s3Reader reads one object version with a ranged, If-Match GET per ReadAt.
type s3Reader struct {
	s    *S3
	ctx  context.Context
	key  string
	etag string
	size int64
}

func (r *s3Reader) Size() int64  { return r.size }
func (r *s3Reader) Close() error { return nil }

func (r *s3Reader) ReadAt(p []byte, off int64) (int, error) {
	want, err := readSpan("s3 read", r.key, off, len(p), r.size)
	if want == 0 {
		return 0, err
	}
	_, err = r.s.retry.do(r.ctx, func() error {
		var opts minio.GetObjectOptions
		if err := opts.SetRange(off, off+want-1); err != nil {
			return err
		}
		if err := opts.SetMatchETag(r.etag); err != nil {
			return err
		}
		body, oi, _, err := r.s.core.GetObject(r.ctx, r.s.bucket, r.key, opts)
		if err != nil {
			return err
		}
		defer body.Close()
		// A server that ignored the range would send the whole object.
		if oi.Size != want {
			return fmt.Errorf("ranged GET [%d, %d) answered with %d bytes", off, off+want, oi.Size)
		}
		if _, err := io.ReadFull(body, p[:want]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("read body: %w", err)
		}
		return nil
	})
	if err != nil {
		if isPreconditionFailed(err) {
			return 0, fmt.Errorf("s3 read %s: %w: the object was overwritten after Open: %w", r.key, ErrConflict, err)
		}
		return 0, r.s.fail("read", r.key, err)
	}
	if want < int64(len(p)) {
		return int(want), io.EOF
	}
	return int(want), nil
}

func (s *S3) Put(ctx context.Context, key string, body io.Reader, size int64) (ETag, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	// Read the first part: a body that fits goes in one PUT, retried from
	// memory; the size is checked before anything is sent.
	var buf []byte
	var err error
	if size < 0 {
		// Grow as the body comes, so a small body costs a small buffer.
		buf, err = io.ReadAll(io.LimitReader(ctxReader{ctx, body}, s.partSize))
		if err == nil && int64(len(buf)) < s.partSize {
			err = io.EOF
		}
	} else {
		buf = make([]byte, min(size, s.partSize))
		var n int
		n, err = io.ReadFull(ctxReader{ctx, body}, buf)
		buf = buf[:n]
	}
	n := len(buf)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		if size >= 0 && int64(n) != size {
			return "", fmt.Errorf("s3 put %s: body has %d bytes, size said %d", key, n, size)
		}
		return s.putOne(ctx, key, buf)
	case err != nil:
		return "", fmt.Errorf("s3 put %s: read body: %w", key, err)
	case size >= 0 && size <= s.partSize:
		// The whole declared size is read: the body must end here.
		var one [1]byte
		if m, _ := io.ReadFull(body, one[:]); m > 0 {
			return "", fmt.Errorf("s3 put %s: body is longer than size %d", key, size)
		}
		return s.putOne(ctx, key, buf)
	}
	return s.putMultipart(ctx, key, buf, body, size)
}

func (s *S3) putOne(ctx context.Context, key string, data []byte) (ETag, error) {
	info, _, err := s.putSingle(ctx, key, data, minio.PutObjectOptions{})
	if err != nil {
		return "", s.fail("put", key, err)
	}
	return trimETag(info.ETag), nil
}

// putSingle PUTs data in one request, retrying transient faults, and says
// how many tries it took. It returns the raw error.
func (s *S3) putSingle(ctx context.Context, key string, data []byte, opts minio.PutObjectOptions) (minio.UploadInfo, int, error) {
	opts.DisableMultipart = true
	// Sign the payload hash computed here instead of minio-go's streaming
	// (aws-chunked) signature over plain HTTP.
	opts.DisableContentSha256 = true
	opts.ContentType = "application/octet-stream"
	sumMD5 := md5.Sum(data)
	sumSHA := sha256.Sum256(data)
	md5b64 := base64.StdEncoding.EncodeToString(sumMD5[:])
	shaHex := hex.EncodeToString(sumSHA[:])
	var info minio.UploadInfo
	tries, err := s.retry.do(ctx, func() (err error) {
		info, err = s.core.PutObject(ctx, s.bucket, key, bytes.NewReader(data), int64(len(data)), md5b64, shaHex, opts)
		return err
	})
	return info, tries, err
}

// putMultipart uploads first and the rest of body as a multipart upload.
func (s *S3) putMultipart(ctx context.Context, key string, first []byte, body io.Reader, size int64) (ETag, error) {
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	var uploadID string
	_, err := s.retry.do(ctx, func() (err error) {
		uploadID, err = s.core.NewMultipartUpload(ctx, s.bucket, key, opts)
		return err
	})
	if err != nil {
		return "", s.fail("put", key, err)
	}
	completed := false
	defer func() {
		if completed {
			return
		}
		// Best effort, even when ctx is done; servers expire the rest.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = s.retry.do(actx, func() error {
			return s.core.AbortMultipartUpload(actx, s.bucket, key, uploadID)
		})
	}()

	var mu sync.Mutex
	var parts []minio.CompletePart
	partMD5s := map[int][]byte{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s3PartUploads)
	// Part buffers are reused: at most s3PartUploads in flight and one
	// being read, so a long upload neither holds nor churns more.
	free := make(chan []byte, s3PartUploads+1)
	newChunk := func() []byte {
		select {
		case b := <-free:
			return b
		default:
			return make([]byte, s.partSize)
		}
	}
	upload := func(num int, chunk []byte) {
		g.Go(func() error {
			defer func() {
				if int64(cap(chunk)) == s.partSize {
					select {
					case free <- chunk[:cap(chunk)]:
					default:
					}
				}
			}()
			sumMD5 := md5.Sum(chunk)
			sumSHA := sha256.Sum256(chunk)
			popts := minio.PutObjectPartOptions{
				Md5Base64:            base64.StdEncoding.EncodeToString(sumMD5[:]),
				Sha256Hex:            hex.EncodeToString(sumSHA[:]),
				DisableContentSha256: true, // as in putSingle
			}
			var part minio.ObjectPart
			_, err := s.retry.do(gctx, func() (err error) {
				part, err = s.core.PutObjectPart(gctx, s.bucket, key, uploadID, num, bytes.NewReader(chunk), int64(len(chunk)), popts)
				return err
			})
			if err != nil {
				return fmt.Errorf("part %d: %w", num, err)
			}
			mu.Lock()
			parts = append(parts, minio.CompletePart{PartNumber: num, ETag: part.ETag})
			partMD5s[num] = sumMD5[:]
			mu.Unlock()
			return nil
		})
	}

	total := int64(len(first))
	upload(1, first)
	var readErr error
	for num := 2; ; num++ {
		chunk := newChunk()
		n, err := io.ReadFull(ctxReader{gctx, body}, chunk)
		if n > 0 {
			total += int64(n)
			if size >= 0 && total > size {
				readErr = fmt.Errorf("body is longer than size %d", size)
				break
			}
			upload(num, chunk[:n])
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("read body: %w", err)
			break
		}
	}
	if readErr == nil && size >= 0 && total != size {
		readErr = fmt.Errorf("body has %d bytes, size said %d", total, size)
	}
	if err := g.Wait(); err != nil {
		return "", s.fail("put", key, err)
	}
	if readErr != nil {
		return "", fmt.Errorf("s3 put %s: %w", key, readErr)
	}
	slices.SortFunc(parts, func(a, b minio.CompletePart) int { return a.PartNumber - b.PartNumber })

	var info minio.UploadInfo
	tries, err := s.retry.do(ctx, func() (err error) {
		info, err = s.core.CompleteMultipartUpload(ctx, s.bucket, key, uploadID, parts, opts)
		return err
	})
	if err != nil && tries > 1 && isCode(err, "NoSuchUpload") {
		// An earlier try may have completed the upload; it then has the
		// multipart ETag of these parts.
		h := md5.New()
		for _, p := range parts {
			h.Write(partMD5s[p.PartNumber])
		}
		want := ETag(fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil)), len(parts)))
		if cur, serr := s.stat(ctx, key); serr == nil && cur.ETag == want {
			completed = true
			return want, nil
		}
	}
	if err != nil {
		return "", s.fail("put", key, err)
	}
	completed = true
	return trimETag(info.ETag), nil
}

func (s *S3) PutIfAbsent(ctx context.Context, key string, data []byte) (ETag, error) {
	if err := checkConditional(key, data); err != nil {
		return "", err
	}
	var opts minio.PutObjectOptions
	opts.SetMatchETagExcept("*")
	info, tries, err := s.putSingle(ctx, key, data, opts)
	if err == nil {
		return trimETag(info.ETag), nil
	}
	if isPreconditionFailed(err) {
		if tries > 1 {
			if etag, ok := s.landed(ctx, key, data); ok {
				return etag, nil
			}
		}
		return "", fmt.Errorf("s3 put-if-absent %s: %w", key, ErrExists)
	}
	return "", s.fail("put-if-absent", key, err)
}

func (s *S3) CompareAndSwap(ctx context.Context, key string, old ETag, data []byte) (ETag, error) {
	if err := checkConditional(key, data); err != nil {
		return "", err
	}
	old = trimETag(string(old))
	if old == "" {
		// No object has an empty ETag; only say which failure it is.
		if _, err := s.stat(ctx, key); err != nil {
			return "", s.fail("compare-and-swap", key, err)
		}
		return "", fmt.Errorf("s3 compare-and-swap %s: %w: empty old ETag", key, ErrConflict)
	}
	var opts minio.PutObjectOptions
	opts.SetMatchETag(string(old))
	info, tries, err := s.putSingle(ctx, key, data, opts)
	if err == nil {
		return trimETag(info.ETag), nil
	}
	if isCode(err, nestedKeyCodes...) {
		// The server cannot hold an object at key, so none is there.
		return "", fmt.Errorf("s3 compare-and-swap %s: %w: %w", key, ErrNotFound, err)
	}
	if isPreconditionFailed(err) {
		// Some servers answer If-Match on a missing key with 412, not 404.
		cur, serr := s.stat(ctx, key)
		switch {
		case isCode(serr, "NoSuchKey"):
			return "", fmt.Errorf("s3 compare-and-swap %s: %w", key, ErrNotFound)
		case serr == nil && tries > 1 && cur.ETag == md5ETag(data):
			return cur.ETag, nil // our own earlier try landed
		}
		return "", fmt.Errorf("s3 compare-and-swap %s: %w", key, ErrConflict)
	}
	return "", s.fail("compare-and-swap", key, err)
}

// landed reports whether key now holds data as one single-part PUT would
// have stored it, and its ETag.
func (s *S3) landed(ctx context.Context, key string, data []byte) (ETag, bool) {
	cur, err := s.stat(ctx, key)
	if err != nil || cur.ETag != md5ETag(data) {
		return "", false
	}
	return cur.ETag, true
}

func md5ETag(data []byte) ETag {
	sum := md5.Sum(data)
	return ETag(hex.EncodeToString(sum[:]))
}

func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	_, err := s.retry.do(ctx, func() error {
		return s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	})
	if err != nil && !isCode(err, "NoSuchKey") {
		return s.fail("delete", key, err)
	}
	return nil
}

// List pages through ListObjectsV2 (1,000 keys a page). After a transient
// fault it resumes after the last key it yielded. It checks the order the
// server promises and fails rather than yield keys out of order.
func (s *S3) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	// Keys are UTF-8 but a byte prefix need not be ("\xc3" is a prefix of
	// "é"), and S3 wants UTF-8: list from the prefix's valid part and filter.
	listPrefix := validUTF8Prefix(prefix)
	return func(yield func(ObjectInfo, error) bool) {
		noOwner := false
		last := ""
		failures := 0
		for {
			opts := minio.ListObjectsOptions{Prefix: listPrefix, Recursive: true, StartAfter: last, FetchOwner: &noOwner}
			var err error
			progressed := false
			for oi := range s.client.ListObjectsIter(ctx, s.bucket, opts) {
				if oi.Err != nil {
					err = oi.Err
					break
				}
				if last != "" && oi.Key <= last {
					yield(ObjectInfo{}, fmt.Errorf("s3 list %q (bucket %q at %s): server sent %q after %q, out of order", prefix, s.bucket, s.endpoint, oi.Key, last))
					return
				}
				last, progressed = oi.Key, true
				if !strings.HasPrefix(oi.Key, prefix) {
					continue
				}
				if !yield(s.info(oi), nil) {
					return
				}
			}
			if err == nil {
				if cerr := ctx.Err(); cerr != nil {
					yield(ObjectInfo{}, fmt.Errorf("s3 list %q: %w", prefix, cerr))
				}
				return
			}
			if progressed {
				failures = 0
			}
			failures++
			if !isTransient(err) || failures >= s.retry.attempts || !s.retry.sleep(ctx, failures-1) {
				yield(ObjectInfo{}, s.fail("list", fmt.Sprintf("prefix %q", prefix), err))
				return
			}
		}
	}
}

// validUTF8Prefix returns the longest leading part of s that is valid UTF-8.
func validUTF8Prefix(s string) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return s[:i]
		}
		i += n
	}
	return s
}
