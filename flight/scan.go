package flight

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/filter"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// parseDescriptor turns a GetFlightInfo or GetSchema descriptor into a scan
// request or a run command; exactly one is set.
func parseDescriptor(d *arrowflight.FlightDescriptor) (*client.ScanRequest, *client.RunCommand, error) {
	switch d.GetType() {
	case arrowflight.DescriptorPATH:
		path := d.GetPath()
		if len(path) != 3 {
			return nil, nil, fmt.Errorf("%w: path %q has %d parts; want [project, ref, table]", ErrBadRequest, path, len(path))
		}
		return &client.ScanRequest{Project: path[0], Ref: path[1], Table: path[2]}, nil, nil
	case arrowflight.DescriptorCMD:
		var cmd client.Command
		if err := decode(ErrBadRequest, "command", d.GetCmd(), &cmd); err != nil {
			return nil, nil, fmt.Errorf("%w; commands are: %s", err, client.Commands)
		}
		if cmd.Scan != nil {
			return cmd.Scan, nil, nil
		}
		return nil, &cmd.RunCommand, nil
	}
	return nil, nil, fmt.Errorf("%w: descriptor type %v; send a path [project, ref, table] or a JSON command: %s", ErrBadRequest, d.GetType(), client.Commands)
}

// parseDescriptor is parseDescriptor with the command's length checked
// first.
func (s *Service) parseDescriptor(d *arrowflight.FlightDescriptor) (*client.ScanRequest, *client.RunCommand, error) {
	if err := s.checkLen("command", d.GetCmd()); err != nil {
		return nil, nil, err
	}
	return parseDescriptor(d)
}

// resolve validates a scan request and pins it to a table version. A
// request with windows is a windowed scan: sc is its mix.Scan (and schema
// its schema); otherwise sc is nil.
func (s *Service) resolve(ctx context.Context, r *client.ScanRequest) (v *tables.Version, schema *arrow.Schema, sc *mix.Scan, err error) {
	if err := r.Validate(); err != nil {
		return nil, nil, nil, kindError{kind: ErrBadRequest, err: fmt.Errorf("scan: %w", err)}
	}
	p, err := parseProject(r.Project)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := allow(ctx, string(p), auth.Read); err != nil {
		return nil, nil, nil, err
	}
	t, err := versions.ParseTableName(r.Table)
	if err != nil {
		return nil, nil, nil, err
	}
	if v, err = s.tables.Table(ctx, p, r.Ref, t); err != nil {
		return nil, nil, nil, err
	}
	if len(r.Windows) > 0 {
		if sc, err = s.mix.PrepareScan(ctx, v, r.Columns, r.Windows); err != nil {
			return nil, nil, nil, err
		}
		return v, sc.Schema(), sc, nil
	}
	if schema, err = v.Projection(r.Columns); err != nil {
		return nil, nil, nil, err
	}
	if r.Filter != "" {
		if _, err := s.compileFilter(v, r.Filter); err != nil {
			return nil, nil, nil, err
		}
	}
	return v, schema, nil, nil
}

// compileFilter compiles a scan's filter against v's schema, within the
// service's limits.
func (s *Service) compileFilter(v *tables.Version, text string) (*filter.Filter, error) {
	f, err := filter.Compile(text, v.Schema, filter.DefaultLimits())
	if err != nil {
		return nil, fmt.Errorf("scan of %s: %w", v.Table, err)
	}
	return f, nil
}

// GetSchema returns the (projected) schema of a scan.
func (s *Service) GetSchema(ctx context.Context, d *arrowflight.FlightDescriptor) (*arrowflight.SchemaResult, error) {
	res, err := func() (*arrowflight.SchemaResult, error) {
		req, mreq, err := s.parseDescriptor(d)
		if err != nil {
			return nil, err
		}
		if mreq != nil {
			run, _, err := s.planRun(ctx, mreq)
			if err != nil {
				return nil, err
			}
			return &arrowflight.SchemaResult{Schema: arrowflight.SerializeSchema(run.Schema(), s.mem)}, nil
		}
		_, schema, _, err := s.resolve(ctx, req)
		if err != nil {
			return nil, err
		}
		return &arrowflight.SchemaResult{Schema: arrowflight.SerializeSchema(schema, s.mem)}, nil
	}()
	return res, s.status(ctx, "GetSchema", err)
}

// GetFlightInfo plans a scan (schema, row count, endpoints) or a run (one
// endpoint per rank).
func (s *Service) GetFlightInfo(ctx context.Context, d *arrowflight.FlightDescriptor) (*arrowflight.FlightInfo, error) {
	s.hook("GetFlightInfo")
	info, err := func() (*arrowflight.FlightInfo, error) {
		req, mreq, err := s.parseDescriptor(d)
		if err != nil {
			return nil, err
		}
		if mreq != nil {
			return s.runInfo(ctx, d, mreq)
		}
		v, schema, sc, err := s.resolve(ctx, req)
		if err != nil {
			return nil, err
		}
		if sc != nil {
			return s.windowScanInfo(ctx, d, sc)
		}
		if req.Filter != "" || req.Shards > 0 || req.Balanced {
			return s.filteredInfo(ctx, d, v, schema, req)
		}
		return s.flightInfo(ctx, d, v, schema, req.Columns)
	}()
	return info, s.status(ctx, "GetFlightInfo", err)
}

// ListFlights lists one FlightInfo per table at branch main, of the project
// the criteria names, or of every project.
func (s *Service) ListFlights(c *arrowflight.Criteria, stream arrowflight.FlightService_ListFlightsServer) error {
	ctx := stream.Context()
	err := func() error {
		var projects []versions.ProjectName
		if name := string(c.GetExpression()); name != "" {
			p, err := versions.ParseProjectName(name)
			if err != nil {
				return fmt.Errorf("%w (the ListFlights criteria is a project name, or empty for all)", err)
			}
			if err := allow(ctx, string(p), auth.Read); err != nil {
				return err
			}
			projects = []versions.ProjectName{p}
		} else {
			all, err := s.v.ListProjects(ctx)
			if err != nil {
				return err
			}
			// Only the projects the token may read: it learns of no other.
			who, _ := auth.FromContext(ctx)
			for _, p := range all {
				if who.Can(string(p), auth.Read) {
					projects = append(projects, p)
				}
			}
		}
		for _, p := range projects {
			head, err := s.v.Resolve(ctx, p, string(versions.MainBranch))
			if err != nil {
				return err
			}
			commit, err := s.v.GetCommit(ctx, p, head)
			if err != nil {
				return err
			}
			names := make([]versions.TableName, 0, len(commit.Tables))
			for t := range commit.Tables {
				names = append(names, t)
			}
			slices.Sort(names)
			for _, t := range names {
				v, err := s.tables.TableAt(ctx, p, head, t)
				if err != nil {
					return err
				}
				d := &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorPATH, Path: []string{string(p), string(versions.MainBranch), string(t)}}
				info, err := s.flightInfo(ctx, d, v, v.Schema, nil)
				if err != nil {
					return err
				}
				if err := stream.Send(info); err != nil {
					return err
				}
			}
		}
		return nil
	}()
	return s.status(ctx, "ListFlights", err)
}

// flightInfo describes a scan of v: one endpoint per group of consecutive
// blocks of about EndpointBytes, each with a ticket pinned to v's commit.
func (s *Service) flightInfo(ctx context.Context, d *arrowflight.FlightDescriptor, v *tables.Version, schema *arrow.Schema, columns []string) (*arrowflight.FlightInfo, error) {
	meta, err := json.Marshal(client.ScanMetadata{Commit: string(v.Commit)})
	if err != nil {
		return nil, err
	}
	info := &arrowflight.FlightInfo{
		Schema:           arrowflight.SerializeSchema(schema, s.mem),
		FlightDescriptor: d,
		TotalRecords:     v.Rows(),
		TotalBytes:       -1,
		Ordered:          true,
		AppMetadata:      meta,
	}
	for _, g := range endpointGroups(v, s.opts.EndpointBytes) {
		st := scanTicket{Project: v.Project, Commit: v.Commit, Table: v.Table, Columns: columns, First: g.first, End: g.end, Rows: g.rows}
		tkt, err := s.encodeTicket(ctx, kindScan, st)
		if err != nil {
			return nil, err
		}
		info.Endpoint = append(info.Endpoint, &arrowflight.FlightEndpoint{Ticket: &arrowflight.Ticket{Ticket: tkt}, Location: s.locations(len(info.Endpoint))})
	}
	if err := s.checkReply(info); err != nil {
		return nil, fmt.Errorf("%w; scan fewer columns, or ask the operator for a larger --scan-endpoint-size", err)
	}
	return info, nil
}

type blockGroup struct {
	first, end int
	rows       int64
}

// endpointGroups splits v's blocks, in order, into groups of about target
// Parquet bytes (estimated from each file's size, in proportion to rows).
func endpointGroups(v *tables.Version, target int64) []blockGroup {
	var (
		out   []blockGroup
		cur   blockGroup
		bytes int64
	)
	for i, b := range v.Blocks() {
		f := v.Manifest.Files[b.File]
		bytes += f.Size * b.Rows / max(1, f.Rows)
		cur.end = i + 1
		cur.rows += b.Rows
		if bytes >= target {
			out = append(out, cur)
			cur, bytes = blockGroup{first: i + 1, end: i + 1}, 0
		}
	}
	if cur.end > cur.first {
		out = append(out, cur)
	}
	return out
}

// DoGet streams the rows a ticket names: once its signature verifies,
// and the token may read every project the ticket names.
func (s *Service) DoGet(t *arrowflight.Ticket, stream arrowflight.FlightService_DoGetServer) error {
	ctx := stream.Context()
	s.hook("DoGet")
	err := func() error {
		kind, payload, err := s.decodeTicket(ctx, t.GetTicket())
		if err != nil {
			return err
		}
		release, err := s.slot(ctx, s.lim.streams, "DoGet streams", s.opts.MaxStreams, "--max-streams")
		if err != nil {
			return err
		}
		defer release()
		switch kind {
		case kindScan:
			st, err := decodeScanTicket(payload)
			if err != nil {
				return err
			}
			if err := allow(ctx, string(st.Project), auth.Read); err != nil {
				return err
			}
			return s.doGetScan(ctx, st, stream)
		case kindRank:
			rt, err := decodeRankTicket(payload)
			if err != nil {
				return err
			}
			for _, p := range rt.projects() {
				if err := allow(ctx, p, auth.Read); err != nil {
					return err
				}
			}
			return s.doGetRank(ctx, rt, stream)
		case kindWindowScan:
			wt, err := decodeWindowScanTicket(payload)
			if err != nil {
				return err
			}
			if err := allow(ctx, string(wt.Project), auth.Read); err != nil {
				return err
			}
			return s.doGetWindowScan(ctx, wt, stream)
		}
		return fmt.Errorf("%w: unknown ticket kind %d", ErrBadTicket, kind)
	}()
	return s.status(ctx, "DoGet", err)
}

type batchResult struct {
	rec arrow.RecordBatch
	err error
}

func (s *Service) doGetScan(ctx context.Context, st *scanTicket, stream arrowflight.FlightService_DoGetServer) (err error) {
	v, err := s.tables.TableAt(ctx, st.Project, st.Commit, st.Table)
	if err != nil {
		return err
	}
	if st.End > len(v.Blocks()) {
		return fmt.Errorf("%w: it names blocks [%d, %d) of %s@%s, which has %d", ErrBadTicket, st.First, st.End, v.Table, v.Commit.Short(), len(v.Blocks()))
	}
	var rows int64
	for _, b := range v.Blocks()[st.First:st.End] {
		rows += b.Rows
	}
	if rows != st.Rows {
		return fmt.Errorf("%w: it promises %d rows in blocks [%d, %d) of %s@%s, which hold %d", ErrBadTicket, st.Rows, st.First, st.End, v.Table, v.Commit.Short(), rows)
	}
	schema, err := v.Projection(st.Columns)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	var f *filter.Filter
	if st.Filter != "" {
		if f, err = s.compileFilter(v, st.Filter); err != nil {
			return fmt.Errorf("%w: %w", ErrBadTicket, err)
		}
	}
	// What the stream holds: the batches decoded ahead, the one being
	// sent and the one being decoded.
	leased := int64(s.opts.Prefetch+2) * s.opts.BatchBytes
	if f != nil || st.Ranged {
		leased += tables.FilterScanBytes
	}
	lease, err := s.lease(ctx, leased, "scan stream")
	if err != nil {
		return err
	}
	defer lease.Release()

	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(s.mem))
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("finish stream: %w", cerr)
		}
	}()

	// Decode batches ahead of the one being sent, so that Parquet decoding
	// and sending overlap. The reader stops when ctx ends; whatever it had
	// queued is released by the drain below.
	ctx, cancel := context.WithCancel(ctx)
	batches := make(chan batchResult, s.opts.Prefetch)
	go func() {
		defer close(batches)
		for rec, err := range s.scanBatches(ctx, v, st, f) {
			select {
			case batches <- batchResult{rec, err}:
			case <-ctx.Done():
				if rec != nil {
					rec.Release()
				}
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		for b := range batches {
			if b.rec != nil {
				b.rec.Release()
			}
		}
	}()

	var sent int64
	for b := range batches {
		if b.err != nil {
			return b.err
		}
		sent += b.rec.NumRows()
		err := s.sendSliced(w, b.rec)
		b.rec.Release()
		if err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if st.Matches != nil && sent != *st.Matches {
		return fmt.Errorf("%w: it promises %d matching rows in rows [%d, %d) of %s@%s, which hold %d", ErrBadTicket, *st.Matches, st.Lo, st.Hi, v.Table, v.Commit.Short(), sent)
	}
	return nil
}

// scanBatches streams a scan ticket's rows: a plain scan of its blocks, or
// a filtered (or row-ranged) one.
func (s *Service) scanBatches(ctx context.Context, v *tables.Version, st *scanTicket, f *filter.Filter) iter.Seq2[arrow.RecordBatch, error] {
	if f == nil && !st.Ranged {
		return s.tables.Scan(ctx, v, st.Columns, st.First, st.End, s.opts.BatchBytes)
	}
	lo, hi := int64(0), v.Rows()
	if st.Ranged {
		lo, hi = st.Lo, st.Hi
	}
	return s.tables.ScanFiltered(ctx, v, st.Columns, f, st.First, st.End, lo, hi)
}

// filteredInfo describes a filtered scan, or a scan in balanced shards.
// Without shards, endpoints are cut by Parquet size as for a plain scan,
// each filtering its blocks (total_records -1: not known ahead). With
// shards, the matching rows are listed (Store.Matches, cached) and cut
// into n runs whose counts differ by at most one; endpoint j streams the
// matching rows in its ordinal range.
func (s *Service) filteredInfo(ctx context.Context, d *arrowflight.FlightDescriptor, v *tables.Version, schema *arrow.Schema, req *client.ScanRequest) (*arrowflight.FlightInfo, error) {
	var f *filter.Filter
	var err error
	if req.Filter != "" {
		if f, err = s.compileFilter(v, req.Filter); err != nil {
			return nil, err
		}
	}
	meta := client.ScanMetadata{Commit: string(v.Commit)}
	if f != nil {
		meta.Filter = f.String()
	}
	info := &arrowflight.FlightInfo{
		Schema:           arrowflight.SerializeSchema(schema, s.mem),
		FlightDescriptor: d,
		TotalRecords:     -1,
		TotalBytes:       -1,
		Ordered:          true,
	}
	blocks := v.Blocks()
	add := func(st scanTicket) error {
		tkt, err := s.encodeTicket(ctx, kindScan, st)
		if err != nil {
			return err
		}
		info.Endpoint = append(info.Endpoint, &arrowflight.FlightEndpoint{Ticket: &arrowflight.Ticket{Ticket: tkt}, Location: s.locations(len(info.Endpoint))})
		return nil
	}
	if req.Shards == 0 && !req.Balanced {
		for _, g := range endpointGroups(v, s.opts.EndpointBytes) {
			if err := add(scanTicket{Project: v.Project, Commit: v.Commit, Table: v.Table, Columns: req.Columns, First: g.first, End: g.end, Rows: g.rows, Filter: meta.Filter}); err != nil {
				return nil, err
			}
		}
	} else {
		// ordinal(k): the row of the k-th matching row; total: how many.
		total := v.Rows()
		ordinal := func(k int64) int64 { return k }
		if f != nil {
			m, err := s.tables.Matches(ctx, v, f)
			if err != nil {
				return nil, err
			}
			total, ordinal = m.Len(), m.Ordinal
		}
		n := int64(req.Shards)
		if n == 0 {
			var bytes int64
			for _, df := range v.Manifest.Files {
				bytes += df.Size
			}
			n = (bytes*total/max(1, v.Rows()) + s.opts.EndpointBytes - 1) / s.opts.EndpointBytes
			n = max(1, min(n, total, int64(len(blocks)), client.MaxShards))
		}
		info.TotalRecords = total
		// Shard j holds matches [j·total/n, (j+1)·total/n): its rows are
		// the ordinal range from its first match to the next shard's.
		for j := range n {
			k0, k1 := j*total/n, (j+1)*total/n
			lo, hi := v.Rows(), v.Rows()
			if k0 < total {
				lo = ordinal(k0)
			}
			if k1 < total {
				hi = ordinal(k1)
			}
			if j == 0 {
				lo = 0
			}
			first, end := blockRange(blocks, lo, hi)
			var rows int64
			for _, b := range blocks[first:end] {
				rows += b.Rows
			}
			count := k1 - k0
			if err := add(scanTicket{Project: v.Project, Commit: v.Commit, Table: v.Table, Columns: req.Columns, First: first, End: end, Rows: rows,
				Filter: meta.Filter, Ranged: true, Lo: lo, Hi: max(hi, lo), Matches: &count}); err != nil {
				return nil, err
			}
			meta.ShardRows = append(meta.ShardRows, count)
		}
	}
	if info.AppMetadata, err = json.Marshal(meta); err != nil {
		return nil, err
	}
	if err := s.checkReply(info); err != nil {
		return nil, fmt.Errorf("%w; ask for fewer shards or columns, or ask the operator for a larger --scan-endpoint-size", err)
	}
	return info, nil
}

// blockRange is the range of blocks holding rows [lo, hi) (empty when
// lo == hi).
func blockRange(blocks []tables.Block, lo, hi int64) (int, int) {
	first := sort.Search(len(blocks), func(i int) bool { return blocks[i].FirstRow+blocks[i].Rows > lo })
	end := sort.Search(len(blocks), func(i int) bool { return blocks[i].FirstRow >= hi })
	if end < first {
		end = first
	}
	return first, end
}

// sendSliced writes rec as batches of at most BatchBytes (when rows
// allow). Scan aims at that size already; slicing enforces it.
func (s *Service) sendSliced(w *arrowflight.Writer, rec arrow.RecordBatch) error {
	for _, r := range sliceRanges(rec, s.opts.BatchBytes) {
		var err error
		if r[0] == 0 && r[1] == rec.NumRows() {
			err = w.Write(rec)
		} else {
			part := rec.NewSlice(r[0], r[1])
			err = w.Write(part)
			part.Release()
		}
		if err != nil {
			return fmt.Errorf("send batch: %w", err)
		}
	}
	return nil
}
