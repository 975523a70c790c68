package episodes

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/mix"
)

// BenchmarkVideoWindows streams every step of a run of 16-frame windows
// over the clips and reports the media bytes read per delivered frame
// (the ranged-read efficiency; media indexes are cached, so after the
// first step only access units are read) and the file bytes per frame.
func BenchmarkVideoWindows(b *testing.B) {
	clips := renderClips(b)
	media := newTestMedia(clips)
	en := newEnv(b, media)
	var fileBytes, frames int64
	r := &mix.Recipe{Seed: 11, BatchSize: 16}
	for i, c := range clips {
		en.appendMoments(tableName(c), int64(i), clipRows(c), nil)
		fileBytes += int64(len(c.data))
		frames += int64(c.frames)
		r.Components = append(r.Components, mix.Component{Project: "p", Table: tableName(c), Weight: 1, Columns: []string{"episode_index"},
			Windows: map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}`)}})
	}
	ctx := context.Background()
	run, err := en.e.Resolve(ctx, r)
	require.NoError(b, err)
	media.read.Store(0)
	var delivered, units int64
	b.ResetTimer()
	for range b.N {
		for st, err := range en.e.Steps(ctx, run, 0, 1, 0, 0) {
			require.NoError(b, err)
			s, segs := readStep(b, st.Batch)
			st.Batch.Release()
			delivered += int64(len(s) * 16)
			for _, g := range segs {
				units += int64(len(g.units))
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(media.read.Load())/float64(delivered), "read_B/frame")
	b.ReportMetric(float64(units)/float64(delivered), "units/frame")
	b.ReportMetric(float64(fileBytes)/float64(frames), "file_B/frame")
	fmt.Printf("video windows: %d frames delivered, %d media bytes read (%.0f B/frame; the files average %.0f B/frame), %.2f access units sent per frame delivered\n",
		delivered, media.read.Load(), float64(media.read.Load())/float64(delivered), float64(fileBytes)/float64(frames), float64(units)/float64(delivered))
}
