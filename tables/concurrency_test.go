package tables_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/versions"
)

// backends are the buckets the end-to-end table tests run on.
func backends(t *testing.T) map[string]func(t *testing.T) bucket.Bucket {
	return map[string]func(t *testing.T) bucket.Bucket{
		"fs": func(t *testing.T) bucket.Bucket {
			b, err := bucket.NewFS(t.TempDir())
			require.NoError(t, err)
			return b
		},
		"minio": func(t *testing.T) bucket.Bucket { return newMinIOBucket(t) },
	}
}

// TestConcurrentAppends: 8 goroutines each append 25 times to one table on
// one branch. The branch ends with 200 commits in one linear history, and
// the table holds every appended row exactly once.
func TestConcurrentAppends(t *testing.T) {
	for name, newBucket := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if testing.Short() {
				t.Skip("-short: skipping the 200-commit race")
			}
			b := newBucket(t)
			e := newEnv(t, b, smallGroups())
			ctx := context.Background()
			root, err := e.v.CreateProject(ctx, "p")
			require.NoError(t, err)

			const writers, each, rows = 8, 25, 10
			var wg sync.WaitGroup
			errs := make(chan error, writers*each)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						start := int64(w*each+i) * rows
						rec := makeBatch(e.mem, start, rows)
						rr, err := array.NewRecordReader(testSchema, []arrow.RecordBatch{rec})
						rec.Release()
						if err != nil {
							errs <- err
							return
						}
						_, err = e.s.Append(ctx, "p", "main", "t", rr, fmt.Sprintf("w%d-%d", w, i))
						rr.Release()
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			checkHistory(t, e, root.ID, writers*each, writers*each*rows)
		})
	}
}

// checkHistory asserts main has commits linear commits on top of root and
// that table t holds ids 0..rows-1, each once.
func checkHistory(t *testing.T, e *env, root versions.CommitID, commits, rows int) {
	t.Helper()
	log, err := e.v.Log(context.Background(), "p", "main", 0)
	require.NoError(t, err)
	require.Len(t, log, commits+1, "every commit is in the history")
	require.Equal(t, root, log[len(log)-1].ID)
	for i := 0; i+1 < len(log); i++ {
		require.Equal(t, log[i+1].ID, log[i].Parent, "history is linear")
	}
	v, err := e.s.Table(context.Background(), "p", "main", "t")
	require.NoError(t, err)
	ids := e.readAll(t, v)
	slices.Sort(ids)
	require.Equal(t, seq(0, int64(rows)), ids, "every row exactly once")
}

const procEnv = "WEFT_TEST_APPEND_PROC"

// TestConcurrentAppendProcesses: 4 OS processes on one fs store each append
// 25 times to one table: 100 commits, every row once. The processes are this
// test binary, re-run with procEnv set.
func TestConcurrentAppendProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-process race")
	}
	dir := t.TempDir()
	b, err := bucket.NewFS(dir)
	require.NoError(t, err)
	e := newEnv(t, b, smallGroups())
	root, err := e.v.CreateProject(context.Background(), "p")
	require.NoError(t, err)

	const procs, each, rows = 4, 25, 10
	cmds := make([]*exec.Cmd, procs)
	outs := make([][]byte, procs)
	var wg sync.WaitGroup
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAppendProcessChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), procEnv+"="+dir, "WEFT_TEST_PROC_INDEX="+strconv.Itoa(p), "WEFT_TEST_PROC_APPENDS="+strconv.Itoa(each))
		cmds[p] = cmd
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[p], _ = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for p, cmd := range cmds {
		require.True(t, cmd.ProcessState.Success(), "process %d failed:\n%s", p, outs[p])
	}
	checkHistory(t, e, root.ID, procs*each, procs*each*rows)
}

// TestAppendProcessChild is the body of one writer process of
// TestConcurrentAppendProcesses; it does nothing in a normal run.
func TestAppendProcessChild(t *testing.T) {
	dir := os.Getenv(procEnv)
	if dir == "" {
		return
	}
	index, _ := strconv.Atoi(os.Getenv("WEFT_TEST_PROC_INDEX"))
	each, _ := strconv.Atoi(os.Getenv("WEFT_TEST_PROC_APPENDS"))
	b, err := bucket.NewFS(dir)
	require.NoError(t, err)
	e := newEnv(t, b, smallGroups())
	for i := range each {
		e.append(t, "p", "main", "t", int64(index*each+i)*10, 10, 10)
	}
}
