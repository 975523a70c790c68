package episodes

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
)

// DefaultTolerance is a video column's tolerance when its field metadata
// gives none: 0.0001 s, LeRobot's.
const DefaultTolerance = 100 * time.Microsecond

// videoColumns returns the indexes of schema's video columns, checking
// their type (tables.VideoColumns).
func videoColumns(schema *arrow.Schema) ([]int, error) { return tables.VideoColumns(schema) }

// tolerance is a video column's tolerance (weft.tolerance, seconds).
func tolerance(f arrow.Field) (time.Duration, error) {
	v, ok := f.Metadata.GetValue(tables.ToleranceKey)
	if !ok {
		return DefaultTolerance, nil
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s < 0 || math.IsInf(s, 0) || math.IsNaN(s) || s > 3600 {
		return 0, fmt.Errorf("%w: video column %s: weft.tolerance %q is not a number of seconds in [0, 3600]", ErrBadMedia, errdefs.Quote(f.Name), v)
	}
	return seconds(s), nil
}

// episodeColumn names schema's episode column (tables.EpisodeColumn): the
// schema metadata weft.episode, else episode_index, else episode; "" when
// there is none.
func episodeColumn(schema *arrow.Schema) (string, error) { return tables.EpisodeColumn(schema) }

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
