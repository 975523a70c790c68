package importers

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
)

func TestExpandBraces(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      bool
	}{
		{"plain", "a.tar", []string{"a.tar"}, false},
		{"padded range", "s-{08..10}.tar", []string{"s-08.tar", "s-09.tar", "s-10.tar"}, false},
		{"range", "s-{1..3}", []string{"s-1", "s-2", "s-3"}, false},
		{"list", "{a,b}.{x,y}", []string{"a.x", "a.y", "b.x", "b.y"}, false},
		{"unclosed", "s-{1..3", nil, true},
		{"reversed", "{3..1}", nil, true},
		{"huge", "{0..999999999}", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExpandBraces(tc.in)
			if tc.err {
				require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSplitMember(t *testing.T) {
	for _, tc := range []struct{ name, key, ext string }{
		{"a.jpg", "a", "jpg"}, {"d/a.seg.png", "d/a", "seg.png"}, {"x.y/a.b", "x.y/a", "b"},
		{".hidden", "", ""}, {"noext", "", ""}, {"a.", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, e, ok := splitMember(tc.name)
			require.Equal(t, tc.key != "", ok)
			require.Equal(t, tc.key, k)
			require.Equal(t, tc.ext, e)
		})
	}
}

func TestLocalSourceRoots(t *testing.T) {
	root := t.TempDir()
	inside := filepath.Join(root, "in")
	outside := t.TempDir()
	require.NoError(t, os.MkdirAll(inside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.tar"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.tar"), filepath.Join(inside, "link.tar")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "escape")))
	ctx := context.Background()
	opts := SourceOptions{Roots: []string{root}, LocalAllowed: true}
	for _, tc := range []struct {
		name, url string
		want      error
	}{
		{"outside", outside, ErrSourceDenied},
		{"dotdot", filepath.Join(root, "..", filepath.Base(outside)), ErrSourceDenied},
		{"symlinked dir", filepath.Join(root, "escape"), ErrSourceDenied},
		{"no local at all", "/x", ErrSourceDenied},
		{"scheme", "http://x/y", ErrBadSource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			if tc.name == "no local at all" {
				o = SourceOptions{}
			}
			_, err := OpenSource(ctx, tc.url, o)
			require.ErrorIs(t, err, tc.want)
		})
	}
	src, err := OpenSource(ctx, inside, opts)
	require.NoError(t, err)
	_, err = src.Open(ctx, "link.tar")
	require.ErrorIs(t, err, ErrSourceDenied, "a symlink leaving the source is refused")
	_, err = src.Open(ctx, "../in/x")
	require.ErrorIs(t, err, ErrBadSource)
	files, err := src.List(ctx, "")
	require.NoError(t, err)
	require.Empty(t, files, "the outside symlink is not listed")
}

// mdsShardBytes builds a raw MDS shard of samples (each already encoded).
func mdsShardBytes(samples [][]byte) []byte {
	var buf bytes.Buffer
	n := uint32(len(samples))
	_ = binary.Write(&buf, binary.LittleEndian, n)
	off := 4 + 4*(n+1)
	_ = binary.Write(&buf, binary.LittleEndian, off)
	for _, s := range samples {
		off += uint32(len(s))
		_ = binary.Write(&buf, binary.LittleEndian, off)
	}
	for _, s := range samples {
		buf.Write(s)
	}
	return buf.Bytes()
}

func mdsTestCols(t testing.TB) ([]*mdsCol, *arrow.Schema) {
	var cols []*mdsCol
	var fields []arrow.Field
	for _, ce := range [][2]string{{"i", "int32"}, {"s", "str"}, {"nd", "ndarray:uint8"}} {
		c, err := mdsColumn(ce[0], ce[1])
		require.NoError(t, err)
		c.size = -1
		if ce[1] == "int32" {
			c.size = 4
		}
		cols = append(cols, c)
		fields = append(fields, c.field)
	}
	return cols, arrow.NewSchema(fields, nil)
}

func TestDecodeMDSShard(t *testing.T) {
	sample := func(i int32, s string, nd []byte) []byte {
		var b bytes.Buffer
		_ = binary.Write(&b, binary.LittleEndian, uint32(len(s)))
		_ = binary.Write(&b, binary.LittleEndian, uint32(2+len(nd)))
		_ = binary.Write(&b, binary.LittleEndian, i)
		b.WriteString(s)
		b.Write([]byte{1 << 2, byte(len(nd))}) // ndim 1, uint8 shape
		b.Write(nd)
		return b.Bytes()
	}
	good := mdsShardBytes([][]byte{sample(7, "héllo", []byte{1, 2, 3}), sample(-1, "", []byte{9})})
	for _, tc := range []struct {
		name string
		data []byte
		rows int64
		err  string
	}{
		{"good", good, 2, ""},
		{"truncated", good[:len(good)-3], 0, "outside the shard"},
		{"empty", nil, 0, "shorter than its header"},
		{"absurd count", []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, 0, "cannot hold their offsets"},
		{"cut sample", mdsShardBytes([][]byte{sample(1, "a", []byte{1, 2})[:14]}), 0, "declared"},
		{"bad shape", mdsShardBytes([][]byte{append(sample(1, "a", []byte{1, 2})[:13], 2, 9, 1, 2)}), 0, "ndarray"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			cols, schema := mdsTestCols(t)
			b := array.NewRecordBuilder(mem, schema)
			defer b.Release()
			n, err := decodeMDSShard(tc.data, cols, b, func() error { return nil })
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.rows, n)
			rec := b.NewRecordBatch()
			defer rec.Release()
			require.Equal(t, `[7 -1]`, rec.Column(0).String())
			require.Equal(t, `["héllo" ""]`, rec.Column(1).String())
		})
	}
}

func FuzzDecodeMDSShard(f *testing.F) {
	f.Add(mdsShardBytes([][]byte{{1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 'a', 4, 1, 5}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		cols, schema := mdsTestCols(t)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		_, _ = decodeMDSShard(data, cols, b, func() error { return nil })
	})
}

// memSource is a Source over in-memory files, for the tar walker's fuzz.
type memSource struct{ files map[string][]byte }

func (m memSource) URL() string     { return "mem" }
func (m memSource) Pattern() string { return "" }
func (m memSource) Close() error    { return nil }
func (m memSource) List(context.Context, string) ([]File, error) {
	var out []File
	for p, d := range m.files {
		out = append(out, File{p, int64(len(d))})
	}
	return out, nil
}
func (m memSource) Open(_ context.Context, p string) (io.ReadCloser, error) {
	return nopCloser{bytes.NewReader(m.files[p])}, nil
}
func (m memSource) OpenAt(context.Context, string) (ReaderAt, error) {
	return nil, errdefs.ErrUnimplemented
}

// TestWalkShardSampleBound: a sample's members together may hold at most
// max_sample_bytes (the import holds a sample whole), each member at most
// max_member_bytes.
func TestWalkShardSampleBound(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range []string{"a.x", "a.y", "a.z", "b.x"} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: n, Size: 400, Mode: 0o644, Typeflag: tar.TypeReg}))
		_, err := tw.Write(make([]byte, 400))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	src := memSource{files: map[string][]byte{"s.tar": buf.Bytes()}}
	for _, tc := range []struct {
		name              string
		maxMember, sample int64
		err               string
	}{
		{"fits", 400, 1200, ""},
		{"sample over", 400, 1199, `key "a": its members reach 1200 bytes at member "a.z", over max_sample_bytes=1199`},
		{"member over", 399, 1 << 20, `member "a.x" has 400 bytes, over max_member_bytes=399`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := wdsOptions{maxMember: tc.maxMember, maxSample: tc.sample, batchRows: 10}
			var keys []string
			err := walkShard(context.Background(), src, "s.tar", opts, false, nil, func(k string, _ []wdsMember) error {
				keys = append(keys, k)
				return nil
			})
			if tc.err == "" {
				require.NoError(t, err)
				require.Equal(t, []string{"a", "b"}, keys)
				return
			}
			require.ErrorIs(t, err, ErrTooLarge)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func FuzzWalkShard(f *testing.F) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range []string{"a.jpg", "a.cls", "b.jpg"} {
		_ = tw.WriteHeader(&tar.Header{Name: n, Size: 1, Mode: 0o644, Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte("1"))
	}
	_ = tw.Close()
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:700])
	f.Fuzz(func(t *testing.T, data []byte) {
		src := memSource{files: map[string][]byte{"s.tar": data}}
		opts := wdsOptions{decode: true, surveyAll: true, maxMember: 1 << 20, maxSample: 1 << 20, batchRows: 10}
		_ = walkShard(context.Background(), src, "s.tar", opts, false, nil, func(string, []wdsMember) error { return nil })
	})
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// TestJSONFileTooLarge: a JSON file read whole (HF's state.json, an MDS
// index) over 64 MiB is refused as too large, naming the limit, not cut
// and then refused as bad JSON. The file is sparse: quick to make.
func TestJSONFileTooLarge(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"state.json", "index.json"} {
		f, err := os.Create(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(65<<20))
		require.NoError(t, f.Close())
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "small.json"), []byte(`{"splits": ["train"]}`), 0o644))
	ctx := context.Background()
	src, err := OpenSource(ctx, dir, SourceOptions{Roots: []string{dir}, LocalAllowed: true})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		read func() error
	}{
		{"hf", func() error { var v any; return hfReadJSON(ctx, src, "state.json", &v) }},
		{"mds", func() error { _, err := readMDSIndex(ctx, src, "index.json", 1<<30); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read()
			require.ErrorIs(t, err, ErrTooLarge)
			require.NotErrorIs(t, err, ErrBadInput)
			require.ErrorContains(t, err, "too large (limit 64 MiB)")
		})
	}
	var dd struct{ Splits []string }
	require.NoError(t, hfReadJSON(ctx, src, "small.json", &dd))
	require.Equal(t, []string{"train"}, dd.Splits)
}
