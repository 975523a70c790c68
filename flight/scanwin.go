package flight

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// Windowed scans (docs/flight.md, "Windowed scans"): a scan command with
// "windows" is planned by mix (Engine.PrepareScan: the same kinds,
// validation and canonical specs as a run's) and served by it
// (Scan.Steps): each endpoint is a row range of the pinned version,
// streamed as steps of StepRows rows, each step one message or several
// zero-copy slices, as a rank stream's steps are.

// windowRowBytes is what one row of a window column costs in the
// estimate of a step's size when its type is not a fixed-size list of
// the key column's values (a video window: its access units, which are
// known only once the step is planned).
const windowRowBytes = 64 << 10

// windowScanTicket names rows [Lo, Hi) of a windowed scan of a pinned
// table version, streamed as steps of StepRows rows.
type windowScanTicket struct {
	Project  versions.ProjectName     `json:"p"`
	Commit   versions.CommitID        `json:"c"`
	Table    versions.TableName       `json:"t"`
	Columns  []string                 `json:"cols,omitempty"` // resolved; nil: none
	Windows  map[string]client.Window `json:"w"`              // canonical
	Lo       int64                    `json:"r0"`
	Hi       int64                    `json:"r1"`
	StepRows int                      `json:"k"`
}

// decodeWindowScanTicket parses and validates a windowed scan ticket's
// payload (what needs no store; the range is checked against the version
// when served).
func decodeWindowScanTicket(payload []byte) (*windowScanTicket, error) {
	var wt windowScanTicket
	if err := decode(ErrBadTicket, "windowed scan ticket payload", payload, &wt); err != nil {
		return nil, err
	}
	if _, err := versions.ParseProjectName(string(wt.Project)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	if _, err := versions.ParseTableName(string(wt.Table)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	if _, err := versions.ParseCommitID(string(wt.Commit)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	if len(wt.Windows) == 0 || wt.Lo < 0 || wt.Hi <= wt.Lo || wt.StepRows < 1 || wt.StepRows > mix.MaxScanStepRows {
		return nil, fmt.Errorf("%w: windowed scan ticket names %d windows, rows [%d, %d) in steps of %d", ErrBadTicket, len(wt.Windows), wt.Lo, wt.Hi, wt.StepRows)
	}
	return &wt, nil
}

// scanRowBytes estimates the Arrow bytes of one row of a windowed scan:
// its columns (from the Parquet footers) and _row, plus per window column
// T times its key column's bytes when it is a fixed-size list of T of
// them ("rows" windows, _is_pad flags), else windowRowBytes.
func (s *Service) scanRowBytes(ctx context.Context, sc *mix.Scan) (int64, error) {
	v := sc.Version()
	var n int64 = 8
	if cols := sc.Columns(); len(cols) > 0 {
		b, err := s.rowBytes(ctx, []*tables.Version{v}, cols)
		if err != nil {
			return 0, err
		}
		n = b
	}
	windows := sc.Windows()
	for _, f := range sc.Schema().Fields() {
		if f.Name == mix.RowColumn || slices.Contains(sc.Columns(), f.Name) {
			continue
		}
		fl, ok := f.Type.(*arrow.FixedSizeListType)
		if !ok {
			n += windowRowBytes
			continue
		}
		elem := int64(1)
		if _, isKey := windows[f.Name]; isKey && len(v.Schema.FieldIndices(f.Name)) > 0 {
			b, err := s.rowBytes(ctx, []*tables.Version{v}, []string{f.Name})
			if err != nil {
				return 0, err
			}
			elem = b
		}
		n += int64(fl.Len()) * elem
	}
	return n, nil
}

// scanStepRows is the rows of one step of a windowed scan: a step of
// about BatchBytes, at least one row.
func (s *Service) scanStepRows(rowBytes int64) int {
	return int(min(max(1, s.opts.BatchBytes/max(1, rowBytes)), mix.MaxScanStepRows))
}

// windowScanInfo describes a windowed scan: the scan's schema, one
// endpoint per row range of about EndpointBytes of Parquet (the plain
// scan's groups of blocks), each with a signed ticket pinned to v's
// commit that carries the range and the canonical windows.
func (s *Service) windowScanInfo(ctx context.Context, d *arrowflight.FlightDescriptor, sc *mix.Scan) (*arrowflight.FlightInfo, error) {
	v := sc.Version()
	rowBytes, err := s.scanRowBytes(ctx, sc)
	if err != nil {
		return nil, err
	}
	k := s.scanStepRows(rowBytes)
	if err := s.checkScanStep(rowBytes, k); err != nil {
		return nil, err
	}
	windows := sc.Windows()
	meta, err := json.Marshal(client.ScanMetadata{Commit: string(v.Commit), Windows: windows, StepRows: k})
	if err != nil {
		return nil, err
	}
	info := &arrowflight.FlightInfo{
		Schema:           arrowflight.SerializeSchema(sc.Schema(), s.mem),
		FlightDescriptor: d,
		TotalRecords:     v.Rows(),
		TotalBytes:       -1,
		Ordered:          true,
		AppMetadata:      meta,
	}
	blocks := v.Blocks()
	for _, g := range endpointGroups(v, s.opts.EndpointBytes) {
		lo := blocks[g.first].FirstRow
		wt := windowScanTicket{Project: v.Project, Commit: v.Commit, Table: v.Table, Columns: sc.Columns(), Windows: windows, Lo: lo, Hi: lo + g.rows, StepRows: k}
		tkt, err := s.encodeTicket(ctx, kindWindowScan, wt)
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

// checkScanStep refuses a windowed scan whose streams would hold too
// much: a step over MaxStepBytes (one row alone), or a stream over half
// of the memory budget.
func (s *Service) checkScanStep(rowBytes int64, rows int) error {
	step, block, stream := s.streamCost(rowBytes, int64(rows))
	if step > s.opts.MaxStepBytes {
		return fmt.Errorf("%w: one row of this windowed scan would be about %d bytes, over the server's limit of %d bytes per step (--max-step-size); select fewer columns or shorter windows", ErrTooLarge, rowBytes, s.opts.MaxStepBytes)
	}
	if total := s.budget.Stats().Total; total > 0 && stream > total/2 {
		return fmt.Errorf("%w: a stream of this windowed scan would hold about %d bytes (%d steps of %d bytes and %d blocks of %d bytes), more than half of the server's memory budget of %d bytes (--memory-limit); select fewer columns or shorter windows, or ask the operator for more memory", ErrTooLarge, stream, s.opts.StreamSteps, step, s.opts.StreamBlocks, block, total)
	}
	return nil
}

// doGetWindowScan streams a windowed scan ticket's rows: one step per
// StepRows rows, each one message with app_metadata {"step"} or several
// zero-copy slices with {"step","part","parts"} (sendStep).
func (s *Service) doGetWindowScan(ctx context.Context, wt *windowScanTicket, stream arrowflight.FlightService_DoGetServer) (err error) {
	v, err := s.tables.TableAt(ctx, wt.Project, wt.Commit, wt.Table)
	if err != nil {
		return err
	}
	cols := wt.Columns
	if cols == nil {
		cols = []string{}
	}
	sc, err := s.mix.PrepareScan(ctx, v, cols, wt.Windows)
	if err != nil {
		return err
	}
	if err := sc.CheckRange(wt.Lo, wt.Hi, wt.StepRows); err != nil {
		return fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	rowBytes, err := s.scanRowBytes(ctx, sc)
	if err != nil {
		return err
	}
	if err := s.checkScanStep(rowBytes, wt.StepRows); err != nil {
		return err
	}
	_, _, cost := s.streamCost(rowBytes, int64(wt.StepRows))
	lease, err := s.lease(ctx, cost, fmt.Sprintf("windowed scan of %s/%s@%s", v.Project, v.Table, v.Commit.Short()))
	if err != nil {
		return err
	}
	defer lease.Release()
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(sc.Schema()), ipc.WithAllocator(s.mem))
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("finish stream: %w", cerr)
		}
	}()
	for st, err := range sc.Steps(ctx, wt.Lo, wt.Hi, wt.StepRows) {
		if err != nil {
			return err
		}
		werr := s.sendStep(w, "", st.Step, st.Batch)
		st.Batch.Release()
		if werr != nil {
			return fmt.Errorf("send step %d: %w", st.Step, werr)
		}
	}
	return nil
}
