package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/video"
)

// storeSpec is the delivery stage's store: a flightd fs store (DIR/store)
// with one table per bench clip, one episode each, a row per frame and the
// clip as the video column "cam".
type storeSpec struct {
	Dir     string       `json:"dir"` // relative to the data directory
	Project string       `json:"project"`
	Tables  []storeTable `json:"tables"`
	Made    string       `json:"made"`
}

type storeTable struct {
	Name   string `json:"name"` // also the codec: "h264", "av1"
	Clip   string `json:"clip"`
	Rows   int    `json:"rows"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// storeClips are the delivery stage's tables: table name → clip.
var storeClips = []struct{ table, clip string }{{"h264", "h264_1080p_bf"}, {"av1", "av1_720p_svt"}}

const storeProject = "gpucheck"

// prepStore makes DIR/store with flightdBin (started on it, then stopped).
func prepStore(ctx context.Context, dir, flightdBin string, m manifest) (storeSpec, error) {
	st := storeSpec{Dir: "store", Project: storeProject, Made: time.Now().UTC().Format(time.RFC3339)}
	sdir, err := filepath.Abs(filepath.Join(dir, st.Dir))
	if err != nil {
		return st, err
	}
	if err := os.RemoveAll(sdir); err != nil {
		return st, err
	}
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		return st, err
	}
	logDir, err := os.MkdirTemp("", "weftgpu-prep-")
	if err != nil {
		return st, err
	}
	defer os.RemoveAll(logDir)
	fd, err := startFlightd(ctx, flightdBin, []string{"--store", sdir}, nil, filepath.Join(logDir, "flightd.log"), 30*time.Second)
	if err != nil {
		return st, err
	}
	defer fd.stop()
	c, err := client.Dial(fd.addr, client.Options{})
	if err != nil {
		return st, err
	}
	defer c.Close()
	if _, err := c.CreateProject(ctx, st.Project); err != nil {
		return st, fmt.Errorf("create project: %w", err)
	}
	for _, sc := range storeClips {
		path, err := filepath.Abs(filepath.Join(dir, sc.clip+".mp4"))
		if err != nil {
			return st, err
		}
		x, err := index(path)
		if err != nil {
			return st, fmt.Errorf("%s: %w", sc.clip, err)
		}
		rows := episodeRows(x)
		_, err = c.AppendEpisodes(ctx, client.PutDescriptor{Project: st.Project, Branch: "main", Table: sc.table}, rows,
			map[string]client.VideoFiles{"cam": {"0": path}}, client.DefaultEpisodeOptions())
		rows.Release()
		if err != nil {
			return st, fmt.Errorf("append %s: %w\n%s", sc.clip, err, fd.logTail())
		}
		st.Tables = append(st.Tables, storeTable{Name: sc.table, Clip: sc.clip, Rows: x.Len(), Width: x.Config.Width, Height: x.Config.Height})
		fmt.Printf("prep: store table %s: %d rows of %s\n", sc.table, x.Len(), sc.clip)
	}
	if err := fd.stop(); err != nil {
		return st, fmt.Errorf("flightd: %w\n%s", err, fd.logTail())
	}
	return st, nil
}

// episodeRows is one episode (0) with a row per frame of x at its time.
func episodeRows(x *video.Index) array.RecordReader {
	sc := arrow.NewSchema([]arrow.Field{{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64}, {Name: "timestamp", Type: arrow.PrimitiveTypes.Float64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := 0; i < x.Len(); i++ {
		b.Field(0).(*array.Int64Builder).Append(0)
		b.Field(1).(*array.Float64Builder).Append(float64(x.Frame(i).PTS) / float64(x.Timescale))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rr, _ := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	return rr
}

// flightdProc is a `flightd serve` started by weftgpu.
type flightdProc struct {
	cmd     *exec.Cmd
	log     string // its log file (JSON lines)
	addr    string // gRPC HOST:PORT
	metrics string // --metrics-addr HOST:PORT, when asked for
	done    chan error
	stopped bool
	err     error
}

// startFlightd runs `flightd serve --addr 127.0.0.1:0 --log-format json`
// with args and env (added to this process's), logging to logPath, and
// waits until it serves (and serves metrics, when args ask for them).
func startFlightd(ctx context.Context, bin string, args, env []string, logPath string, timeout time.Duration) (*flightdProc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all := append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)
	cmd := exec.Command(bin, all...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &flightdProc{cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	wantMetrics := false
	for _, a := range args {
		wantMetrics = wantMetrics || a == "--metrics-addr"
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, rec := range p.records() {
			switch rec["msg"] {
			case "serving":
				p.addr, _ = rec["addr"].(string)
			case "serving metrics":
				p.metrics, _ = rec["addr"].(string)
			}
		}
		if p.addr != "" && (!wantMetrics || p.metrics != "") {
			return p, nil
		}
		select {
		case err := <-p.done:
			p.stopped, p.err = true, err
			return nil, fmt.Errorf("flightd exited (%v) before serving:\n%s", err, p.logTail())
		case <-ctx.Done():
			p.kill()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.kill()
	return nil, fmt.Errorf("flightd did not serve within %s:\n%s", timeout, p.logTail())
}

// records are the log's JSON lines so far.
func (p *flightdProc) records() []map[string]any {
	b, _ := os.ReadFile(p.log)
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

// logTail is the log's last lines, for an error.
func (p *flightdProc) logTail() string {
	b, _ := os.ReadFile(p.log)
	l := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(l[max(0, len(l)-15):], "\n")
}

// stop sends SIGTERM and waits (SIGKILL after 15 s); the exit error, if any.
func (p *flightdProc) stop() error {
	if p.stopped {
		return p.err
	}
	p.stopped = true
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case p.err = <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		p.err = fmt.Errorf("flightd did not stop within 15 s of SIGTERM: %w", <-p.done)
	}
	return p.err
}

func (p *flightdProc) kill() {
	if !p.stopped {
		p.stopped = true
		_ = p.cmd.Process.Kill()
		p.err = <-p.done
	}
}
