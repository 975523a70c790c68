package versions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/weftdata/weft/bucket"
)

// MaxRecordSize bounds a record written once with PutRecord (a run
// record): conditional writes stay single-part.
const MaxRecordSize = bucket.MaxConditionalSize

// PutRunRecord stores the record of run id (64 hex digits, its content
// hash) in project p, once. If a record is there already it is returned
// (existing true) and nothing changes: the same run resolved again, here or
// by another server.
func (s *Store) PutRunRecord(ctx context.Context, p ProjectName, id string, body []byte) (stored []byte, existing bool, err error) {
	key := RunKey(p, id)
	if _, err := s.b.PutIfAbsent(ctx, key, body); errors.Is(err, bucket.ErrExists) {
		stored, _, gerr := GetSmall(ctx, s.b, key)
		if gerr != nil {
			return nil, false, fmt.Errorf("read run record %s: %w", key, gerr)
		}
		return stored, true, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("store run record %s: %w", key, err)
	}
	return body, false, nil
}

// GetRunRecord returns the record of run id in project p; an error
// wrapping ErrNotFound if p holds none.
func (s *Store) GetRunRecord(ctx context.Context, p ProjectName, id string) ([]byte, error) {
	key := RunKey(p, id)
	body, _, err := GetSmall(ctx, s.b, key)
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, fmt.Errorf("run record %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read run record %s: %w", key, err)
	}
	return body, nil
}

// RunRecordIDs lists the ids of the run records stored in project p that
// start with prefix (any string; "" lists all), in byte order.
func (s *Store) RunRecordIDs(ctx context.Context, p ProjectName, prefix string) ([]string, error) {
	base := RunsPrefix(p)
	var ids []string
	for info, err := range s.b.List(ctx, base+prefix) {
		if err != nil {
			return nil, fmt.Errorf("list run records %s%s*: %w", base, prefix, err)
		}
		ids = append(ids, strings.TrimPrefix(info.Key, base))
	}
	return ids, nil
}
