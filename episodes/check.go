package episodes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// BatchCheck checks one batch of a put before it is written
// (tables.AppendOptions.Check): firstRow is the batch's first row within
// the put.
type BatchCheck = tables.BatchCheck

// AppendCheck returns the check of a put of rows with schema into table t
// of project p (flight.Parts.AppendCheck), or nil when the schema has no
// video column. For every row of every video column, the check refuses,
// with an InvalidArgument error naming the row and its episode, a null
// value, a media object that is not uploaded or is not an indexable MP4, a
// time with no frame within the column's tolerance (naming the nearest
// frame and its time), and a time that is not after the previous row's in
// the same episode and media object. It keeps the last row's episode
// between batches, so it checks one put's batches in order.
func (k *Kinds) AppendCheck(_ context.Context, p versions.ProjectName, _ versions.TableName, schema *arrow.Schema) (BatchCheck, error) {
	if k.opts.Media == nil {
		return nil, fmt.Errorf("%w: the append check needs Options.Media", ErrNoMediaSource)
	}
	cols, err := videoColumns(schema)
	if err != nil || len(cols) == 0 {
		return nil, err
	}
	epCol, err := episodeColumn(schema)
	if err != nil {
		return nil, err
	}
	ep := -1
	if epCol != "" {
		ep = schema.FieldIndices(epCol)[0]
	}
	var (
		prevEpisode string
		havePrev    bool
		prev        = make([]map[string]float64, len(cols)) // per column: media -> last time in the episode
	)
	tols := make([]time.Duration, len(cols))
	for i, c := range cols {
		if tols[i], err = tolerance(schema.Field(c)); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context, schema *arrow.Schema, rec arrow.RecordBatch, firstRow int64) error {
		var epVal func(i int) string
		if ep >= 0 {
			col := rec.Column(ep)
			vals, ok := valuesOf(col)
			if !ok {
				return fmt.Errorf("%w: episode column %s is %s; it must be an integer or a string column", ErrNoEpisodes, errdefs.Quote(epCol), col.DataType())
			}
			epVal = func(i int) string {
				if col.IsNull(i) {
					return "null"
				}
				if vals.ints != nil {
					return strconv.FormatInt(vals.ints(i), 10)
				}
				return vals.strs(i)
			}
		}
		for i := range int(rec.NumRows()) {
			if err := ctx.Err(); err != nil {
				return err
			}
			row := firstRow + int64(i)
			where := fmt.Sprintf("row %d", row)
			if epVal != nil {
				e := epVal(i)
				where = fmt.Sprintf("row %d (episode %s)", row, e)
				if !havePrev || e != prevEpisode {
					for c := range prev {
						prev[c] = map[string]float64{}
					}
				}
				prevEpisode, havePrev = e, true
			}
			for ci, c := range cols {
				f := schema.Field(c)
				st := rec.Column(c).(*array.Struct)
				media, times := st.Field(0).(*array.String), st.Field(1).(*array.Float64)
				if st.IsNull(i) || media.IsNull(i) || times.IsNull(i) {
					return fmt.Errorf("%w: %s: video column %s is null; every row of a video column names a media object and a time", ErrBadMedia, where, errdefs.Quote(f.Name))
				}
				sha, t := media.Value(i), times.Value(i)
				x, err := k.mediaIndex(ctx, k.opts.Media, p, sha)
				if err != nil {
					if errors.Is(err, errdefs.ErrNotFound) {
						return fmt.Errorf("%w: %s: media %s is not uploaded; upload it first (DoPut media)", errdefs.ErrInvalidArgument, where, sha)
					}
					return fmt.Errorf("%s: %s: %w", where, f.Name, err)
				}
				d := seconds(t)
				if _, err := x.FrameAt(d, tols[ci]); err != nil {
					n, _ := x.Nearest(d, 0, x.Len()-1)
					return fmt.Errorf("%w: %s: %s time %s has no frame in media %s within %s; the nearest is frame %d at %s",
						ErrBadMedia, where, f.Name, formatSeconds(d), shortSHA(sha), strconv.FormatFloat(tols[ci].Seconds(), 'g', -1, 64)+"s", n, formatSeconds(x.FrameTime(n)))
				}
				if epVal != nil {
					if pt, ok := prev[ci][sha]; ok && t <= pt {
						return fmt.Errorf("%w: %s: %s time %s is not after the previous row's %s in the same episode and media %s; rows of an episode must have increasing times",
							ErrBadMedia, where, f.Name, formatSeconds(d), formatSeconds(seconds(pt)), shortSHA(sha))
					}
					prev[ci][sha] = t
				}
			}
		}
		return nil
	}, nil
}

// AppendCheck is Kinds.AppendCheck over src with default options, for a
// server that serves no windows.
func AppendCheck(src MediaSource) func(ctx context.Context, p versions.ProjectName, t versions.TableName, schema *arrow.Schema) (BatchCheck, error) {
	opts := DefaultOptions()
	opts.Media = src
	k, _ := New(opts)
	return k.AppendCheck
}
