package versions

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMediaObjectValidate(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		o    MediaObject
		ok   bool
	}{
		{"good", NewMediaObject(sha, 10), true},
		{"empty file", NewMediaObject(sha, 0), true},
		{"upper case", NewMediaObject(strings.ToUpper(sha), 10), false},
		{"short", NewMediaObject(sha[:63], 10), false},
		{"not hex", NewMediaObject(strings.Repeat("zz", 32), 10), false},
		{"negative size", NewMediaObject(sha, -1), false},
		{"wrong path", MediaObject{Path: "data/" + sha + ".mp4", SHA256: sha, Size: 1}, false},
		{"wrong extension", MediaObject{Path: "media/" + sha + ".mov", SHA256: sha, Size: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
}

func TestMediaKeys(t *testing.T) {
	sha := strings.Repeat("0f", 32)
	require.Equal(t, "media/"+sha+".mp4", MediaPath(sha))
	require.Equal(t, "projects/p/media/"+sha+".mp4", MediaKey("p", sha))
	got, ok := MediaSHA256("p", MediaKey("p", sha))
	require.True(t, ok)
	require.Equal(t, sha, got)
	for _, k := range []string{MediaKey("q", sha), "projects/p/media/x.mp4", "projects/p/data/" + sha + ".mp4", "projects/p/media/" + sha} {
		_, ok := MediaSHA256("p", k)
		require.False(t, ok, k)
	}
}

func TestMergeMedia(t *testing.T) {
	a, b, c := NewMediaObject(strings.Repeat("aa", 32), 1), NewMediaObject(strings.Repeat("bb", 32), 2), NewMediaObject(strings.Repeat("cc", 32), 3)
	got := MergeMedia([]MediaObject{c, a}, []MediaObject{b, a, b})
	require.Equal(t, []MediaObject{a, b, c}, got)
	m := &Manifest{Media: got}
	require.True(t, m.HasMedia(b.SHA256))
	require.False(t, m.HasMedia(strings.Repeat("dd", 32)))
}

// TestManifestFormats: a manifest is format 2 exactly when it names media,
// format-1 identity ignores the (empty) media list, and a reader rejects a
// format that contradicts the media present or an invalid media entry.
func TestManifestFormats(t *testing.T) {
	sha := strings.Repeat("12", 32)
	plain := &Manifest{Table: "t", Schema: []byte{1}, Files: []DataFile{{Path: "data/t/a.parquet", Rows: 1, Size: 1, RowGroups: []int64{1}}}}
	plain.seal()
	empty := &Manifest{Table: "t", Schema: []byte{1}, Files: plain.Files, Media: []MediaObject{}}
	empty.seal()
	require.Equal(t, ManifestFormat, plain.Format)
	require.Equal(t, plain.ID, empty.ID, "an empty media list is format 1, the same id")
	withMedia := &Manifest{Table: "t", Schema: []byte{1}, Files: plain.Files, Media: []MediaObject{NewMediaObject(sha, 5)}}
	withMedia.seal()
	require.Equal(t, ManifestMediaFormat, withMedia.Format)
	require.NotEqual(t, plain.ID, withMedia.ID)
	other := &Manifest{Table: "t", Schema: []byte{1}, Files: plain.Files, Media: []MediaObject{NewMediaObject(sha, 6)}}
	other.seal()
	require.NotEqual(t, withMedia.ID, other.ID, "the media list is hashed")

	encode := func(m *Manifest, edit func(map[string]any)) []byte {
		data, err := json.Marshal(m)
		require.NoError(t, err)
		var raw map[string]any
		require.NoError(t, json.Unmarshal(data, &raw))
		edit(raw)
		data, err = json.Marshal(raw)
		require.NoError(t, err)
		return data
	}
	got, err := decodeManifest(encode(withMedia, func(map[string]any) {}), withMedia.ID)
	require.NoError(t, err)
	require.Equal(t, withMedia.Media, got.Media)
	for _, tc := range []struct {
		name string
		m    *Manifest
		edit func(map[string]any)
	}{
		{"format 1 with media", withMedia, func(r map[string]any) { r["format"] = 1 }},
		{"format 2 without media", plain, func(r map[string]any) { r["format"] = 2 }},
		{"format 3", withMedia, func(r map[string]any) { r["format"] = 3 }},
		{"bad path", withMedia, func(r map[string]any) { r["media"].([]any)[0].(map[string]any)["path"] = "media/x.mp4" }},
		{"negative size", withMedia, func(r map[string]any) { r["media"].([]any)[0].(map[string]any)["size"] = -1 }},
		{"unsorted", withMedia, func(r map[string]any) {
			r["media"] = []any{map[string]any{"path": MediaPath(strings.Repeat("ff", 32)), "sha256": strings.Repeat("ff", 32), "size": 1},
				map[string]any{"path": MediaPath(sha), "sha256": sha, "size": 5}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeManifest(encode(tc.m, tc.edit), tc.m.ID)
			require.ErrorIs(t, err, ErrCorrupt)
			require.False(t, errors.Is(err, ErrInvalid), "damage to the store is Corrupt only: %v", err)
		})
	}
	require.ErrorIs(t, (&Manifest{Media: []MediaObject{NewMediaObject(sha, 1), NewMediaObject(sha, 1)}}).validate(), ErrInvalid, "repeats are refused")
}
