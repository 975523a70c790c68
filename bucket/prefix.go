package bucket

import (
	"context"
	"io"
	"iter"
	"strings"
)

// Prefix returns a Bucket that stores every key under prefix + "/" + key in
// b, and lists only those keys, with the prefix stripped. Several Weft stores
// can share one bucket this way. Leading and trailing slashes of prefix are
// ignored; an empty prefix returns b itself. The prefix counts toward the
// 1024-byte key limit. A prefix that is not a valid key makes every call on a
// key fail with ErrInvalidKey, and List find nothing.
func Prefix(b Bucket, prefix string) Bucket {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return b
	}
	return &prefixed{b: b, dir: prefix + "/"}
}

type prefixed struct {
	b   Bucket
	dir string // the prefix with a trailing slash
}

// full validates key on its own (so errors name the caller's key) and
// returns the inner key; the inner bucket validates the prefix with it.
func (p *prefixed) full(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return p.dir + key, nil
}

func (p *prefixed) strip(info ObjectInfo) ObjectInfo {
	info.Key = strings.TrimPrefix(info.Key, p.dir)
	return info
}

func (p *prefixed) Get(ctx context.Context, key string) ([]byte, ObjectInfo, error) {
	k, err := p.full(key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	data, info, err := p.b.Get(ctx, k)
	return data, p.strip(info), err
}

func (p *prefixed) getSmall(ctx context.Context, key string, limit int64) ([]byte, ObjectInfo, error) {
	k, err := p.full(key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	data, info, err := GetSmall(ctx, p.b, k, limit)
	return data, p.strip(info), err
}

func (p *prefixed) Open(ctx context.Context, key string) (Reader, error) {
	k, err := p.full(key)
	if err != nil {
		return nil, err
	}
	return p.b.Open(ctx, k)
}

func (p *prefixed) Put(ctx context.Context, key string, body io.Reader, size int64) (ETag, error) {
	k, err := p.full(key)
	if err != nil {
		return "", err
	}
	return p.b.Put(ctx, k, body, size)
}

func (p *prefixed) PutIfAbsent(ctx context.Context, key string, data []byte) (ETag, error) {
	k, err := p.full(key)
	if err != nil {
		return "", err
	}
	return p.b.PutIfAbsent(ctx, k, data)
}

func (p *prefixed) CompareAndSwap(ctx context.Context, key string, old ETag, data []byte) (ETag, error) {
	k, err := p.full(key)
	if err != nil {
		return "", err
	}
	return p.b.CompareAndSwap(ctx, k, old, data)
}

func (p *prefixed) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	k, err := p.full(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.b.Stat(ctx, k)
	return p.strip(info), err
}

func (p *prefixed) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		for info, err := range p.b.List(ctx, p.dir+prefix) {
			if err != nil {
				yield(ObjectInfo{}, err)
				return
			}
			if !yield(p.strip(info), nil) {
				return
			}
		}
	}
}

func (p *prefixed) Delete(ctx context.Context, key string) error {
	k, err := p.full(key)
	if err != nil {
		return err
	}
	return p.b.Delete(ctx, k)
}

// Close closes the inner bucket if it is an io.Closer (S3 is).
func (p *prefixed) Close() error {
	if c, ok := p.b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
