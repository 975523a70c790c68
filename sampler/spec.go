package sampler

import (
	"fmt"
	"math"
)

// Limits.
const (
	// DefaultBufferRows is the shuffle window callers should use when a
	// recipe does not say: Shuffle{BufferRows: DefaultBufferRows}.
	DefaultBufferRows = 8192
	// MaxBatchSize is the largest batch size B.
	MaxBatchSize = 1 << 20
	// MaxComponents is the most components a run may mix.
	MaxComponents = 1 << 16
	// MaxBlocks is the most blocks one component may have.
	MaxBlocks = 1 << 31
	// maxDraws bounds Σ N_i and steps·B, so that every draw index, row
	// ordinal and running total fits in an int64 with room to spare.
	maxDraws = 1 << 62
)

// Component is one table of the mix, as resolved: its weight, its row count at
// the pinned version, and how its rows are grouped into blocks.
type Component struct {
	// Weight is the component's relative share of every batch: positive and
	// finite. Weights are reduced once to exact integers (see doc.go,
	// "Weights"); weights proportional to each other give the same run.
	Weight float64
	// Rows is N_i ≥ 1, the number of rows (row ordinals 0..N_i-1).
	Rows int64
	// Blocks are the sizes of consecutive row ranges (row groups, or clumps
	// of them) in row order; each ≥ 1, summing to Rows. Nil or empty means a
	// single block of Rows rows.
	Blocks []int64
	// Identity is opaque to the sampler but part of the run id, for example
	// "project/table@commit col1,col2".
	Identity string
}

// Shuffle configures the order of rows inside a component's epoch.
type Shuffle struct {
	// BufferRows is the size of the shuffle window in rows: blocks are
	// permuted and rows are shuffled within windows of BufferRows to
	// 2·BufferRows consecutive rows of the permuted blocks. 0 means block
	// order only (the blocks are permuted, the rows of each block come in
	// order), so the zero Shuffle is block order only: recipes that do not
	// say must ask for DefaultShuffle().
	BufferRows int64
}

// DefaultShuffle is Shuffle{BufferRows: DefaultBufferRows}.
func DefaultShuffle() Shuffle { return Shuffle{BufferRows: DefaultBufferRows} }

// Spec is a resolved run: everything the batches depend on.
type Spec struct {
	Seed uint64
	// BatchSize is B, the number of samples in every global batch:
	// 1..MaxBatchSize.
	BatchSize  int
	Components []Component
	Shuffle    Shuffle
	// Steps is the run length; 0 derives it as ⌈Σ N_i / B⌉.
	Steps int64
}

// Sample is one slot of a batch: a row ordinal of a component.
type Sample struct {
	Component int32 // index into Spec.Components
	Row       int64 // row ordinal in that component's pinned version
}

// validate checks everything but the weights (reduceWeights checks those)
// and returns the resolved number of steps.
func (s *Spec) validate() (int64, error) {
	if len(s.Components) == 0 {
		return 0, ErrNoComponents
	}
	if len(s.Components) > MaxComponents {
		return 0, fmt.Errorf("%d components, more than %d: %w", len(s.Components), MaxComponents, ErrTooLarge)
	}
	if s.BatchSize < 1 || s.BatchSize > MaxBatchSize {
		return 0, fmt.Errorf("batch size %d is not in 1..%d: %w", s.BatchSize, MaxBatchSize, ErrBatchSize)
	}
	if s.Shuffle.BufferRows < 0 {
		return 0, fmt.Errorf("buffer_rows %d is negative: %w", s.Shuffle.BufferRows, ErrShuffle)
	}
	if s.Steps < 0 {
		return 0, fmt.Errorf("steps %d is negative: %w", s.Steps, ErrSteps)
	}
	var total int64
	for i, c := range s.Components {
		if c.Weight <= 0 || math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0) {
			return 0, fmt.Errorf("component %d: weight %v is not positive and finite: %w", i, c.Weight, ErrWeight)
		}
		if c.Rows < 1 {
			return 0, fmt.Errorf("component %d: %d rows, need at least 1: %w", i, c.Rows, ErrRows)
		}
		if c.Rows > maxDraws-total {
			return 0, fmt.Errorf("component %d: total rows exceed 2^62: %w", i, ErrTooLarge)
		}
		total += c.Rows
		if int64(len(c.Blocks)) > MaxBlocks {
			return 0, fmt.Errorf("component %d: %d blocks, more than %d: %w", i, len(c.Blocks), int64(MaxBlocks), ErrTooLarge)
		}
		var sum int64
		for j, b := range c.Blocks {
			if b < 1 {
				return 0, fmt.Errorf("component %d: block %d has %d rows, need at least 1: %w", i, j, b, ErrBlocks)
			}
			if b > c.Rows-sum {
				return 0, fmt.Errorf("component %d: blocks sum past its %d rows: %w", i, c.Rows, ErrBlocks)
			}
			sum += b
		}
		if len(c.Blocks) > 0 && sum != c.Rows {
			return 0, fmt.Errorf("component %d: blocks sum to %d, not its %d rows: %w", i, sum, c.Rows, ErrBlocks)
		}
	}
	b := int64(s.BatchSize)
	steps := s.Steps
	if steps == 0 {
		steps = (total + b - 1) / b
	}
	if steps > maxDraws/b {
		return 0, fmt.Errorf("%d steps of %d samples exceed 2^62 draws: %w", steps, b, ErrTooLarge)
	}
	return steps, nil
}
