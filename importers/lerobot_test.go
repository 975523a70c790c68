package importers

import "testing"

func TestFormatPath(t *testing.T) {
	tests := []struct {
		name, tmpl string
		vals       map[string]any
		want       string
		fails      bool
	}{
		{"v3 data", "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet", map[string]any{"chunk_index": int64(1), "file_index": int64(23)}, "data/chunk-001/file-023.parquet", false},
		{"v3 video", "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4", map[string]any{"video_key": "observation.images.top", "chunk_index": int64(0), "file_index": int64(1000)}, "videos/observation.images.top/chunk-000/file-1000.mp4", false},
		{"v2.1 data", "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet", map[string]any{"episode_chunk": int64(0), "episode_index": int64(42)}, "data/chunk-000/episode_000042.parquet", false},
		{"unknown field", "data/{nope}.parquet", map[string]any{}, "", true},
		{"unclosed", "data/{chunk_index", map[string]any{"chunk_index": int64(1)}, "", true},
		{"escapes the source", "../{video_key}.mp4", map[string]any{"video_key": "x"}, "", true},
		{"key with a slash up", "videos/{video_key}/a.mp4", map[string]any{"video_key": ".."}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := formatPath(tt.tmpl, tt.vals)
			if tt.fails {
				if err == nil {
					t.Fatalf("formatPath(%q) = %q, want an error", tt.tmpl, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("formatPath(%q) = %q, %v; want %q", tt.tmpl, got, err, tt.want)
			}
		})
	}
}

func TestLeRobotRegistered(t *testing.T) {
	f, err := DefaultRegistry().Lookup("lerobot")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(LeRobot); !ok {
		t.Fatalf("lerobot is %T, want LeRobot", f)
	}
}
