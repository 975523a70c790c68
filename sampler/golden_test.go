package sampler

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json from the current code")

// goldenFile pins the run id and the first three global batches of a few
// fixed runs. A diff means the algorithm or the encoding changed: bump
// EncodingVersion and regenerate with
//
//	go test ./sampler/ -run TestGolden -update
const goldenFile = "testdata/golden.json"

type goldenComponent struct {
	Weight   float64 `json:"weight"`
	Rows     int64   `json:"rows"`
	Blocks   []int64 `json:"blocks,omitempty"`
	Identity string  `json:"identity"`
}

type goldenRun struct {
	Name       string            `json:"name"`
	Seed       uint64            `json:"seed"`
	BatchSize  int               `json:"batch_size"`
	BufferRows int64             `json:"buffer_rows"`
	Steps      int64             `json:"steps,omitempty"`
	Components []goldenComponent `json:"components"`
	RunID      string            `json:"run_id"`
	RunSteps   int64             `json:"run_steps"`
	Counts     [][]int           `json:"counts"`
}

// goldenEntry is one run and its first batches, each written as
// "component:row" pairs on one line, so a change reads as a small diff.
type goldenEntry struct {
	Run     goldenRun `json:"run"`
	Batches []string  `json:"batches"`
}

type goldenVectors struct {
	EncodingVersion int           `json:"encoding_version"`
	Runs            []goldenEntry `json:"runs"`
}

func (g goldenRun) spec() Spec {
	s := Spec{Seed: g.Seed, BatchSize: g.BatchSize, Shuffle: Shuffle{BufferRows: g.BufferRows}, Steps: g.Steps}
	for _, c := range g.Components {
		s.Components = append(s.Components, Component{Weight: c.Weight, Rows: c.Rows, Blocks: c.Blocks, Identity: c.Identity})
	}
	return s
}

// goldenRuns are the pinned runs; their outputs are filled in from the code.
func goldenRuns() []goldenRun {
	return []goldenRun{
		{Name: "acceptance: seed 2048, B=64, 0.3/0.7, one row group of 9,412 and row groups of 1,024", Seed: 2048, BatchSize: 64,
			BufferRows: DefaultBufferRows, Components: []goldenComponent{
				{Weight: 0.3, Rows: 9412, Identity: "robotics/failed_grasps"},
				{Weight: 0.7, Rows: 81006, Blocks: blocksOf(81006, 1024), Identity: "robotics/nominal_grasps"}}},
		{Name: "acceptance layout from manifests, block order only", Seed: 2048, BatchSize: 64,
			Components: []goldenComponent{
				{Weight: 0.3, Rows: 9412, Blocks: []int64{4096, 4096, 1220}, Identity: "robotics/failed_grasps"},
				{Weight: 0.7, Rows: 81006, Blocks: append(blocksOf(65536, 4096), blocksOf(81006-65536, 4096)...), Identity: "robotics/nominal_grasps"}}},
		{Name: "three components, a small window, B=10", Seed: 7, BatchSize: 10, BufferRows: 100,
			Components: []goldenComponent{
				{Weight: 1, Rows: 1, Identity: "a"},
				{Weight: 2, Rows: 2, Identity: "b"},
				{Weight: 3.5, Rows: 1000, Blocks: blocksOf(1000, 64), Identity: "c"}}},
		{Name: "a share below one sample per batch, B=3, fixed steps", Seed: 1, BatchSize: 3, BufferRows: DefaultBufferRows, Steps: 1000,
			Components: []goldenComponent{
				{Weight: 0.001, Rows: 5, Identity: "rare"},
				{Weight: 1, Rows: 100_000, Blocks: blocksOf(100_000, 777), Identity: "common"}}},
	}
}

func computeGolden(t *testing.T) goldenVectors {
	g := goldenVectors{EncodingVersion: EncodingVersion}
	for _, run := range goldenRuns() {
		p := mustPlan(t, run.spec())
		run.RunID, run.RunSteps = p.RunID(), p.Steps()
		e := goldenEntry{Run: run}
		for s := int64(0); s < 3; s++ {
			e.Run.Counts = append(e.Run.Counts, p.Counts(s))
			b, err := p.Batch(s, nil)
			require.NoError(t, err)
			var sb strings.Builder
			for i, x := range b {
				if i > 0 {
					sb.WriteByte(' ')
				}
				fmt.Fprintf(&sb, "%d:%d", x.Component, x.Row)
			}
			e.Batches = append(e.Batches, sb.String())
		}
		g.Runs = append(g.Runs, e)
	}
	return g
}

// marshal writes one line per run header and per batch.
func (g goldenVectors) marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"encoding_version\": %d,\n \"runs\": [\n", g.EncodingVersion)
	for i, e := range g.Runs {
		run, _ := json.Marshal(e.Run)
		fmt.Fprintf(&b, "  {\"run\": %s,\n   \"batches\": [\n", run)
		for j, batch := range e.Batches {
			q, _ := json.Marshal(batch)
			b.WriteString("    ")
			b.Write(q)
			if j < len(e.Batches)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString("   ]}")
		if i < len(g.Runs)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(" ]}\n")
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	t.Parallel()
	got := computeGolden(t)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(goldenFile), 0o755))
		require.NoError(t, os.WriteFile(goldenFile, got.marshal(), 0o644))
		return
	}
	data, err := os.ReadFile(goldenFile)
	require.NoError(t, err)
	var want goldenVectors
	require.NoError(t, json.Unmarshal(data, &want))
	require.Equal(t, EncodingVersion, want.EncodingVersion,
		"EncodingVersion was bumped: regenerate with go test ./sampler/ -run TestGolden -update")
	require.Len(t, got.Runs, len(want.Runs))
	for i := range want.Runs {
		w, g := want.Runs[i], got.Runs[i]
		require.Equal(t, w.Run.spec(), g.Run.spec(), "run %q: the pinned spec changed", w.Run.Name)
		msg := "run %q: batches changed, so the algorithm changed; bump EncodingVersion and regenerate with go test ./sampler/ -run TestGolden -update"
		require.Equal(t, w.Run.RunSteps, g.Run.RunSteps, msg, w.Run.Name)
		require.Equal(t, w.Run.Counts, g.Run.Counts, msg, w.Run.Name)
		require.Len(t, g.Batches, len(w.Batches))
		for s := range w.Batches {
			if w.Batches[s] != g.Batches[s] {
				want, got := strings.Fields(w.Batches[s]), strings.Fields(g.Batches[s])
				i := 0
				for i < min(len(want), len(got)) && want[i] == got[i] {
					i++
				}
				t.Fatalf(msg+" (step %d, first difference at position %d)", w.Run.Name, s, i)
			}
		}
		require.Equal(t, w.Run.RunID, g.Run.RunID,
			"run %q: run id changed with the same batches: bump EncodingVersion if the encoding changed", w.Run.Name)
	}
	require.Equal(t, string(data), string(got.marshal()), "golden file is in canonical form")
}
