package adversarial_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/internal/s3test"
)

// flightdBin is the flightd binary under test (TestMain builds it).
var flightdBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	bin, cleanup, err := buildFlightd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "adversarial:", err)
		return 1
	}
	defer cleanup()
	flightdBin = bin
	return s3test.Main(m)
}

// buildFlightd returns $WEFT_FLIGHTD, or builds ./cmd/flightd (with -race
// when this test binary has it) into a temporary directory.
func buildFlightd() (string, func(), error) {
	if p := os.Getenv("WEFT_FLIGHTD"); p != "" {
		return p, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "weft-adversarial-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(dir, "flightd")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goTool(), append(args, "./cmd/flightd")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build ./cmd/flightd: %w\n%s", err, out)
	}
	return bin, cleanup, nil
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// store is one backend the suite runs on: the flags flightd needs, and a
// way to hash every object in it.
type store struct {
	name string
	args []string
	env  []string
	// objects hashes every object (fs: every file under the directory,
	// temporary files included, but not the empty lock-stripe files of
	// .weft-locks; S3: every object of the bucket).
	objects func(t *testing.T) map[string]string
	// bucket is the store opened in the test (to sign tickets with its
	// key).
	bucket bucket.Bucket
}

// stores returns the backends, each new and empty: the fs store and, when
// not -short, MinIO.
func stores() []func(t *testing.T) *store {
	out := []func(t *testing.T) *store{fsStore}
	if !testing.Short() {
		out = append(out, minioStore)
	}
	return out
}

func storeName(i int) string { return []string{"fs", "minio"}[i] }

func fsStore(t *testing.T) *store {
	dir := t.TempDir()
	b, err := bucket.NewFS(dir)
	require.NoError(t, err)
	return &store{name: "fs", args: []string{"--store", dir}, bucket: b, objects: func(t *testing.T) map[string]string {
		t.Helper()
		out := map[string]string{}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			switch {
			case d.IsDir() && rel == ".weft-locks":
				return fs.SkipDir // lock stripes: empty files made on first use
			case d.IsDir():
				return nil // directories are not objects (Delete leaves them)
			case d.Type()&fs.ModeSymlink != 0:
				out[rel] = "symlink"
			default:
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				sum := sha256.Sum256(b)
				out[rel] = hex.EncodeToString(sum[:])
			}
			return nil
		})
		require.NoError(t, err)
		return out
	}}
}

func minioStore(t *testing.T) *store {
	m := s3test.SharedMinIO(t)
	name := m.MakeBucket(t, "adversarial")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := bucket.NewS3(ctx, m.Config(name))
	require.NoError(t, err)
	return &store{
		name:   "minio",
		args:   []string{"--store", "s3://" + name, "--s3-endpoint", m.Endpoint, "--s3-region", m.Region},
		env:    []string{"AWS_ACCESS_KEY_ID=" + m.AccessKey, "AWS_SECRET_ACCESS_KEY=" + m.SecretKey},
		bucket: b,
		objects: func(t *testing.T) map[string]string {
			t.Helper()
			return hashBucket(t, b)
		},
	}
}

// hashBucket reads every object of b and returns its SHA-256 by key.
func hashBucket(t *testing.T, b bucket.Bucket) map[string]string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for info, err := range b.List(ctx, "") {
		require.NoError(t, err)
		keys = append(keys, info.Key)
	}
	sums := make([]string, len(keys))
	var g errgroup.Group
	g.SetLimit(8)
	for i, k := range keys {
		g.Go(func() error {
			data, _, err := b.Get(ctx, k)
			if err != nil {
				return fmt.Errorf("get %s: %w", k, err)
			}
			sum := sha256.Sum256(data)
			sums[i] = hex.EncodeToString(sum[:])
			return nil
		})
	}
	require.NoError(t, g.Wait())
	out := make(map[string]string, len(keys))
	for i, k := range keys {
		out[k] = sums[i]
	}
	return out
}

// diff describes how two snapshots differ ("" when equal).
func diff(before, after map[string]string) string {
	var out []string
	for k, v := range after {
		if w, ok := before[k]; !ok {
			out = append(out, "added "+k)
		} else if w != v {
			out = append(out, "changed "+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, "removed "+k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// flightd is a running flightd process.
type flightd struct {
	cmd  *exec.Cmd
	addr string
	log  *syncBuffer
	done chan struct{}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// startFlightd runs `flightd serve` over st on a free port (with extra
// flags) and returns once it serves; it is killed when t ends.
func startFlightd(t *testing.T, st *store, extra ...string) *flightd {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--row-group-rows", "8"}, st.args...)
	cmd := exec.Command(flightdBin, append(args, extra...)...)
	cmd.Env = append(os.Environ(), st.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &flightd{cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			_, _ = p.log.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				addr <- line.Addr
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case p.addr = <-addr:
	case <-p.done:
		t.Fatalf("flightd exited before serving:\n%s", p.log)
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("flightd did not start")
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("flightd log (tail):\n%s", tail(p.log.String(), 8000))
		}
	})
	return p
}

// alive reports whether the process is still running.
func (p *flightd) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// requireHealthy: the process runs and its log has no panic (and, when
// it is built with -race, no data race).
func (p *flightd) requireHealthy(t *testing.T) {
	t.Helper()
	require.True(t, p.alive(), "flightd died:\n%s", tail(p.log.String(), 8000))
	for _, line := range strings.Split(p.log.String(), "\n") {
		require.NotContains(t, strings.ToLower(line), "panic", "a panic in the server log")
		require.NotContains(t, line, "DATA RACE", "the race detector found a race in the server (built with -race)")
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// counts tallies inputs tried and codes seen per category.
type counts struct {
	mu    sync.Mutex
	tried map[string]int
	codes map[string]map[codes.Code]int
}

func newCounts() *counts {
	return &counts{tried: map[string]int{}, codes: map[string]map[codes.Code]int{}}
}

func (c *counts) add(category string, code codes.Code) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tried[category]++
	if c.codes[category] == nil {
		c.codes[category] = map[codes.Code]int{}
	}
	c.codes[category][code]++
}

func (c *counts) total() int {
	n := 0
	for _, v := range c.tried {
		n += v
	}
	return n
}

func (c *counts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var cats []string
	for k := range c.tried {
		cats = append(cats, k)
	}
	slices.Sort(cats)
	var b strings.Builder
	total := map[codes.Code]int{}
	for _, cat := range cats {
		fmt.Fprintf(&b, "  %-8s %4d tried:", cat, c.tried[cat])
		var cs []codes.Code
		for code := range c.codes[cat] {
			cs = append(cs, code)
		}
		slices.Sort(cs)
		for _, code := range cs {
			fmt.Fprintf(&b, " %s=%d", code, c.codes[cat][code])
			total[code] += c.codes[cat][code]
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "  total    %4d tried:", c.total())
	var cs []codes.Code
	for code := range total {
		cs = append(cs, code)
	}
	slices.Sort(cs)
	for _, code := range cs {
		fmt.Fprintf(&b, " %s=%d", code, total[code])
	}
	return b.String()
}

// expectation is what an input must get: one of codes (the first is
// today's), and a message a user can act on.
type expectation struct {
	codes    []codes.Code
	contains string
}

// minMessage is the shortest message that can say what went wrong and
// what to do.
const minMessage = 20

// maxMessage is errgrpc's cap on status messages.
const maxMessage = 1024

// checkAnswer checks err against want; it returns the code seen.
func checkAnswer(t *testing.T, err error, want expectation) codes.Code {
	t.Helper()
	if err == nil {
		t.Errorf("the call succeeded; want %v", want.codes)
		return codes.OK
	}
	st, ok := status.FromError(err)
	if !ok {
		t.Errorf("not a gRPC status: %v", err)
		return codes.Unknown
	}
	msg := st.Message()
	if !slices.Contains(want.codes, st.Code()) {
		t.Errorf("code %s, want %v; message: %s", st.Code(), want.codes, tail(msg, 300))
	}
	if len(msg) < minMessage {
		t.Errorf("message %q is shorter than %d bytes", msg, minMessage)
	}
	if len(msg) > maxMessage {
		t.Errorf("message is %d bytes, over the %d-byte cap: %s…", len(msg), maxMessage, msg[:200])
	}
	if st.Code() == codes.Internal || st.Code() == codes.Unknown || strings.Contains(strings.ToLower(msg), "internal server error") {
		t.Errorf("a generic internal error: %s", msg)
	}
	if want.contains != "" && !strings.Contains(msg, want.contains) {
		t.Errorf("message does not contain %q: %s", want.contains, tail(msg, 300))
	}
	return st.Code()
}

// fixture is the state every input runs against (the same in the Python
// suite): project adv with tables t (20 rows) and u (5 rows), branch dev,
// and a run of t (seed 1, batch 4, 5 steps) planned for 2 ranks.
type fixture struct {
	c          *client.Client
	addr       string
	root, head string
	run        string
	scanTicket []byte   // the one endpoint of a scan of adv/main/t
	rankTicket [][]byte // the fixture's run, world 2, ranks 0 and 1
	// signer signs with the store's ticket key (the one flightd made).
	signer *auth.Signer
	// auth is the second flightd, with --auth tokens, and its fixture.
	auth *authFixture
	// raw is a plain gRPC connection to the first flightd (proto inputs).
	raw *grpc.ClientConn
	// idemCommit is the commit of the idempotency category's valid put.
	idemCommit string
}

func dial(t *testing.T, addr string) *client.Client {
	c, err := client.Dial(addr, client.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func dialRaw(t *testing.T, addr string) *grpc.ClientConn {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
