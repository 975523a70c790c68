// Package mix turns recipes into runs and serves their rank streams: the
// `recipe` and `run` rows of Weft's Flight protocol, and the engine behind
// them.
//
// # Recipes and runs
//
// A Recipe names components (project, ref, table, weight, columns,
// windows), a seed and a global batch size B. Its JSON is decoded by the
// protocol's one decoder, client.Decode into a client.Recipe, and
// NewRecipe converts that (ParseRecipe does both and validates).
// Engine.Prepare pins every component's ref to a commit, counts its rows,
// lays out its blocks (below), makes the materializers of its columns
// (below, "Windows") and builds the run Record: format, run id, seed,
// batch size, steps, shuffle window, and per component project, ref as
// given, table, commit, weight, columns, rows, block sizes and windows.
// Prepare stores nothing: a caller checks the run against its request
// (world size, steps) or only wants its schema. Engine.Store then stores
// the record once with PutIfAbsent at projects/P/runs/RUN, P being the
// first component's project (docs/format.md), calling
// Options.OnRunRecordStored when it wrote it; Engine.Resolve is Prepare
// then Store. The run id is sampler.Plan.RunID over the record's
// semantic fields; each component's identity is the JSON array
// ["weft/mix/1", project, table, commit, columns], with the canonical
// windows object as a sixth element when the component has windows (so
// records and ids of recipes without windows are what they were before
// windows), so the id changes with any pinned commit, column list,
// window, weight ratio, seed, batch size, step count or shuffle window,
// and never with the world size, the server or the time. The same recipe
// at the same commits resolves to the same run on any server; if the
// record exists already, Store serves the stored one (only the refs as
// given can differ). Engine.Load finds a run by id alone (looking in a hint
// project first, then in every project), checks that the record hashes to
// its id, and pins the same table versions: any server over the bucket
// serves any run, and a new process after a crash serves it identically.
//
// Columns: the first component's "columns", or every column of its table
// that is not a window key; every component serves that set (a later component may repeat it or leave
// it out) and must give each column the same Arrow type, or the recipe is
// rejected naming the component and column. A column is nullable in the
// output if it is in any component. _component and _row are reserved.
//
// # Batches
//
// The global batch of step s is sampler.Plan.Batch(s): B (component, row)
// samples, with each component's exact share. Rank r of W gets positions
// r, r+W, … (W must divide B). Engine.Steps streams one Arrow record batch
// per step, from a start step to an end step, holding the rank's B/W rows
// in position order: the recipe's columns, then the windows' columns (in
// window key order; a kind may make several per key), then _component
// (int32, the component's index in the recipe) and _row (int64, the row
// ordinal in the component's pinned version). Every column is made by a
// materializer for the step's samples (below, "The engine"). The Flight
// layer sends a large step as several messages (docs/flight.md).
//
// # Windows
//
// A component's Windows maps an output column (the key) to a Window: a
// materializer kind and its spec, a JSON object, as the recipe gives it
// ({"kind": "video", "offsets": [0, 1, 2]} in JSON). The engine has the
// kinds of Options.Kinds, keyed by name, and KindParquet, which serves the
// recipe's columns and, as a window without parameters, the table column
// of the key's name. Prepare and Load make one Materializer per key for
// all components (Kind.New gets every component's spec and table version;
// it rejects a spec with ErrBadWindow naming the component), so a key's
// column is made in one pass over the step, in position order, whatever
// the mix of components. Every component names the same keys with the
// same kinds; one that leaves Windows out takes the first component's.
// A kind the engine lacks is ErrUnknownKind, for a recipe and for a
// stored run alike. Specs are kept canonical (client.Window) and recorded
// per component. The shuffle window's default and the block layout count
// only the recipe's columns.
//
// # Windowed scans
//
// Engine.PrepareScan is a run's materialization without a run: for one
// pinned table version, a column list and windows, it checks and
// canonicalizes the windows as Prepare does (the kinds of Options.Kinds,
// Canonicalizer, Kind.New against the version), lays out the columns'
// blocks and makes the materializers, as for a run with that one
// component. Scan.Steps streams a row range [lo, hi) through them as steps
// of at most N rows, the samples of a step being {Component: 0, Row: r}
// for consecutive r, with the same prefetching, cancellation and release
// as a rank stream (the two share one pipeline). A scan's batches are the
// materializers' fields and _row; there is no _component and no run
// record: nothing is stored.
//
// # Blocks
//
// The sampler shuffles blocks, consecutive row ranges, and rows within a
// window of about buffer_rows rows spanning several blocks, so that a block
// is read about once per epoch. Blocks are also the unit this engine reads
// and caches, so their size decides both the shuffle's locality and the
// cost of reading. The target size of a block is 1,024 rows' worth of the
// projected columns (uncompressed Parquet bytes), but at least 1 MiB and at
// most 8 MiB: a row group up to 5/4 of the target is one block; a larger
// one is cut into ⌈bytes/target⌉ blocks at the page boundaries (Parquet
// offset index) of its widest column nearest to an even split, so that
// reading a block decodes only its own pages. Small blocks make a resumed run's first
// batch cheap (it needs rows of a few blocks per component: 4 blocks of
// 1 MiB instead of 4 whole 9 MiB row groups for the small-row benchmark,
// ~45 ms instead of ~250 ms from a cold cache) and keep decoding in step
// with the draws. They rely on small pages: tables writes 128 KiB pages,
// so a block does not re-decode the whole pages of narrow columns around
// it. (With 8 MiB blocks and 1 MiB pages an epoch of the small-row mix ran
// at 533-553k samples/s; with 1 MiB blocks and 128 KiB pages, 647k.) Files
// written with large pages come out in fewer, larger blocks. Wide rows get
// larger blocks (100 KiB images: 8 MiB, 80 rows) because every block is a
// read, an S3 request each, and 1 MiB blocks of 10 images cut the
// large-row mix from MinIO to a third; the price is a slower first batch
// on resume for wide rows. 100 KiB images in 128 MiB row groups thus come
// out in blocks of about 8 MiB and not in whole row groups, provided the
// pages are that small (see "Wide rows"). The sampler splits blocks longer than
// the window and clumps runs of tiny ones into its shuffle units, so a
// table of a few thousand rows in one row group still comes out shuffled.
// The block sizes are in the record: resuming never recomputes them, and
// the layout constants (tables.DefaultLayout) are part of the format. The
// layout itself, like every Parquet read, lives in package tables
// (Store.Layout cuts row groups, Version.Split maps recorded sizes back to
// tables.Block values).
//
// # Shuffle window
//
// A recipe without "shuffle" gets buffer_rows = 8192
// (sampler.DefaultBufferRows), or fewer so that a window of the component
// with the widest rows holds about 64 MiB (at least 64 rows). This keeps
// the blocks a window touches within a fraction of the default cache for
// any row width; the value is recorded, so it is part of the run. A recipe
// may set any window; one whose blocks do not fit the cache still gives
// the same batches, but decodes blocks more than once per epoch.
//
// # The engine
//
// A rank stream runs a planner, which computes the rank slice of each
// step (sampler.Plan.RankSlice) and hands it to each of the run's
// materializers (Materializer.Prefetch: start the step's reads, return at
// once) up to Options.Prefetch steps ahead, and a builder, which has each
// materializer build its columns of the step (Pending.Build: wait, then
// make Arrow arrays in position order), appends _component and _row, and
// releases the step's Pending. Reads run through the stream's Loads (at
// most Options.ReadAhead at once per stream); the stream waits for all of
// them before it ends. The planner and builder know nothing else of a
// column: a new kind of column is a Kind registered in Options.Kinds,
// with no change to this package's planner, the run record logic or the
// Flight layer (mix/seam_test.go adds one in a test).
//
// The Parquet rows materializer (rows.go) is the first kind. Blocks are
// decoded by a tables.Reader into a byte-bounded LRU cache
// (internal/cache) shared by every stream of the Engine
// (Options.CacheBytes, default 1 GiB), keyed by tables.BlockID (data file,
// row group, row range) and column set, with single-flight loads: W ranks
// served by one engine decode a block once, not W times (Stats counts
// decodes, hits and joins). A load runs on its own context, cancelled once
// every stream waiting for it has gone. Its Prefetch locates the step's
// rows in their blocks and starts fetching the blocks (cache hits at once;
// Options.Decoders bounds decodes engine-wide); its Build waits for them
// and gathers the rows of all components, in position order, into the
// step's columns in one copy per column (tables.Reader.Gather: a direct
// kernel for fixed-width, boolean, binary, string, list, fixed-size list,
// map and struct columns; array.Concatenate for the rest). Every channel send selects on the
// context; leaving the loop or cancelling the context stops the planner,
// the builder and the loads at once and releases every block and batch.
// Memory is bounded by the cache plus the blocks and batches of a few steps
// per stream, whatever the table size: with the default window a step's
// rows come from the blocks of at most two windows per component (about
// 128 MiB each), and streams hold at most Prefetch+3 steps. (flightd
// also sets the Go runtime's soft memory limit to the cache plus 512 MiB,
// so that the garbage collector does not let the heap reach twice the live
// data.)
//
// # Wide rows
//
// A block read (tables.Reader.ReadBlock) opens its data file (footer and
// page index come from the tables store's byte-bounded footer cache),
// computes the byte ranges of the pages the block needs in every projected
// column from the offset index, coalesces ranges less than 64 KiB apart
// and fetches each merged range with one ranged read (one S3 GET), in
// parallel; the Parquet page readers then read from those buffers, with
// page buffers recycled between reads. Top-level binary and string columns
// (images) are read straight from the column chunk reader: each value is
// copied once from its decompressed page into the block; other columns go
// through pqarrow's record reader. Parquet decodes whole pages, so a block can be no smaller than its
// widest column's pages. arrow-go's writer checks the page size every 1024
// values, so with the tables package's defaults a column of 100 KiB values
// gets pages of ~100 MiB; write such tables with row groups sized by bytes
// (flightd --row-group-size, e.g. 8MiB) so that blocks stay small.
package mix
