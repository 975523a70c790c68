package importers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// Format reads one dataset format. See the package doc for the contract.
type Format interface {
	// Name is the format's registry name ("wds", "mds", …).
	Name() string
	// Import reads every file of src it needs and writes its rows to w.
	// It validates opts first (ErrBadOption for a key it does not know).
	Import(ctx context.Context, src Source, w *Writer, opts FormatOptions) error
}

// FormatOptions are a format's options, as strings (from --opt KEY=VALUE
// or the Python keyword arguments).
type FormatOptions map[string]string

// Check fails with ErrBadOption on a key not in known.
func (o FormatOptions) Check(format string, known ...string) error {
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if !slices.Contains(known, k) {
			if len(known) == 0 {
				return fmt.Errorf("%w: format %s takes no options; got %s", ErrBadOption, format, errdefs.Quote(k))
			}
			return fmt.Errorf("%w: format %s has no option %s; its options are %s", ErrBadOption, format, errdefs.Quote(k), strings.Join(known, ", "))
		}
	}
	return nil
}

// Bool is option key as a bool (1/0/true/false/yes/no), def if unset.
func (o FormatOptions) Bool(key string, def bool) (bool, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%w: option %s=%s: want true or false", ErrBadOption, key, errdefs.Quote(v))
}

// Int is option key as an integer, def if unset.
func (o FormatOptions) Int(key string, def int64) (int64, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: option %s=%s: want an integer", ErrBadOption, key, errdefs.Quote(v))
	}
	return n, nil
}

// Registry finds formats by name.
type Registry struct {
	formats map[string]Format
}

// NewRegistry holds formats; a repeated name panics (a programming error).
func NewRegistry(formats ...Format) *Registry {
	r := &Registry{formats: map[string]Format{}}
	for _, f := range formats {
		if _, ok := r.formats[f.Name()]; ok {
			panic("importers: format " + f.Name() + " registered twice")
		}
		r.formats[f.Name()] = f
	}
	return r
}

// DefaultRegistry holds every built-in format: wds, mds, hf and lerobot.
func DefaultRegistry() *Registry {
	return NewRegistry(WebDataset{}, MDS{}, HF{}, LeRobot{})
}

// Names lists the registered formats, sorted.
func (r *Registry) Names() []string { return slices.Sorted(maps.Keys(r.formats)) }

// Lookup returns the format called name.
func (r *Registry) Lookup(name string) (Format, error) {
	f, ok := r.formats[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s; formats are %s", ErrUnknownFormat, errdefs.Quote(name), strings.Join(r.Names(), ", "))
	}
	return f, nil
}

// Unimplemented is a registered format that is not built yet: Import
// fails with ErrNotImplemented naming what it would import.
func Unimplemented(name, what string) Format { return unimplemented{name, what} }

type unimplemented struct{ name, what string }

func (u unimplemented) Name() string { return u.name }
func (u unimplemented) Import(context.Context, Source, *Writer, FormatOptions) error {
	return fmt.Errorf("%w: format %s (%s) is not implemented yet in this flightd", ErrNotImplemented, u.name, u.what)
}

// Options configure an Importer.
type Options struct {
	// Source says which sources are allowed and how S3 is reached.
	Source SourceOptions
	// Registry of formats; nil means DefaultRegistry().
	Registry *Registry
	// FileBytes bounds one data file, in Arrow bytes before encoding: a
	// table's rows go to a new file past it.
	FileBytes int64
	// MaxDuration bounds one import (see the package doc, "Time limit").
	MaxDuration time.Duration
	// ProgressEvery is the period of the progress callback.
	ProgressEvery time.Duration
	// AppendCheck, if set, builds the batch check of each data file (as
	// flight.Parts.AppendCheck for puts: video rows must name frames).
	AppendCheck func(ctx context.Context, p versions.ProjectName, t versions.TableName, schema *arrow.Schema) (tables.BatchCheck, error)
	// Allocator for the batches formats build; nil: memory.DefaultAllocator.
	Allocator memory.Allocator
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock for progress rates; nil: time.Now.
	Now func() time.Time
}

// DefaultOptions: 128 MiB data files (a table's next file is written
// while the last finishes: see TableWriter), 12 h per import, progress
// every 2 s, local sources allowed (the CLI; the server sets Source from
// its flags).
func DefaultOptions() Options {
	return Options{Source: SourceOptions{LocalAllowed: true}, FileBytes: 128 << 20, MaxDuration: 12 * time.Hour, ProgressEvery: 2 * time.Second}
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	if o.FileBytes < 1 || o.MaxDuration <= 0 || o.ProgressEvery <= 0 {
		return fmt.Errorf("%w: importer options need FileBytes >= 1, MaxDuration > 0, ProgressEvery > 0", errdefs.ErrInvalidArgument)
	}
	return nil
}

// Importer runs imports into a tables.Store.
type Importer struct {
	ts   *tables.Store
	opts Options
	reg  *Registry
	mem  memory.Allocator
	log  *slog.Logger
	now  func() time.Time
}

// New returns an Importer writing into ts.
func New(ts *tables.Store, opts Options) (*Importer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	im := &Importer{ts: ts, opts: opts, reg: opts.Registry, mem: opts.Allocator, log: opts.Logger, now: opts.Now}
	if im.reg == nil {
		im.reg = DefaultRegistry()
	}
	if im.mem == nil {
		im.mem = memory.DefaultAllocator
	}
	if im.log == nil {
		im.log = slog.New(slog.DiscardHandler)
	}
	if im.now == nil {
		im.now = time.Now
	}
	return im, nil
}

// Registry is the importer's format registry.
func (im *Importer) Registry() *Registry { return im.reg }

// Request is one import: the shape of the Flight action's body too.
type Request struct {
	Format  string        `json:"format"`
	Source  string        `json:"source"`
	Project string        `json:"project"`
	Branch  string        `json:"branch"`
	Table   string        `json:"table"`
	Options FormatOptions `json:"options,omitempty"`
}

// Record is what a commit records about its import (after
// "weft-import: " in the message), and the Importer's result.
type Record struct {
	Source        string           `json:"source"`
	Format        string           `json:"format"`
	FormatVersion string           `json:"format_version,omitempty"`
	Options       FormatOptions    `json:"options,omitempty"`
	Files         int64            `json:"files"`
	Bytes         int64            `json:"bytes"`
	Rows          int64            `json:"rows"`
	Tables        map[string]int64 `json:"tables"` // rows per table
	Media         int              `json:"media,omitempty"`
}

// RecordPrefix starts the line of a commit message that holds the Record.
const RecordPrefix = "weft-import: "

// Result is a committed import.
type Result struct {
	Commit *versions.Commit
	Record Record
}

// ProgressFunc receives progress snapshots (done is true once, after the
// source is read and before the commit).
type ProgressFunc func(p Progress, done bool)

// Import runs req: it checks the names, the format and the source (a
// local path outside the allowed roots is refused before anything is
// read), imports, and commits every table in one commit on req.Branch.
// On any error nothing is committed and the data files written are
// deleted (best effort; gc collects the rest).
func (im *Importer) Import(ctx context.Context, req Request, progress ProgressFunc) (*Result, error) {
	p, err := versions.ParseProjectName(req.Project)
	if err != nil {
		return nil, err
	}
	if req.Branch == "" {
		req.Branch = string(versions.MainBranch)
	}
	b, err := versions.ParseBranchName(req.Branch)
	if err != nil {
		return nil, err
	}
	t, err := versions.ParseTableName(req.Table)
	if err != nil {
		return nil, err
	}
	format, err := im.reg.Lookup(req.Format)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, im.opts.MaxDuration)
	defer cancel()
	src, err := OpenSource(ctx, req.Source, im.opts.Source)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	before, err := im.ts.Versions().Head(ctx, p, b)
	if err != nil {
		return nil, err
	}

	prog := newTracker(im.now)
	w := newWriter(im.ts, p, b, t, im.opts.FileBytes, im.mem, prog)
	w.check = im.opts.AppendCheck
	stopTicks := im.tick(prog, progress)
	ierr := format.Import(ctx, src, w, req.Options)
	stopTicks()
	var files []*tables.PendingFile
	var rows map[versions.TableName]int64
	if ierr == nil {
		files, rows, ierr = w.finish()
	}
	if ierr == nil && len(files) == 0 {
		ierr = fmt.Errorf("%w: %s has no rows to import", ErrBadInput, errdefs.Quote(req.Source))
	}
	if ierr != nil {
		w.abort(ctx)
		return nil, fmt.Errorf("import %s %s: %w", req.Format, errdefs.Quote(req.Source), ierr)
	}
	snap := prog.snapshot()
	if progress != nil {
		progress(snap, true)
	}
	rec := Record{Source: req.Source, Format: req.Format, FormatVersion: w.sourceVersion(), Options: req.Options,
		Files: snap.Files, Bytes: snap.Bytes, Tables: map[string]int64{}}
	for tn, n := range rows {
		rec.Tables[string(tn)] = n
		rec.Rows += n
	}
	w.mu.Lock()
	rec.Media = len(w.mu.media)
	w.mu.Unlock()
	msg, err := commitMessage(p, rec)
	if err != nil {
		w.abort(ctx)
		return nil, err
	}
	commit, err := im.ts.CommitFiles(ctx, p, b, msg, files)
	if err != nil {
		w.abort(ctx)
		return nil, fmt.Errorf("import %s %s: commit: %w", req.Format, errdefs.Quote(req.Source), err)
	}
	im.log.Info("import committed", "format", req.Format, "source", req.Source, "project", p, "branch", b,
		"commit", commit.ID.Short(), "parent", before.Short(), "rows", rec.Rows, "tables", len(rows), "bytes", rec.Bytes, "elapsed", snap.Elapsed.Round(time.Millisecond))
	return &Result{Commit: commit, Record: rec}, nil
}

// tick calls progress every ProgressEvery until the returned stop.
func (im *Importer) tick(prog *tracker, progress ProgressFunc) (stop func()) {
	if progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(im.opts.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				progress(prog.snapshot(), false)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// commitMessage is the import's commit message: a summary line, a blank
// line, and the Record as JSON.
func commitMessage(p versions.ProjectName, rec Record) (string, error) {
	js, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("encode import record: %w", err)
	}
	return fmt.Sprintf("import %s %s into %s/%s: %d rows\n\n%s%s", rec.Format, rec.Source, p, strings.Join(tableNames(rowsOf(rec)), ","), rec.Rows, RecordPrefix, js), nil
}

func rowsOf(rec Record) map[versions.TableName]int64 {
	out := make(map[versions.TableName]int64, len(rec.Tables))
	for t, n := range rec.Tables {
		out[versions.TableName(t)] = n
	}
	return out
}

// ParseRecord extracts the import Record from a commit message; ok is
// false for a commit that is not an import.
func ParseRecord(message string) (rec Record, ok bool) {
	for line := range strings.SplitSeq(message, "\n") {
		if js, found := strings.CutPrefix(line, RecordPrefix); found {
			if json.Unmarshal([]byte(js), &rec) == nil {
				return rec, true
			}
		}
	}
	return Record{}, false
}
