package episodes

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/weftdata/weft/errdefs"
)

// Metadata keys of the stored form (VIDEO-CONTRACT section 2). The
// integrator replaces the helpers below with tables.VideoColumns and
// tables.EpisodeColumn.
const (
	metaKind      = "weft.kind"
	metaTolerance = "weft.tolerance"
	metaEpisode   = "weft.episode"
	kindVideo     = "video"
)

// DefaultTolerance is a video column's tolerance when its field metadata
// gives none: 0.0001 s, LeRobot's.
const DefaultTolerance = 100 * time.Microsecond

// isVideo reports whether f is marked as a video column.
func isVideo(f arrow.Field) bool {
	v, ok := f.Metadata.GetValue(metaKind)
	return ok && v == kindVideo
}

// checkVideoType checks that f has the stored form of a video column.
func checkVideoType(f arrow.Field) error {
	st, ok := f.Type.(*arrow.StructType)
	if !ok || st.NumFields() != 2 {
		return fmt.Errorf("video column %s is %s; it must be struct<media: utf8, time: float64>", errdefs.Quote(f.Name), f.Type)
	}
	m, t := st.Field(0), st.Field(1)
	if m.Name != "media" || m.Type.ID() != arrow.STRING || t.Name != "time" || t.Type.ID() != arrow.FLOAT64 {
		return fmt.Errorf("video column %s is %s; it must be struct<media: utf8, time: float64>", errdefs.Quote(f.Name), f.Type)
	}
	return nil
}

// videoColumns returns the indexes of schema's video columns, checking
// their type.
func videoColumns(schema *arrow.Schema) ([]int, error) {
	var out []int
	for i, f := range schema.Fields() {
		if !isVideo(f) {
			continue
		}
		if err := checkVideoType(f); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadMedia, err)
		}
		out = append(out, i)
	}
	return out, nil
}

// tolerance is a video column's tolerance (weft.tolerance, seconds).
func tolerance(f arrow.Field) (time.Duration, error) {
	v, ok := f.Metadata.GetValue(metaTolerance)
	if !ok {
		return DefaultTolerance, nil
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s < 0 || math.IsInf(s, 0) || math.IsNaN(s) || s > 3600 {
		return 0, fmt.Errorf("%w: video column %s: weft.tolerance %q is not a number of seconds in [0, 3600]", ErrBadMedia, errdefs.Quote(f.Name), v)
	}
	return seconds(s), nil
}

// episodeColumn names schema's episode column: the schema metadata
// weft.episode, else episode_index, else episode; "" when there is none.
func episodeColumn(schema *arrow.Schema) (string, error) {
	if v, ok := schema.Metadata().GetValue(metaEpisode); ok {
		if len(schema.FieldIndices(v)) == 0 {
			return "", fmt.Errorf("%w: the schema's weft.episode names %s, which is not a column", ErrNoEpisodes, errdefs.Quote(v))
		}
		return v, nil
	}
	for _, n := range []string{"episode_index", "episode"} {
		if len(schema.FieldIndices(n)) > 0 {
			return n, nil
		}
	}
	return "", nil
}

// seconds converts seconds to a duration, rounded to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// formatSeconds writes d as seconds with six decimals.
func formatSeconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) + "s" }

// shortSHA is a media sha for messages.
func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
