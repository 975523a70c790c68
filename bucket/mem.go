package bucket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"sort"
	"strings"
	"sync"
	"time"
)

// Mem is an in-memory Bucket for unit tests of logic. It keeps the full
// contract, within one process.
type Mem struct {
	mu struct {
		sync.Mutex
		objects map[string]memObject
	}
}

type memObject struct {
	data    []byte
	etag    ETag
	modTime time.Time
}

var _ Bucket = (*Mem)(nil)

// NewMem returns an empty in-memory bucket.
func NewMem() *Mem {
	m := &Mem{}
	m.mu.objects = make(map[string]memObject)
	return m
}

// ContentETag is the ETag that FS and Mem give an object: the first 128 bits
// of the SHA-256 of its bytes, in hex.
func ContentETag(data []byte) ETag {
	sum := sha256.Sum256(data)
	return ETag(hex.EncodeToString(sum[:16]))
}

func (m *Mem) getLocked(key string) (memObject, error) {
	o, ok := m.mu.objects[key]
	if !ok {
		return memObject{}, fmt.Errorf("mem %s: %w", key, ErrNotFound)
	}
	return o, nil
}

func (m *Mem) Get(ctx context.Context, key string) ([]byte, ObjectInfo, error) {
	return m.getSmall(ctx, key, -1)
}

// getSmall is Get refusing an object over limit bytes (limit < 0: any).
func (m *Mem) getSmall(_ context.Context, key string, limit int64) ([]byte, ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return nil, ObjectInfo{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, err := m.getLocked(key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	if limit >= 0 && int64(len(o.data)) > limit {
		return nil, ObjectInfo{}, fmt.Errorf("mem get: %w", tooLarge(key, int64(len(o.data)), limit))
	}
	return bytes.Clone(o.data), o.info(key), nil
}

func (o memObject) info(key string) ObjectInfo {
	return ObjectInfo{Key: key, Size: int64(len(o.data)), ETag: o.etag, ModTime: o.modTime}
}

func (m *Mem) Open(ctx context.Context, key string) (Reader, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, err := m.getLocked(key)
	if err != nil {
		return nil, err
	}
	// Stored slices are never mutated, so sharing one is a version pin.
	return bytesReader{bytes.NewReader(o.data)}, nil
}

type bytesReader struct{ *bytes.Reader }

// ReadAt follows the Reader contract, where bytes.Reader differs: a zero-byte
// read at the very end is 0, nil (bytes.Reader says io.EOF).
func (r bytesReader) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 && off >= 0 && off <= r.Size() {
		return 0, nil
	}
	return r.Reader.ReadAt(p, off)
}

func (bytesReader) Close() error { return nil }

func (m *Mem) Put(ctx context.Context, key string, body io.Reader, size int64) (ETag, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return "", fmt.Errorf("mem put %s: read body: %w", key, err)
	}
	if size >= 0 && int64(len(data)) != size {
		return "", fmt.Errorf("mem put %s: body has %d bytes, size said %d", key, len(data), size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.storeLocked(key, data), nil
}

func (m *Mem) storeLocked(key string, data []byte) ETag {
	o := memObject{data: data, etag: ContentETag(data), modTime: time.Now()}
	m.mu.objects[key] = o
	return o.etag
}

func (m *Mem) PutIfAbsent(ctx context.Context, key string, data []byte) (ETag, error) {
	if err := checkConditional(key, data); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mu.objects[key]; ok {
		return "", fmt.Errorf("mem %s: %w", key, ErrExists)
	}
	return m.storeLocked(key, bytes.Clone(data)), nil
}

func (m *Mem) CompareAndSwap(ctx context.Context, key string, old ETag, data []byte) (ETag, error) {
	if err := checkConditional(key, data); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, err := m.getLocked(key)
	if err != nil {
		return "", err
	}
	if o.etag != old {
		return "", fmt.Errorf("mem %s: %w", key, ErrConflict)
	}
	return m.storeLocked(key, bytes.Clone(data)), nil
}

// checkConditional validates the key and size of a conditional write.
func checkConditional(key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if len(data) > MaxConditionalSize {
		return fmt.Errorf("%s: %w: %d bytes, limit %d", key, ErrTooLarge, len(data), MaxConditionalSize)
	}
	return nil
}

func (m *Mem) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, err := m.getLocked(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	return o.info(key), nil
}

func (m *Mem) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		m.mu.Lock()
		var infos []ObjectInfo
		for k, o := range m.mu.objects {
			if strings.HasPrefix(k, prefix) {
				infos = append(infos, o.info(k))
			}
		}
		m.mu.Unlock()
		sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
		for _, info := range infos {
			if err := ctx.Err(); err != nil {
				yield(ObjectInfo{}, err)
				return
			}
			if !yield(info, nil) {
				return
			}
		}
	}
}

func (m *Mem) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mu.objects, key)
	return nil
}
