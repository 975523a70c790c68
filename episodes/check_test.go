package episodes

import (
	"context"
	"encoding/hex"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
)

func TestAppendCheck(t *testing.T) {
	clips := renderClips(t)
	c := clips[3] // variable frame rate
	media := newTestMedia(clips)
	check := AppendCheck(media)
	ctx := context.Background()
	schema := momentsSchema(map[string]string{tables.ToleranceKey: "0.0001"})

	run := func(rows []row, firstRow int64) error {
		fn, err := check(ctx, "p", "t", schema)
		require.NoError(t, err)
		require.NotNil(t, fn)
		rec := momentsBatch(schema, 0, rows)
		defer rec.Release()
		return fn(ctx, schema, rec, firstRow)
	}
	good := clipRows(c)
	require.NoError(t, run(good, 0))

	missing := hex.EncodeToString(make([]byte, 32))
	off := append([]row(nil), good[:5]...)
	off[3].time += 0.002
	back := append([]row(nil), good[:5]...)
	back[3], back[4] = back[4], back[3]
	for _, tc := range []struct {
		name string
		rows []row
		kind error
		msg  string
	}{
		{"time off", off, ErrBadMedia, "row 13 (episode 100): cam time " + formatSeconds(seconds(off[3].time)) + " has no frame in media " + c.sha[:12] + " within 0.0001s; the nearest is frame 3 at " + formatSeconds(seconds(c.seconds(3)))},
		{"missing", []row{{1, missing, 0}}, errdefs.ErrInvalidArgument, "row 10 (episode 1): media " + missing + " is not uploaded; upload it first (DoPut media)"},
		{"not increasing", back, ErrBadMedia, "row 14 (episode 100): cam time " + formatSeconds(seconds(back[4].time)) + " is not after the previous row's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.rows, 10)
			require.ErrorIs(t, err, tc.kind)
			require.ErrorContains(t, err, tc.msg)
		})
	}

	// No video column: no check.
	plain := arrow.NewSchema(momentsSchema(nil).Fields()[:2], nil)
	fn, err := check(ctx, "p", "t", plain)
	require.NoError(t, err)
	require.Nil(t, fn)
}
