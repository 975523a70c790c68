package importers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

func TestHFParquetPlace(t *testing.T) {
	for _, tc := range []struct{ path, config, split string }{
		{"data/train-00000-of-00002.parquet", "default", "train"},
		{"data/validation-00001-of-00002.parquet", "default", "validation"},
		{"default/train/0000.parquet", "default", "train"},
		{"cfg/test/part-1.parquet", "cfg", "test"},
		{"cfg/train-00000-of-00001.parquet", "cfg", "train"},
		{"cfg/data/train-00000-of-00001.parquet", "cfg", "train"},
		{"train.parquet", "default", "train"},
		{"test-0.parquet", "default", "test"},
		{"a/b/c/0.parquet", "a/b", "c"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			c, s := hfParquetPlace(tc.path)
			require.Equal(t, tc.config, c)
			require.Equal(t, tc.split, s)
		})
	}
}

// hfStream is an Arrow IPC stream of rows, with a "huggingface" schema
// metadata if features is set.
func hfStream(t testing.TB, n int, features string) []byte {
	mem := memory.NewGoAllocator()
	var md *arrow.Metadata
	if features != "" {
		m := arrow.NewMetadata([]string{"huggingface"}, []string{`{"info": {"features": ` + features + `}}`})
		md = &m
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "label", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "img", Type: arrow.StructOf(arrow.Field{Name: "bytes", Type: arrow.BinaryTypes.Binary, Nullable: true}, arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	}, md)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i % 2))
		sb := b.Field(1).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.BinaryBuilder).Append([]byte{byte(i), 0xff})
		sb.FieldBuilder(1).(*array.StringBuilder).AppendNull()
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

const hfTestFeatures = `{"label": {"names": ["cat", "dog"], "_type": "ClassLabel"}, "img": {"_type": "Image"}}`

func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, data, 0o644))
	}
}

func hfDiskSplitFiles(t *testing.T, dir string, n int) map[string][]byte {
	return map[string][]byte{
		dir + "data-00000-of-00001.arrow": hfStream(t, n, hfTestFeatures),
		dir + "state.json":                []byte(`{"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": null}`),
		dir + "dataset_info.json":         []byte(`{"features": ` + hfTestFeatures + `, "version": {"version_str": "1.2.0"}}`),
	}
}

func testImporter(t *testing.T) (*Importer, *tables.Store) {
	t.Helper()
	ctx := context.Background()
	fsb, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	v, err := versions.New(fsb, versions.DefaultOptions())
	require.NoError(t, err)
	ts, err := tables.New(v, tables.DefaultOptions())
	require.NoError(t, err)
	_, err = v.CreateProject(ctx, "p")
	require.NoError(t, err)
	im, err := New(ts, DefaultOptions())
	require.NoError(t, err)
	return im, ts
}

func TestHFImport(t *testing.T) {
	dict := hfDiskSplitFiles(t, "train/", 5)
	for k, v := range hfDiskSplitFiles(t, "test/", 2) {
		dict[k] = v
	}
	dict["dataset_dict.json"] = []byte(`{"splits": ["train", "test"]}`)
	for _, tc := range []struct {
		name   string
		files  map[string][]byte
		opts   FormatOptions
		tables map[string]int64
		err    error
		msg    string
	}{
		{"dataset dict", dict, nil, map[string]int64{"t.train": 5, "t.test": 2}, nil, ""},
		{"split column", dict, FormatOptions{"splits": "column"}, map[string]int64{"t": 7}, nil, ""},
		{"one split", dict, FormatOptions{"split": "test"}, map[string]int64{"t": 2}, nil, ""},
		{"no such split", dict, FormatOptions{"split": "dev"}, nil, ErrBadOption, "train, test"},
		{"bad option", dict, FormatOptions{"splits": "rows"}, nil, ErrBadOption, "splits"},
		{"single dataset", hfDiskSplitFiles(t, "", 3), nil, map[string]int64{"t": 3}, nil, ""},
		{"missing info", func() map[string][]byte {
			f := hfDiskSplitFiles(t, "", 3)
			delete(f, "dataset_info.json")
			return f
		}(), nil, nil, ErrBadInput, "dataset_info.json"},
		{"truncated stream", func() map[string][]byte {
			f := hfDiskSplitFiles(t, "", 3)
			f["data-00000-of-00001.arrow"] = f["data-00000-of-00001.arrow"][:200]
			return f
		}(), nil, nil, ErrBadInput, "data-00000-of-00001.arrow"},
		{"ipc file", func() map[string][]byte {
			f := hfDiskSplitFiles(t, "", 3)
			f["data-00000-of-00001.arrow"] = []byte("ARROW1\x00\x00garbage")
			return f
		}(), nil, nil, ErrBadInput, "not a stream"},
		{"schema mismatch", func() map[string][]byte {
			f := hfDiskSplitFiles(t, "", 3)
			f["state.json"] = []byte(`{"_data_files": [{"filename": "data-00000-of-00001.arrow"}, {"filename": "b.arrow"}]}`)
			var buf bytes.Buffer
			s := arrow.NewSchema([]arrow.Field{{Name: "label", Type: arrow.BinaryTypes.String}}, nil)
			w := ipc.NewWriter(&buf, ipc.WithSchema(s))
			require.NoError(t, w.Close())
			f["b.arrow"] = buf.Bytes()
			return f
		}(), nil, nil, ErrBadInput, "b.arrow"},
		{"escaping data file", func() map[string][]byte {
			f := hfDiskSplitFiles(t, "", 3)
			f["state.json"] = []byte(`{"_data_files": [{"filename": "../x.arrow"}]}`)
			return f
		}(), nil, nil, ErrBadInput, "x.arrow"},
		{"nothing", map[string][]byte{"README.md": []byte("hi")}, nil, nil, ErrSourceNotFound, "no .parquet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			im, ts := testImporter(t)
			before, err := ts.Versions().Head(ctx, "p", versions.MainBranch)
			require.NoError(t, err)
			res, err := im.Import(ctx, Request{Format: "hf", Source: dir, Project: "p", Table: "t", Options: tc.opts}, nil)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.Contains(t, err.Error(), tc.msg)
				after, herr := ts.Versions().Head(ctx, "p", versions.MainBranch)
				require.NoError(t, herr)
				require.Equal(t, before, after, "nothing committed")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.tables, res.Record.Tables)
			require.Contains(t, res.Record.FormatVersion, "hf save_to_disk")
			require.Contains(t, res.Record.FormatVersion, "1.2.0")
			// The features are in the field metadata of the table's schema.
			m, err := ts.Versions().GetManifest(ctx, "p", res.Commit.Tables[versions.TableName(firstKey(tc.tables))])
			require.NoError(t, err)
			schema, err := tables.DecodeSchema(m.Schema)
			require.NoError(t, err)
			names, ok := schema.Field(0).Metadata.GetValue(MetaHFClassNames)
			require.True(t, ok)
			require.JSONEq(t, `["cat", "dog"]`, names)
			feat, _ := schema.Field(1).Metadata.GetValue(MetaHFFeature)
			require.JSONEq(t, `{"_type": "Image"}`, feat)
			if tc.opts["splits"] == "column" {
				require.Equal(t, "split", schema.Field(schema.NumFields()-1).Name)
			}
		})
	}
}

func firstKey(m map[string]int64) string {
	for k := range m {
		return k
	}
	return ""
}

func TestHFParquetConfigs(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"a/train/0.parquet": []byte("x"), "b/train/0.parquet": []byte("x")})
	im, _ := testImporter(t)
	_, err := im.Import(context.Background(), Request{Format: "hf", Source: dir, Project: "p", Table: "t"}, nil)
	require.ErrorIs(t, err, ErrBadOption)
	require.Contains(t, err.Error(), "a, b")
	_, err = im.Import(context.Background(), Request{Format: "hf", Source: dir, Project: "p", Table: "t", Options: FormatOptions{"config": "b"}}, nil)
	require.ErrorIs(t, err, ErrBadInput, "b's file is not Parquet")
	require.Contains(t, err.Error(), "b/train/0.parquet")
}

func TestHFEachBatch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	var rows int64
	data := hfStream(t, 4, "")
	err := hfEachBatch(bytes.NewReader(data), int64(len(data)), mem, "x.arrow",
		func(s *arrow.Schema) error { require.Equal(t, 2, s.NumFields()); return nil },
		func(rec arrow.RecordBatch) error { rows += rec.NumRows(); return nil })
	require.NoError(t, err)
	require.EqualValues(t, 4, rows)
	var feats map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(hfTestFeatures), &feats))
}

// FuzzHFEachBatch: a hostile IPC stream is an error, never a panic, and
// every batch handed on is valid.
func FuzzHFEachBatch(f *testing.F) {
	good := hfStream(f, 3, hfTestFeatures)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("ARROW1\x00\x00"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewGoAllocator()
		_ = hfEachBatch(bytes.NewReader(data), int64(len(data)), mem, "f.arrow",
			func(*arrow.Schema) error { return nil },
			func(rec arrow.RecordBatch) error {
				for _, c := range rec.Columns() {
					_ = c.String() // reads every value
				}
				return nil
			})
	})
}

// FuzzHFEachParquetBatch: a hostile Parquet file is an error, never a
// panic or a runaway allocation.
func FuzzHFEachParquetBatch(f *testing.F) {
	if seed, err := os.ReadFile(filepath.Join("testdata", "hf", "small.parquet")); err == nil {
		f.Add(seed)
		f.Add(seed[:len(seed)/2])
	}
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = hfEachParquetBatch(context.Background(), io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), 64, memory.NewGoAllocator(), "f.parquet",
			func(*arrow.Schema) error { return nil },
			func(rec arrow.RecordBatch) error {
				for _, c := range rec.Columns() {
					_ = c.String()
				}
				return nil
			})
	})
}
