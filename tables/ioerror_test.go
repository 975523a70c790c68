package tables_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// outageBucket's readers fail every ranged read with an Unavailable error
// while down is set (or once after reads have been served): the bucket's outage, not the file's damage.
type outageBucket struct {
	bucket.Bucket
	down  *atomic.Bool
	after *atomic.Int64 // when >= 0: reads left before down is set
}

var errOutage = fmt.Errorf("%w: injected outage", errdefs.ErrUnavailable)

func (o outageBucket) Open(ctx context.Context, key string) (bucket.Reader, error) {
	r, err := o.Bucket.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return outageReader{r, o.down, o.after}, nil
}

type outageReader struct {
	bucket.Reader
	down  *atomic.Bool
	after *atomic.Int64
}

func (r outageReader) ReadAt(p []byte, off int64) (int, error) {
	if r.after.Load() >= 0 && r.after.Add(-1) < 0 {
		r.down.Store(true)
	}
	if r.down.Load() {
		return 0, errOutage
	}
	return r.Reader.ReadAt(p, off)
}

// TestOutageIsNotCorrupt: a data file read that fails because the bucket
// does (its footer cached before) keeps the bucket's kind, Unavailable,
// on every read path: it is not reported as the file's damage.
func TestOutageIsNotCorrupt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	down, after := new(atomic.Bool), new(atomic.Int64)
	after.Store(-1)
	e := newProjectEnv(t, outageBucket{bucket.NewMem(), down, after}, smallGroups())
	e.append(t, "p", "main", "t", 0, 600, 600)
	v, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)
	require.Len(t, e.readAll(t, v), 600) // caches the footer
	// The ranged reads of a whole scan (its row groups' pages, coalesced).
	const many = 1 << 40
	after.Store(many)
	for rec, err := range e.s.Scan(ctx, v, nil, 0, len(v.Blocks()), 1<<12) {
		require.NoError(t, err)
		rec.Release()
	}
	reads := many - after.Load()
	after.Store(-1)
	require.Greater(t, reads, int64(1))
	down.Store(true)
	defer down.Store(false)

	check := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		require.False(t, errors.Is(err, versions.ErrCorrupt), "an outage reported as damage: %v", err)
		require.ErrorIs(t, err, errdefs.ErrUnavailable)
	}
	for n := range reads {
		// The outage starts after n ranged reads of the scan.
		t.Run(fmt.Sprintf("scan after %d reads", n), func(t *testing.T) {
			down.Store(false)
			after.Store(n)
			defer after.Store(-1)
			var got error
			for rec, err := range e.s.Scan(ctx, v, nil, 0, len(v.Blocks()), 1<<12) {
				if err != nil {
					got = err
					break
				}
				rec.Release()
			}
			down.Store(true)
			check(t, got)
		})
	}
	t.Run("footer", func(t *testing.T) {
		fresh := newEnv(t, e.b, smallGroups())
		v, err := fresh.s.Table(ctx, "p", "main", "t")
		require.NoError(t, err)
		r := fresh.s.NewReader(nil)
		defer r.Close()
		_, err = r.ReadBlock(ctx, v, v.Blocks()[0], v.Schema)
		check(t, err)
		_, _, err = fresh.s.Layout(ctx, v, v.Schema, tables.DefaultLayout())
		check(t, err)
	})
	for _, cols := range [][]string{nil, {"id"}, {"x"}, {"emb"}, {"name"}, {"blob"}} {
		t.Run(fmt.Sprintf("block %v", cols), func(t *testing.T) {
			proj, err := v.Projection(cols)
			require.NoError(t, err)
			r := e.s.NewReader(nil)
			defer r.Close()
			rec, err := r.ReadBlock(ctx, v, v.Blocks()[1], proj)
			if rec != nil {
				rec.Release()
			}
			check(t, err)
		})
	}
}
