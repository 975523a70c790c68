package tables_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// TestScan: streamed batches hold exactly the rows of the block
// range, in order, with the projection's columns and values, at about the
// requested size, across several files.
func TestScan(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), smallGroups())
	ctx := context.Background()
	_, err := e.v.CreateProject(ctx, "p")
	require.NoError(t, err)
	e.append(t, "p", "main", "t", 0, 2500, 700)
	e.append(t, "p", "main", "t", 2500, 300, 300)
	e.append(t, "p", "main", "t", 2800, 1000, 1000)
	v, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)
	blocks := v.Blocks()
	require.Greater(t, len(blocks), 4)

	for _, tc := range []struct {
		name       string
		first, end int
		cols       []string
		batchBytes int64
	}{
		{"all, big batches", 0, len(blocks), nil, 1 << 30},
		{"all, small batches", 0, len(blocks), nil, 4 << 10},
		{"one-row batches", 1, 3, nil, 1},
		{"middle range, projection reordered", 2, len(blocks) - 1, []string{"blob", "id"}, 16 << 10},
		{"empty range", 3, 3, nil, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []int64
			var batches int
			for rec, err := range e.s.Scan(ctx, v, tc.cols, tc.first, tc.end, tc.batchBytes) {
				require.NoError(t, err)
				batches++
				if tc.cols == nil {
					for i := range int(rec.NumRows()) {
						checkRow(t, rec, i, rec.Column(0).(*array.Int64).Value(i))
					}
					ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
				} else {
					require.Equal(t, "blob", rec.Schema().Field(0).Name)
					require.Equal(t, "id", rec.Schema().Field(1).Name)
					for i := range int(rec.NumRows()) {
						require.Equal(t, blobFor(rec.Column(1).(*array.Int64).Value(i)), rec.Column(0).(*array.Binary).Value(i))
					}
					ids = append(ids, rec.Column(1).(*array.Int64).Int64Values()...)
				}
				// A batch never spans two row groups.
				if n := len(ids); n > 0 && rec.NumRows() > 0 {
					firstID, lastID := ids[n-int(rec.NumRows())], ids[n-1]
					k := blockOf(blocks, firstID)
					require.GreaterOrEqual(t, k, 0, "row %d is in no block", firstID)
					require.Less(t, lastID, blocks[k].FirstRow+blocks[k].Rows, "batch of rows %d..%d spans blocks", firstID, lastID)
				}
				rec.Release()
			}
			var want []int64
			if tc.end > tc.first {
				last := blocks[tc.end-1]
				want = seq(blocks[tc.first].FirstRow, last.FirstRow+last.Rows-blocks[tc.first].FirstRow)
			}
			require.Equal(t, want, ids)
			switch tc.batchBytes {
			case 1:
				require.Equal(t, len(want), batches)
			case 1 << 30:
				require.Equal(t, tc.end-tc.first, batches, "one batch per row group")
			}
		})
	}

	for _, bad := range [][2]int{{-1, 1}, {0, len(blocks) + 1}, {3, 2}} {
		for rec, err := range e.s.Scan(ctx, v, nil, bad[0], bad[1], 1<<20) {
			require.Nil(t, rec)
			require.ErrorIs(t, err, tables.ErrBlockOutOfRange)
		}
	}
	for rec, err := range e.s.Scan(ctx, v, []string{"nope"}, 0, 1, 1<<20) {
		require.Nil(t, rec)
		require.ErrorIs(t, err, tables.ErrColumnNotFound)
	}
	// Stopping early releases everything (the checked allocator verifies).
	for rec, err := range e.s.Scan(ctx, v, nil, 0, len(blocks), 1<<10) {
		require.NoError(t, err)
		rec.Release()
		break
	}
}

// blockOf returns the index of the block holding row ordinal row, or -1.
func blockOf(blocks []tables.Block, row int64) int {
	for k, b := range blocks {
		if row >= b.FirstRow && row < b.FirstRow+b.Rows {
			return k
		}
	}
	return -1
}

// TestScanHugeSizeClaim: a footer that claims a column chunk of 1 TiB
// uncompressed (its pages are intact) must not make Scan reserve that
// much for the column's values (pqarrow's binary preallocation does: a
// fatal out of memory, not a panic anything recovers); the rows still
// read.
func TestScanHugeSizeClaim(t *testing.T) {
	b, v, keys := fuzzTable(t)
	ctx := context.Background()
	data, _, err := b.Get(ctx, keys[0])
	require.NoError(t, err)
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	blob := pf.MetaData().Schema.ColumnIndexByName("blob")
	require.GreaterOrEqual(t, blob, 0)
	cc, err := pf.MetaData().RowGroup(0).ColumnChunk(blob)
	require.NoError(t, err)
	// In the footer's Thrift compact encoding, total_uncompressed_size
	// (field 6, i64) follows num_values and precedes total_compressed_size:
	// header 0x16, a zigzag varint, header 0x16.
	field := func(n int64) []byte {
		return append(binary.AppendUvarint([]byte{0x16}, uint64(n)<<1), 0x16)
	}
	footerLen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	start := len(data) - 8 - footerLen
	footer := bytes.Replace(data[start:len(data)-8], field(cc.TotalUncompressedSize()), field(1<<40), -1)
	require.NotEqual(t, data[start:len(data)-8], footer, "the size is in the footer")
	hostile := append(bytes.Clone(data[:start]), footer...)
	hostile = binary.LittleEndian.AppendUint32(hostile, uint32(len(footer)))
	hostile = append(hostile, "PAR1"...)
	_, err = b.Put(ctx, keys[0], bytes.NewReader(hostile), int64(len(hostile)))
	require.NoError(t, err)

	vs, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	s, err := tables.New(vs, tables.DefaultOptions())
	require.NoError(t, err)
	hpf, err := file.NewParquetReader(bytes.NewReader(hostile))
	require.NoError(t, err)
	hcc, err := hpf.MetaData().RowGroup(0).ColumnChunk(blob)
	require.NoError(t, err)
	require.Equal(t, int64(1<<40), hcc.TotalUncompressedSize())
	for _, batchBytes := range []int64{1 << 10, 1 << 30} {
		var rows int64
		for rec, err := range s.Scan(ctx, v, nil, 0, len(v.Blocks()), batchBytes) {
			require.NoError(t, err)
			rows += rec.NumRows()
			rec.Release()
		}
		require.Equal(t, v.Rows(), rows)
	}
}
