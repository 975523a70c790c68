package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// deliverConfig is `weftgpu deliver`'s flags.
type deliverConfig struct {
	dir                string
	flightd            string
	cudaLib, cuvidLib  string
	fakeMemory         bool
	python             string
	scripts            string
	pySessions         string
	goSessions         string
	av1Sessions        string
	normSessions       string
	secs               float64
	batch              int
	window             int
	prefetch           int
	gpuMemoryLimit     string
	decodeSessions     int
	raw                string
	startup            time.Duration
	stageBudget        time.Duration
	exe                string
	storeDir, location string
}

// deliver is `weftgpu deliver DIR`: delivery end to end. For each count N
// of trainers, a fresh `flightd serve` (the real driver; the fake in the
// dry run) on a copy of DIR's store, N trainer processes each reading a run
// of its own (python TrainLoader cuda-ipc, or `weftgpu trainer`), started
// together once all have their first step, for --secs: windows/s, frames/s
// and NVDEC's decoded/s (flightd's weft_gpu_ metrics), next to the raw NVDEC
// rate of the same clip measured with no Weft code in between (--raw: the
// RESULT lines of nvdec_probe's bench and of `weftgpu check`), frame bytes
// copied device<->host (must be 0), and GPU memory per session.
func deliver(args []string) error {
	fs := flag.NewFlagSet("deliver", flag.ContinueOnError)
	var c deliverConfig
	fs.StringVar(&c.flightd, "flightd", "", "the flightd binary (required)")
	fs.StringVar(&c.cudaLib, "cuda-lib", "", "flightd's --gpu-cuda-lib ('' for its default)")
	fs.StringVar(&c.cuvidLib, "cuvid-lib", "", "flightd's --gpu-cuvid-lib ('' for its default)")
	fs.BoolVar(&c.fakeMemory, "fake-memory", false, "dry run on the fake driver: flightd --gpu-fake-memory, trainers $WEFT_FAKE_DEVICE_SLOTS=1 on device cpu")
	fs.StringVar(&c.python, "python", "python3", "python with torch and pyarrow for the trainers ('' or one without them: Go trainers only)")
	fs.StringVar(&c.scripts, "scripts", "gpu/check", "the directory of trainer_child.py (its ../../python is the weft package)")
	fs.StringVar(&c.pySessions, "sessions", "1,4,8,16", "numbers of concurrent python trainers (H.264 1080p)")
	fs.StringVar(&c.goSessions, "go-sessions", "1,16", "numbers of concurrent Go trainers (all of --sessions when python cannot run)")
	fs.StringVar(&c.av1Sessions, "av1-sessions", "8", "numbers of concurrent trainers on the AV1 table")
	fs.StringVar(&c.normSessions, "norm-sessions", "8", "numbers of concurrent python trainers with normalize=ImageNet, dtype=float16")
	fs.Float64Var(&c.secs, "secs", 4, "seconds each point is measured")
	fs.IntVar(&c.batch, "batch", 4, "rows per step")
	fs.IntVar(&c.window, "window", 8, "frames per video window (offsets -window+1..0)")
	fs.IntVar(&c.prefetch, "prefetch", 2, "the python loader's prefetch")
	fs.StringVar(&c.gpuMemoryLimit, "gpu-memory-limit", "96GiB", "flightd's --gpu-memory-limit")
	fs.IntVar(&c.decodeSessions, "gpu-decode-sessions", 0, "flightd's --gpu-decode-sessions (0: its default)")
	fs.StringVar(&c.raw, "raw", "", "a file of RESULT lines with the raw NVDEC rates (raw_h264_sN, weft_h264_sN)")
	fs.DurationVar(&c.startup, "startup", 60*time.Second, "how long trainers may take to their first step")
	fs.DurationVar(&c.stageBudget, "budget", 170*time.Second, "the whole stage's time: points that would start after it are skipped")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || c.flightd == "" {
		return errors.New("deliver: give --flightd BIN and one DIR")
	}
	c.dir = fs.Arg(0)
	var err error
	if c.exe, err = os.Executable(); err != nil {
		return err
	}
	t0 := time.Now()
	m, err := readManifest(c.dir)
	if err != nil {
		return err
	}
	if m.Store == nil {
		result("deliver", "absent: the data has no store (make gpu-check-prep makes it with --flightd)")
		return nil
	}
	tmp, err := os.MkdirTemp("", "weftgpu-deliver-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// flightd writes run records: a copy, so the carried data stays as made
	c.storeDir = filepath.Join(tmp, "store")
	if err := copyDir(filepath.Join(c.dir, m.Store.Dir), c.storeDir); err != nil {
		return fmt.Errorf("copy the store: %w", err)
	}
	raw := readRaw(c.raw)
	pyOK, pyWhy := c.pythonReady()
	if pyOK {
		result("deliver_python", strings.ReplaceAll(pyWhy, " ", "_"))
	} else {
		result("deliver_python", "absent "+strings.ReplaceAll(pyWhy, " ", "_")+" (the Go trainers measure flightd's delivery alone: no tensors)")
	}
	type point struct {
		kind  string // "py", "go"
		table string
		n     int
		norm  bool
	}
	var points []point
	add := func(kind, table, list string, norm bool) error {
		for _, s := range strings.Split(list, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return fmt.Errorf("deliver: %q is not a number of trainers", s)
			}
			points = append(points, point{kind, table, n, norm})
		}
		return nil
	}
	goList := c.goSessions
	if pyOK {
		if err := add("py", "h264", c.pySessions, false); err != nil {
			return err
		}
		if err := add("py", "h264", c.normSessions, true); err != nil {
			return err
		}
	}
	if !pyOK {
		goList = c.pySessions
	}
	if err := add("go", "h264", goList, false); err != nil {
		return err
	}
	if !pyOK {
		if err := add("go", "h264", c.normSessions, true); err != nil {
			return err
		}
	}
	av1 := "go"
	if pyOK {
		av1 = "py"
	}
	if err := add(av1, "av1", c.av1Sessions, false); err != nil {
		return err
	}
	ctx := context.Background()
	done := map[point]bool{}
	pyBroken := ""
	for _, p := range points {
		if p.kind == "py" && pyBroken != "" {
			// the python trainers failed where Go ones would not: this point with Go
			// trainers instead, so that the number exists
			p.kind = "go"
		}
		if done[p] {
			continue
		}
		done[p] = true
		tab := m.Store.table(p.table)
		key := fmt.Sprintf("deliver_%s_%s_s%d", p.kind, p.table, p.n)
		if p.norm {
			key = fmt.Sprintf("deliver_%s_%s_f16_s%d", p.kind, p.table, p.n)
		}
		if tab == nil {
			result(key, "skipped: no table "+p.table+" in the store")
			continue
		}
		// a point takes startup + secs + a few seconds; skip what the budget cannot hold
		if left := c.stageBudget - time.Since(t0); left < time.Duration((c.secs+15)*float64(time.Second)) {
			result(key, fmt.Sprintf("skipped: %.0fs left of the stage's %s", left.Seconds(), c.stageBudget))
			continue
		}
		if err := c.point(ctx, key, p.kind, *tab, p.n, p.norm, m.Store.Project, raw); err != nil {
			result(key, "error "+oneLine(err.Error()))
			if errors.Is(err, errGPUOff) {
				break
			}
			if p.kind == "py" && errors.Is(err, errTrainer) && pyBroken == "" {
				pyBroken = err.Error()
				result("deliver_python", "broken: the python points that follow run Go trainers instead")
			}
		}
	}
	result("deliver_secs", fmt.Sprintf("%.1f", time.Since(t0).Seconds()))
	return nil
}

var (
	errGPUOff  = errors.New("flightd: GPU delivery is off")
	errTrainer = errors.New("trainer")
)

func (s *storeSpec) table(name string) *storeTable {
	for i := range s.Tables {
		if s.Tables[i].Name == name {
			return &s.Tables[i]
		}
	}
	return nil
}

// pythonReady: the python can import torch, pyarrow.flight and numpy (and,
// on a GPU, sees CUDA).
func (c *deliverConfig) pythonReady() (bool, string) {
	if c.python == "" {
		return false, "no --python"
	}
	code := "import sys, torch, numpy, pyarrow, pyarrow.flight; " +
		"print('python=%d.%d torch=%s cuda=%s pyarrow=%s numpy=%s' % (sys.version_info[0], sys.version_info[1], torch.__version__, torch.cuda.is_available(), pyarrow.__version__, numpy.__version__))"
	cmd := exec.Command(c.python, "-c", code)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+c.pythonPath())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return false, fmt.Sprintf("%s: %v: %s", c.python, err, lastLine(out))
	}
	s := strings.TrimSpace(string(lastLine(out)))
	if !c.fakeMemory && !strings.Contains(s, "cuda=True") {
		return false, s + " (torch sees no CUDA device)"
	}
	return true, s
}

// pythonPath is the checkout's python/ (the weft package), from --scripts.
func (c *deliverConfig) pythonPath() string {
	p, err := filepath.Abs(filepath.Join(c.scripts, "..", "..", "python"))
	if err != nil {
		return "python"
	}
	if old := os.Getenv("PYTHONPATH"); old != "" {
		return p + ":" + old
	}
	return p
}

// trainerProc is one running trainer.
type trainerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its stdout, line by line (closed at EOF)
	log   string
	done  chan error
}

func (t *trainerProc) wait(word string, timeout time.Duration) (trainerReport, error) {
	var r trainerReport
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-t.lines:
			if !ok {
				return r, fmt.Errorf("%w ended before %s: %s", errTrainer, word, t.logTail())
			}
			w, js, _ := strings.Cut(l, " ")
			switch w {
			case word:
				return r, json.Unmarshal([]byte(js), &r)
			case "ERROR":
				_ = json.Unmarshal([]byte(js), &r)
				return r, fmt.Errorf("%w: %s", errTrainer, r.Error)
			}
		case <-deadline:
			return r, fmt.Errorf("no %s from a %w within %s: %s", word, errTrainer, timeout, t.logTail())
		}
	}
}

func (t *trainerProc) logTail() string {
	b, _ := os.ReadFile(t.log)
	return oneLine(string(lastLine(b)))
}

// kill ends the trainer (done or not) and waits for it.
func (t *trainerProc) kill() {
	_ = t.cmd.Process.Kill() // an error: it has ended already
	for range t.lines {      // what it still printed, so the reader reaches EOF and waits
	}
	<-t.done
}

func (c *deliverConfig) startTrainer(kind string, a trainerArgs, log string) (*trainerProc, error) {
	js, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	if kind == "py" {
		cmd = exec.Command(c.python, filepath.Join(c.scripts, "trainer_child.py"), string(js))
		cmd.Env = append(os.Environ(), "PYTHONPATH="+c.pythonPath(), "PYTHONUNBUFFERED=1")
		if c.fakeMemory {
			cmd.Env = append(cmd.Env, "WEFT_FAKE_DEVICE_SLOTS=1")
		}
	} else {
		cmd = exec.Command(c.exe, "trainer", "--args", string(js))
	}
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &trainerProc{cmd: cmd, stdin: stdin, lines: make(chan string, 16), log: log, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			t.lines <- sc.Text()
		}
		close(t.lines)
		t.done <- cmd.Wait()
	}()
	return t, nil
}

// point measures one count of trainers on one table.
func (c *deliverConfig) point(ctx context.Context, key, kind string, tab storeTable, n int, norm bool, project string, raw map[string]float64) error {
	logs, err := os.MkdirTemp("", "weftgpu-point-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(logs)
	memBefore := gpuMemory()
	args := []string{"--store", c.storeDir, "--metrics-addr", "127.0.0.1:0", "--gpu-memory-limit", c.gpuMemoryLimit}
	if c.cudaLib != "" {
		args = append(args, "--gpu-cuda-lib", c.cudaLib)
	}
	if c.cuvidLib != "" {
		args = append(args, "--gpu-cuvid-lib", c.cuvidLib)
	}
	if c.fakeMemory {
		args = append(args, "--gpu-fake-memory")
	}
	if c.decodeSessions > 0 {
		args = append(args, "--gpu-decode-sessions", strconv.Itoa(c.decodeSessions))
	}
	fd, err := startFlightd(ctx, c.flightd, args, nil, filepath.Join(logs, "flightd.log"), 30*time.Second)
	if err != nil {
		return err
	}
	defer fd.stop()
	for _, rec := range fd.records() {
		if rec["msg"] == "GPU delivery is off" {
			return fmt.Errorf("%w: %v", errGPUOff, rec["why"])
		}
	}
	idle, _ := scrape(fd.metrics)
	memIdle := gpuMemory()
	frames := make([]int, c.window)
	for i := range frames {
		frames[i] = i - c.window + 1
	}
	device := "cuda"
	if c.fakeMemory {
		device = "cpu"
	}
	var ts []*trainerProc
	defer func() {
		for _, t := range ts {
			t.kill()
		}
	}()
	for i := 0; i < n; i++ {
		a := trainerArgs{Location: "grpc://" + fd.addr, Project: project, Table: tab.Name, Seed: uint64(1000 + i), Batch: c.batch,
			Frames: frames, Steps: 1 << 20, Secs: c.secs, Prefetch: c.prefetch, Device: device}
		if norm {
			a.Normalize = &normSpec{Mean: [3]float64{0.485, 0.456, 0.406}, Std: [3]float64{0.229, 0.224, 0.225}, DType: "float16"}
		}
		t, err := c.startTrainer(kind, a, filepath.Join(logs, fmt.Sprintf("trainer-%d.log", i)))
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	var ready []trainerReport
	for _, t := range ts {
		r, err := t.wait("READY", c.startup)
		if err != nil {
			return fmt.Errorf("%w (flightd: %s)", err, oneLine(lastErrorLog(fd)))
		}
		ready = append(ready, r)
	}
	readyS := 0.0
	for _, r := range ready {
		readyS = max(readyS, r.ReadyS)
		if r.Delivery != "cuda-ipc" {
			return fmt.Errorf("a %w's delivery is %q, not cuda-ipc: %s", errTrainer, r.Delivery, r.Fallback)
		}
	}
	m0, err := scrape(fd.metrics)
	if err != nil {
		return err
	}
	if _, ok := m0["weft_gpu_frame_copy_bytes_total"]; !ok {
		return errors.New("flightd's /metrics has no weft_gpu_ metrics: frame copies and decoded frames cannot be counted")
	}
	t0 := time.Now()
	for _, t := range ts {
		_, _ = io.WriteString(t.stdin, "GO\n")
	}
	// GPU memory in the middle of the measured seconds
	time.Sleep(time.Duration(c.secs / 2 * float64(time.Second)))
	memDuring := gpuMemory()
	mMid, _ := scrape(fd.metrics)
	var done []trainerReport
	for _, t := range ts {
		r, err := t.wait("DONE", time.Duration((c.secs+30)*float64(time.Second)))
		if err != nil {
			return err
		}
		done = append(done, r)
	}
	wall := time.Since(t0).Seconds()
	m1, err := scrape(fd.metrics)
	if err != nil {
		return err
	}
	var windowsPS, framesPS float64
	var steps, copies, hostSteps int64
	fellBack, why := 0, "" // trainers that flightd refused a step mid-run, and the first one's reason
	for _, r := range done {
		if r.Fallback != "" && r.Delivery != "cuda-ipc" {
			if fellBack++; why == "" {
				why = r.Fallback
			}
		}
		if r.Secs > 0 {
			windowsPS += float64(r.Windows) / r.Secs
			framesPS += float64(r.Frames) / r.Secs
		}
		steps += r.Steps
		copies += r.Copies
		hostSteps += r.HostSteps
	}
	decoded := m1["weft_gpu_frames_decoded_total"] - m0["weft_gpu_frames_decoded_total"]
	kept := m1["weft_gpu_frames_kept_total"] - m0["weft_gpu_frames_kept_total"]
	copyBytes := m1["weft_gpu_frame_copy_bytes_total"] - idle["weft_gpu_frame_copy_bytes_total"]
	decodedPS := decoded / wall
	line := fmt.Sprintf("windows_per_s=%.1f frames_per_s=%.1f decoded_per_s=%.1f kept_per_s=%.1f steps=%d secs=%.1f trainers=%d shape=%s dtype=%s delivery=cuda-ipc frame_copy_bytes=%.0f copies=%d host_steps=%d ready_s=%.1f",
		windowsPS, framesPS, decodedPS, kept/wall, steps, wall, n, shapeString(ready[0].Shape), ready[0].DType, copyBytes, copies, hostSteps, readyS)
	// next to the raw NVDEC rate of the same clip at the same count (nvdec_probe: no Weft code)
	if tab.Name == "h264" && !norm {
		if r, ok := raw[fmt.Sprintf("raw_h264_s%d", n)]; ok && r > 0 {
			verdict := "fail"
			if decodedPS >= 0.8*r {
				verdict = "pass"
			}
			line += fmt.Sprintf(" raw_fps=%.1f decoded_vs_raw=%.2f frames_vs_raw=%.2f goal80=%s", r, decodedPS/r, framesPS/r, verdict)
		} else {
			line += " raw_fps=absent"
		}
		if r, ok := raw[fmt.Sprintf("weft_h264_s%d", n)]; ok && r > 0 {
			line += fmt.Sprintf(" weft_decode_only_fps=%.1f decoded_vs_weft_decode_only=%.2f", r, decodedPS/r)
		}
	}
	if fellBack > 0 {
		// a step refused mid-run on the GPU path (docs/gpu.md "Fallbacks"): those trainers read on
		// with host slots (host_steps); the point stands, and says so
		line += fmt.Sprintf(" fallback_trainers=%d fallback=%q", fellBack, oneLine(why))
	}
	if kind == "go" {
		line += " tensors=none(go_trainer)"
	}
	result(key, line)
	result(key+"_mem", memLine(memBefore, memIdle, memDuring, idle, mMid, n, fd.cmd.Process.Pid, ts))
	return nil
}

// lastErrorLog is flightd's last error or warning, for a trainer's failure.
func lastErrorLog(fd *flightdProc) string {
	s := ""
	for _, rec := range fd.records() {
		if l, _ := rec["level"].(string); l == "ERROR" || l == "WARN" {
			b, _ := json.Marshal(rec)
			s = string(b)
		}
	}
	return s
}

func shapeString(s []int) string {
	p := make([]string, len(s))
	for i, v := range s {
		p[i] = strconv.Itoa(v)
	}
	return "[" + strings.Join(p, ",") + "]"
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}

// scrape reads flightd's /metrics: name (without labels) → value.
func scrape(addr string) (map[string]float64, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") || !strings.HasPrefix(l, "weft_gpu_") {
			continue
		}
		f := strings.Fields(l)
		if len(f) >= 2 {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				out[f[0]] = v
			}
		}
	}
	return out, sc.Err()
}

// gpuMem is nvidia-smi's view: the device's memory used and each compute
// process's, in MiB (nil without nvidia-smi).
type gpuMem struct {
	used  float64
	procs map[int]float64
}

func gpuMemory() *gpuMem {
	smi, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return nil
	}
	g := &gpuMem{procs: map[int]float64{}}
	g.used, _ = strconv.ParseFloat(strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]), 64)
	out, _ = exec.CommandContext(ctx, smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits").Output()
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, ",")
		if len(f) == 2 {
			pid, err1 := strconv.Atoi(strings.TrimSpace(f[0]))
			mib, err2 := strconv.ParseFloat(strings.TrimSpace(f[1]), 64)
			if err1 == nil && err2 == nil {
				g.procs[pid] = mib
			}
		}
	}
	return g
}

// memLine: GPU memory of a point. nvidia-smi's whole device before flightd,
// with flightd idle, and in the middle of the measured seconds (per
// session: the growth over idle / N, trainers' own CUDA contexts included),
// and per process where nvidia-smi names our pids; without nvidia-smi,
// flightd's weft_gpu_memory_used_bytes (cuMemGetInfo, whole device).
func memLine(before, idle, during *gpuMem, mIdle, mMid map[string]float64, n, flightdPid int, ts []*trainerProc) string {
	if before == nil || idle == nil || during == nil {
		u0, u1 := mIdle["weft_gpu_memory_used_bytes"]/(1<<20), mMid["weft_gpu_memory_used_bytes"]/(1<<20)
		return fmt.Sprintf("source=cuMemGetInfo(nvidia-smi_absent) idle_mib=%.0f during_mib=%.0f per_session_mib=%.1f", u0, u1, (u1-u0)/float64(n))
	}
	s := fmt.Sprintf("source=nvidia-smi before_mib=%.0f flightd_idle_mib=%.0f during_mib=%.0f per_session_mib=%.1f", before.used, idle.used, during.used, (during.used-idle.used)/float64(n))
	if v, ok := during.procs[flightdPid]; ok {
		s += fmt.Sprintf(" flightd_mib=%.0f flightd_idle_mib=%.0f flightd_per_session_mib=%.1f", v, idle.procs[flightdPid], (v-idle.procs[flightdPid])/float64(n))
	} else {
		s += fmt.Sprintf(" flightd_mib=unmatched(pids_seen=%d)", len(during.procs))
	}
	var sum float64
	matched := 0
	for _, t := range ts {
		if v, ok := during.procs[t.cmd.Process.Pid]; ok {
			sum += v
			matched++
		}
	}
	if matched > 0 {
		s += fmt.Sprintf(" trainer_mib_avg=%.0f trainers_matched=%d/%d", sum/float64(matched), matched, len(ts))
	}
	return s
}

var rawRE = regexp.MustCompile(`^RESULT (raw_h264_s\d+)[ =]fps=([0-9.]+)|^RESULT (weft_h264_s\d+)=.*decoded_per_s=([0-9.]+)`)

// readRaw reads the raw rates from a file of RESULT lines (none: empty).
func readRaw(path string) map[string]float64 {
	out := map[string]float64{}
	if path == "" {
		return out
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		m := rawRE.FindStringSubmatch(l)
		switch {
		case m == nil:
		case m[1] != "":
			out[m[1]], _ = strconv.ParseFloat(m[2], 64)
		default:
			out[m[3]], _ = strconv.ParseFloat(m[4], 64)
		}
	}
	return out
}

// copyDir copies a directory tree of regular files.
func copyDir(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}
