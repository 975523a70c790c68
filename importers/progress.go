package importers

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weftdata/weft/internal/bytesize"
)

// Progress is a snapshot of a running import.
type Progress struct {
	Files      int64 `json:"files"`       // source files read to their end
	FilesTotal int64 `json:"files_total"` // planned (0: not known yet)
	Rows       int64 `json:"rows"`        // rows written, all tables
	Bytes      int64 `json:"bytes"`       // source bytes read
	BytesTotal int64 `json:"bytes_total"` // planned (0: not known yet)
	// Elapsed since the import started; BytesPerSec and RowsPerSec are
	// averages over it; ETA is the time left at that byte rate (0 when
	// not known).
	Elapsed     time.Duration `json:"elapsed_ns"`
	BytesPerSec float64       `json:"bytes_per_sec"`
	RowsPerSec  float64       `json:"rows_per_sec"`
	ETA         time.Duration `json:"eta_ns"`
}

// tracker counts an import's progress.
type tracker struct {
	files, filesTotal, rows, bytes, bytesTotal atomic.Int64
	start                                      time.Time
	now                                        func() time.Time
}

func newTracker(now func() time.Time) *tracker {
	return &tracker{start: now(), now: now}
}

func (t *tracker) snapshot() Progress {
	p := Progress{
		Files: t.files.Load(), FilesTotal: t.filesTotal.Load(),
		Rows: t.rows.Load(), Bytes: t.bytes.Load(), BytesTotal: t.bytesTotal.Load(),
		Elapsed: t.now().Sub(t.start),
	}
	if s := p.Elapsed.Seconds(); s > 0 {
		p.BytesPerSec = float64(p.Bytes) / s
		p.RowsPerSec = float64(p.Rows) / s
	}
	if p.BytesTotal > p.Bytes && p.BytesPerSec > 0 {
		p.ETA = time.Duration(float64(p.BytesTotal-p.Bytes) / p.BytesPerSec * float64(time.Second))
	}
	return p
}

// Fraction is the share of the planned bytes read, in [0, 1]; 0 when
// nothing is planned.
func (p Progress) Fraction() float64 {
	if p.BytesTotal <= 0 {
		return 0
	}
	return min(1, float64(p.Bytes)/float64(p.BytesTotal))
}

// String is a one-line summary: files, rows, bytes, rate, ETA.
func (p Progress) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "files %d", p.Files)
	if p.FilesTotal > 0 {
		fmt.Fprintf(&b, "/%d", p.FilesTotal)
	}
	fmt.Fprintf(&b, ", rows %d, %s", p.Rows, bytesize.Human(float64(p.Bytes)))
	if p.BytesTotal > 0 {
		fmt.Fprintf(&b, "/%s", bytesize.Human(float64(p.BytesTotal)))
	}
	fmt.Fprintf(&b, ", %s/s, %.0f rows/s", bytesize.Human(p.BytesPerSec), p.RowsPerSec)
	if p.ETA > 0 {
		fmt.Fprintf(&b, ", ETA %s", p.ETA.Round(time.Second))
	}
	return b.String()
}

// BarReporter returns a progress callback that redraws one bar line on
// out (a terminal) at each tick; call its result with done=true at the end
// to finish the line.
func BarReporter(out io.Writer) func(p Progress, done bool) {
	return func(p Progress, done bool) {
		const width = 30
		filled := int(p.Fraction() * width)
		if done {
			filled = width
		}
		bar := strings.Repeat("#", filled) + strings.Repeat(".", width-filled)
		fmt.Fprintf(out, "\r[%s] %3.0f%% %s\x1b[K", bar, 100*p.Fraction(), p)
		if done {
			fmt.Fprintln(out)
		}
	}
}

// LogReporter returns a progress callback that logs one line per tick.
func LogReporter(log *slog.Logger) func(p Progress, done bool) {
	return func(p Progress, done bool) {
		msg := "import progress"
		if done {
			msg = "import read everything"
		}
		log.Info(msg, "files", p.Files, "files_total", p.FilesTotal, "rows", p.Rows, "bytes", p.Bytes,
			"bytes_total", p.BytesTotal, "mib_per_sec", fmt.Sprintf("%.1f", p.BytesPerSec/(1<<20)),
			"rows_per_sec", fmt.Sprintf("%.0f", p.RowsPerSec), "eta", p.ETA.Round(time.Second))
	}
}
