// Package s3test runs real S3 servers, MinIO and versitygw, as local child
// processes for tests: no Docker, no network beyond 127.0.0.1.
//
// The server binaries are looked up in $WEFT_TOOLS_BIN, then
// $HOME/.cache/weft/bin, then $PATH (`make tools` installs them). When one is
// missing, tests that need it are skipped with a loud message, or fail when
// CI=true, so CI never passes by skipping.
//
// StartMinIO and StartVersityGW start a server for one test and stop it when
// the test ends. SharedMinIO and SharedVersityGW start one server per test
// binary, which Main stops:
//
//	func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }
//
// Servers die with the test binary even when it is killed: they get SIGKILL
// when the thread that started them exits (PR_SET_PDEATHSIG), and that
// thread lives as long as the server.
package s3test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/weftdata/weft/bucket"
)

// Server is an S3 server running as a child process.
type Server struct {
	Name      string // "minio" or "versitygw"
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Region    string

	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has been waited for
	output  *tailBuffer
	admin   *minio.Client
	adminTr *http.Transport
	buckets atomic.Int64
	stop    sync.Once
}

// kind describes how to install and run one server.
type kind struct {
	name    string
	binary  string
	module  string // for the install hint
	access  string
	secret  string
	args    func(dir string, ports []int) []string
	env     func(access, secret string) []string
	ports   int    // listening ports the server needs
	readyAt string // HTTP path answering 200 when the server is ready
}

var minioKind = kind{
	name:   "minio",
	binary: "minio",
	module: "github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c",
	access: "weftminio",
	secret: "weftminio-secret",
	args: func(dir string, ports []int) []string {
		return []string{"server", "--quiet",
			"--address", fmt.Sprintf("127.0.0.1:%d", ports[0]),
			"--console-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
			"--certs-dir", filepath.Join(dir, "certs"),
			filepath.Join(dir, "data")}
	},
	env: func(access, secret string) []string {
		return []string{"MINIO_ROOT_USER=" + access, "MINIO_ROOT_PASSWORD=" + secret,
			"MINIO_BROWSER=off", "MINIO_UPDATE=off"}
	},
	ports:   2,
	readyAt: "/minio/health/ready",
}

var versityKind = kind{
	name:   "versitygw",
	binary: "versitygw",
	module: "github.com/versity/versitygw/cmd/versitygw@v1.8.0",
	access: "weftvgw",
	secret: "weftvgw-secret",
	args: func(dir string, ports []int) []string {
		// The posix backend needs a file system with xattrs (ext4, xfs,
		// tmpfs all work).
		// No --keep-alive: with it, versitygw 1.8.0 answers a PUT it
		// rejects early (412, 409) without reading the body, then parses
		// the body as the next request on the connection and sends an
		// unsolicited 400, which a client can take for the answer to its
		// next request.
		return []string{"--port", fmt.Sprintf("127.0.0.1:%d", ports[0]),
			"--quiet", "--health", "/weft-health",
			"posix", filepath.Join(dir, "data")}
	},
	env: func(access, secret string) []string {
		return []string{"ROOT_ACCESS_KEY=" + access, "ROOT_SECRET_KEY=" + secret}
	},
	ports:   1,
	readyAt: "/weft-health",
}

// StartMinIO starts a MinIO server for t and stops it when t ends.
func StartMinIO(t testing.TB) *Server { return startFor(t, minioKind) }

// StartVersityGW starts a versitygw server (posix backend) for t and stops
// it when t ends.
func StartVersityGW(t testing.TB) *Server { return startFor(t, versityKind) }

func startFor(t testing.TB, k kind) *Server {
	t.Helper()
	bin := requireBinary(t, k)
	s, err := start(k, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop %s: %v", s.Name, err)
		}
		if t.Failed() {
			t.Logf("%s output (tail):\n%s", s.Name, s.Output())
		}
	})
	return s
}

// Shared servers, one per kind per process, stopped by Main.
var shared struct {
	sync.Mutex
	mainRunning bool
	servers     map[string]*sharedServer
}

type sharedServer struct {
	once sync.Once
	s    *Server
	dir  string
	err  error
}

// SharedMinIO returns the test binary's MinIO server, starting it on first
// use. The package's TestMain must call Main.
func SharedMinIO(t testing.TB) *Server { return sharedFor(t, minioKind) }

// SharedVersityGW returns the test binary's versitygw server, starting it on
// first use. The package's TestMain must call Main.
func SharedVersityGW(t testing.TB) *Server { return sharedFor(t, versityKind) }

func sharedFor(t testing.TB, k kind) *Server {
	t.Helper()
	bin := requireBinary(t, k)
	shared.Lock()
	if !shared.mainRunning {
		shared.Unlock()
		t.Fatalf("s3test: shared servers need `func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }`")
	}
	if shared.servers == nil {
		shared.servers = map[string]*sharedServer{}
	}
	ss := shared.servers[k.name]
	if ss == nil {
		ss = &sharedServer{}
		shared.servers[k.name] = ss
	}
	shared.Unlock()
	ss.once.Do(func() {
		ss.dir, ss.err = os.MkdirTemp("", "weft-"+k.name+"-")
		if ss.err == nil {
			ss.s, ss.err = start(k, bin, ss.dir)
		}
	})
	if ss.err != nil {
		t.Fatal(ss.err)
	}
	return ss.s
}

// Main runs the tests, then stops the shared servers and removes their
// files, printing a server's output if the tests failed. It returns m.Run's
// exit code.
func Main(m *testing.M) int {
	shared.Lock()
	shared.mainRunning = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	shared.mainRunning = false
	for name, ss := range shared.servers {
		if ss.s != nil {
			if err := ss.s.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "s3test: stop %s: %v\n", name, err)
				code = max(code, 1)
			}
			if code != 0 {
				fmt.Fprintf(os.Stderr, "s3test: %s output (tail):\n%s\n", name, ss.s.Output())
			}
		}
		if ss.dir != "" {
			os.RemoveAll(ss.dir)
		}
	}
	shared.servers = nil
	return code
}

// requireBinary finds k's binary or skips t (fails it when CI=true).
func requireBinary(t testing.TB, k kind) string {
	t.Helper()
	bin, where := findBinary(k.binary)
	if bin != "" {
		return bin
	}
	msg := fmt.Sprintf("%s binary not found (looked in %s); run `make tools` or `GOBIN=$HOME/.cache/weft/bin go install %s`",
		k.binary, where, k.module)
	if os.Getenv("CI") == "true" {
		t.Fatalf("S3 TESTS CANNOT RUN ON CI: %s", msg)
	}
	t.Skipf("SKIPPING S3 TESTS: %s", msg)
	return ""
}

// findBinary looks in $WEFT_TOOLS_BIN, $HOME/.cache/weft/bin and $PATH, and
// returns the path found, or "" and where it looked.
func findBinary(name string) (path, where string) {
	var dirs []string
	if d := os.Getenv("WEFT_TOOLS_BIN"); d != "" {
		dirs = append(dirs, d)
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache", "weft", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, ""
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, ""
	}
	return "", strings.Join(append(dirs, "$PATH"), ", ")
}

// start runs k's server on free ports under dir and waits until it is
// ready. A port taken between choosing and binding costs another try.
func start(k kind, bin, dir string) (*Server, error) {
	var lastErr error
	for range 3 {
		s, err := startOnce(k, bin, dir)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return nil, lastErr
}

func startOnce(k kind, bin, dir string) (*Server, error) {
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", k.name, err)
	}
	ports, err := freePorts(k.ports)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", k.name, err)
	}
	s := &Server{
		Name:      k.name,
		Endpoint:  fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		AccessKey: k.access,
		SecretKey: k.secret,
		Region:    "us-east-1",
		exited:    make(chan struct{}),
		output:    &tailBuffer{max: 256 << 10},
	}
	s.cmd = exec.Command(bin, k.args(dir, ports)...)
	s.cmd.Env = append(os.Environ(), k.env(k.access, k.secret)...)
	s.cmd.Dir = dir
	s.cmd.Stdout = s.output
	s.cmd.Stderr = s.output
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}

	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that forked the child exits, so
		// pin this goroutine to its thread until the child is gone. Exiting
		// locked then ends the thread, which is fine.
		runtime.LockOSThread()
		err := s.cmd.Start()
		started <- err
		if err == nil {
			_ = s.cmd.Wait()
		}
		close(s.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", k.name, err)
	}

	if err := s.waitReady(k.readyAt, 60*time.Second); err != nil {
		s.Stop()
		return nil, fmt.Errorf("start %s (%s): %w\n%s output:\n%s", k.name, bin, err, k.name, s.Output())
	}
	s.adminTr = &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}
	s.admin, err = minio.New(strings.TrimPrefix(s.Endpoint, "http://"), &minio.Options{
		Creds:     credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Region:    s.Region,
		Transport: s.adminTr,
	})
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("start %s: client: %w", k.name, err)
	}
	return s, nil
}

func (s *Server) waitReady(path string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("server exited before it was ready: %v", s.cmd.ProcessState)
		default:
		}
		resp, err := client.Get(s.Endpoint + path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %v: %v", timeout, lastErr)
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and waits for it
// to exit. It is safe to call more than once.
func (s *Server) Stop() error {
	var err error
	s.stop.Do(func() {
		if s.adminTr != nil {
			s.adminTr.CloseIdleConnections()
		}
		if s.cmd.Process == nil {
			return
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
			err = fmt.Errorf("%s ignored SIGTERM for 10 s and was killed", s.Name)
		}
	})
	return err
}

// Output returns the tail of the server's stdout and stderr.
func (s *Server) Output() string { return s.output.String() }

// Config returns the settings that reach bucketName on this server.
func (s *Server) Config(bucketName string) bucket.S3Config {
	return bucket.S3Config{
		Endpoint:  s.Endpoint,
		AccessKey: s.AccessKey,
		SecretKey: s.SecretKey,
		Region:    s.Region,
		Bucket:    bucketName,
	}
}

var badBucketChars = regexp.MustCompile(`[^a-z0-9-]+`)

// MakeBucket creates a new, empty bucket and returns its name: name made
// fit for S3 (lower case, at most 40 characters of it) plus a number that
// makes it unique on this server.
func (s *Server) MakeBucket(t testing.TB, name string) string {
	t.Helper()
	base := strings.Trim(badBucketChars.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-")
	}
	if base == "" {
		base = "bucket"
	}
	bucketName := fmt.Sprintf("%s-%d", base, s.buckets.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.admin.MakeBucket(ctx, bucketName, minio.MakeBucketOptions{Region: s.Region}); err != nil {
		t.Fatalf("%s: make bucket %s: %v", s.Name, bucketName, err)
	}
	return bucketName
}

// NewBucket creates a new, empty bucket (see MakeBucket) and returns a
// bucket.S3 on it, closed when t ends. If t fails, the server's output is
// logged.
func (s *Server) NewBucket(t testing.TB, name string) bucket.Bucket {
	t.Helper()
	bucketName := s.MakeBucket(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := bucket.NewS3(ctx, s.Config(bucketName))
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	t.Cleanup(func() {
		b.Close()
		if t.Failed() {
			t.Logf("%s output (tail):\n%s", s.Name, s.Output())
		}
	})
	return b
}

// freePorts returns n distinct ports free on 127.0.0.1 right now.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	dropped bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.dropped = true
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped {
		return "[…]\n" + string(b.buf)
	}
	return string(b.buf)
}
