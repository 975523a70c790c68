package tables

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/versions"
)

// TestCommitRefusesChangedKinds: an append written while its table did not
// exist (under its own schema, so checked as its own columns' kinds) is
// refused at commit when another append created the table meanwhile with
// other weft.* metadata: its rows were never checked as the table's.
func TestCommitRefusesChangedKinds(t *testing.T) {
	ctx := context.Background()
	v, err := versions.New(bucket.NewMem(), versions.DefaultOptions())
	require.NoError(t, err)
	s, err := New(v, DefaultOptions())
	require.NoError(t, err)
	_, err = v.CreateProject(ctx, "p")
	require.NoError(t, err)

	batch := func(schema *arrow.Schema) array.RecordReader {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 1, 2}, nil)
		b.Field(1).(*array.Int64Builder).AppendValues([]int64{7, 8, 9}, nil)
		rec := b.NewRecordBatch()
		defer rec.Release()
		r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		require.NoError(t, err)
		return r
	}
	fields := []arrow.Field{{Name: "ep", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Int64}}
	plain := arrow.NewSchema(fields, nil)
	meta := arrow.NewMetadata([]string{"weft.episode"}, []string{"ep"})
	episodic := arrow.NewSchema(fields, &meta)

	for _, tc := range []struct {
		name          string
		first, second *arrow.Schema
		refused       bool
	}{
		{"same kinds", plain, plain, false},
		{"other kinds", plain, episodic, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := versions.TableName("t_" + map[bool]string{false: "same", true: "other"}[tc.refused])
			r := batch(tc.first)
			pf, err := s.WriteFile(ctx, "p", versions.MainBranch, table, r, WriteOptions{})
			r.Release()
			require.NoError(t, err)
			r = batch(tc.second) // another append creates the table meanwhile
			_, err = s.Append(ctx, "p", versions.MainBranch, table, r, "")
			r.Release()
			require.NoError(t, err)
			_, err = s.CommitFiles(ctx, "p", versions.MainBranch, "m", []*PendingFile{pf})
			if !tc.refused {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrKindsChanged)
			require.ErrorIs(t, err, errdefs.ErrConflict)
			require.ErrorContains(t, err, "weft.episode=ep")
			tv, err := s.Table(ctx, "p", string(versions.MainBranch), table)
			require.NoError(t, err)
			require.EqualValues(t, 3, tv.Rows(), "only the other append's rows")
		})
	}
}
