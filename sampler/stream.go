package sampler

import "math/bits"

// Layout constants, part of the algorithm (changing one bumps EncodingVersion).
const (
	// maxLanes is the most lanes an epoch interleaves (see doc.go, "Streams").
	maxLanes = 64
	// splitUnits: a block longer than max(buffer_rows, ⌈N/splitUnits⌉) rows is
	// cut into near-equal pieces no longer than that, so a component held in
	// a few huge blocks still has enough units to shuffle.
	splitUnits = 4096
	// chunkRows sizes the lookup segments when buffer_rows is 0. It does not
	// change any output.
	chunkRows = 4096
)

// stream is one component's endless sequence of draws: draw k is row
// stream.row(k). It holds the O(#units) state precomputed by NewPlan and never
// changes after; per-call state lives in a cursor.
type stream struct {
	rows    int64  // N
	window  int64  // buffer_rows; 0 = block order only
	nSeg    int64  // windows (or lookup chunks) per epoch
	lanes   int64  // r
	laneLen int64  // m = ⌊M/r⌋
	extra   int64  // M mod r: lanes 0..extra-1 hold m+1 units
	rounds  int64  // m, plus one if extra > 0
	key     uint64 // derive(seed, tagStream, component)
	// Units in the fixed order σ: unit at σ-position q starts at row start[q]
	// and has prefix[q+1]-prefix[q] rows.
	prefix []int64
	start  []int64
}

// units cuts [0, rows) into the consecutive row ranges that are permuted.
// With buffer_rows 0 they are the caller's blocks. Otherwise, in one pass
// over the blocks: a block longer than split rows is cut into ⌈b/split⌉
// near-equal pieces (the first b mod k one row longer); other consecutive
// blocks are clumped until a clump holds at least ⌈buffer_rows/maxLanes⌉
// rows (a block that long is a unit by itself).
func units(rows int64, blocks []int64, window int64) []int64 {
	if len(blocks) == 0 {
		blocks = []int64{rows}
	}
	if window == 0 {
		return append([]int64(nil), blocks...)
	}
	split := max(window, (rows+splitUnits-1)/splitUnits)
	clump := (window + maxLanes - 1) / maxLanes
	out := make([]int64, 0, len(blocks))
	var pending int64
	for _, b := range blocks {
		if b <= split {
			pending += b
			if pending >= clump {
				out = append(out, pending)
				pending = 0
			}
			continue
		}
		if pending > 0 {
			out = append(out, pending)
			pending = 0
		}
		k := (b + split - 1) / split
		q, r := b/k, b%k
		for t := int64(0); t < k; t++ {
			if t < r {
				out = append(out, q+1)
			} else {
				out = append(out, q)
			}
		}
	}
	if pending > 0 {
		out = append(out, pending)
	}
	return out
}

func newStream(seed uint64, component int, rows int64, blocks []int64, window int64) *stream {
	sizes := units(rows, blocks, window)
	n := int64(len(sizes))
	st := &stream{
		rows:   rows,
		window: window,
		key:    derive(seed, tagStream, uint64(component)),
		prefix: make([]int64, n+1),
		start:  make([]int64, n),
	}
	seg := window
	if seg == 0 {
		seg = chunkRows
	}
	st.nSeg = max(1, rows/seg)
	st.lanes = min(n, maxLanes)
	st.laneLen = n / st.lanes
	st.extra = n % st.lanes
	st.rounds = st.laneLen
	if st.extra > 0 {
		st.rounds++
	}
	// Row start of every unit in the caller's order.
	starts := make([]int64, n)
	var acc int64
	for i, s := range sizes {
		starts[i] = acc
		acc += s
	}
	sigma := newPerm(derive(st.key, tagUnits), uint64(n))
	for q := int64(0); q < n; q++ {
		u := sigma.apply(uint64(q))
		st.start[q] = starts[u]
		st.prefix[q+1] = st.prefix[q] + sizes[u]
	}
	return st
}

func (st *stream) laneOffset(i int64) int64 { return i*st.laneLen + min(i, st.extra) }

func (st *stream) laneSize(i int64) int64 {
	if i < st.extra {
		return st.laneLen + 1
	}
	return st.laneLen
}

func (st *stream) roundSize(j int64) int64 {
	if j < st.laneLen {
		return st.lanes
	}
	return st.extra
}

// segStart is the first offset of window j: ⌊j·N/nSeg⌋.
func (st *stream) segStart(j int64) int64 {
	hi, lo := bits.Mul64(uint64(j), uint64(st.rows))
	q, _ := bits.Div64(hi, lo, uint64(st.nSeg))
	return int64(q)
}

// segOf is the window holding offset o: the largest j with segStart(j) ≤ o,
// which is ⌊((o+1)·nSeg - 1)/N⌋.
func (st *stream) segOf(o int64) int64 {
	hi, lo := bits.Mul64(uint64(o+1), uint64(st.nSeg))
	lo, b := bits.Sub64(lo, 1, 0)
	hi -= b
	q, _ := bits.Div64(hi, lo, uint64(st.rows))
	return int64(q)
}

// epochLanes is the per-epoch state of the lanes: rotation and direction.
type epochLanes struct {
	key uint64
	rho [maxLanes]int64
	rev [maxLanes]bool
}

func (st *stream) initEpoch(ep *epochLanes, epoch int64) {
	ep.key = derive(st.key, tagEpoch, uint64(epoch))
	lk := derive(ep.key, tagLane)
	for i := int64(0); i < st.lanes; i++ {
		h := mix(lk + uint64(i+1)*golden)
		r, _ := bits.Mul64(h, uint64(st.laneSize(i)))
		ep.rho[i] = int64(r)
		ep.rev[i] = h&1 == 1
	}
}

// element is the index inside lane i of the unit that lane i contributes to
// round j.
func (st *stream) element(ep *epochLanes, i, j int64) int64 {
	size := st.laneSize(i)
	if ep.rev[i] {
		e := ep.rho[i] - j
		if e < 0 {
			e += size
		}
		return e
	}
	e := ep.rho[i] + j
	if e >= size {
		e -= size
	}
	return e
}

// laneRows is the number of rows in the first j rounds' units of lane i.
func (st *stream) laneRows(ep *epochLanes, i, j int64) int64 {
	if j == 0 {
		return 0
	}
	size := st.laneSize(i)
	from := ep.rho[i]
	if ep.rev[i] {
		if from -= j - 1; from < 0 {
			from += size
		}
	}
	off := st.laneOffset(i)
	p := st.prefix
	end := from + j
	if end <= size {
		return p[off+end] - p[off+from]
	}
	return p[off+size] - p[off+from] + p[off+end-size] - p[off]
}

// roundRows is the number of rows in rounds 0..j-1.
func (st *stream) roundRows(ep *epochLanes, j int64) int64 {
	var sum int64
	for i := int64(0); i < st.lanes; i++ {
		sum += st.laneRows(ep, i, min(j, st.laneSize(i)))
	}
	return sum
}

// walker steps through an epoch's units in time order.
type walker struct {
	round, slot int64
	base        int64 // position of the unit's first row in the epoch
	q           int64 // σ-position of the unit
	size        int64
	order       [maxLanes]uint8 // order of the lanes in this round
}

// shuffleLanes writes a seeded permutation of [0, n) to order: Fisher–Yates,
// from the last slot down, slot i swapping with ⌊mix(key + (n-i)·golden)·(i+1)/2^64⌋.
func shuffleLanes(key uint64, n int64, order *[maxLanes]uint8) {
	for i := range n {
		order[i] = uint8(i)
	}
	for i := n - 1; i > 0; i-- {
		j, _ := bits.Mul64(mix(key+uint64(n-i)*golden), uint64(i+1))
		order[i], order[j] = order[j], order[i]
	}
}

func (st *stream) setRound(ep *epochLanes, w *walker, j int64) {
	w.round, w.slot = j, 0
	shuffleLanes(derive(ep.key, tagRound, uint64(j)), st.roundSize(j), &w.order)
}

func (st *stream) setUnit(ep *epochLanes, w *walker) {
	i := int64(w.order[w.slot])
	w.q = st.laneOffset(i) + st.element(ep, i, w.round)
	w.size = st.prefix[w.q+1] - st.prefix[w.q]
}

// next moves to the following unit; false at the end of the epoch.
func (st *stream) next(ep *epochLanes, w *walker) bool {
	last := w.slot+1 == st.roundSize(w.round)
	if last && w.round+1 == st.rounds {
		return false
	}
	w.base += w.size
	w.slot++
	if last {
		st.setRound(ep, w, w.round+1)
	}
	st.setUnit(ep, w)
	return true
}

// locate positions a walker on the unit holding position p of the epoch:
// bisection over rounds (O(lanes·log rounds)), then a scan of one round.
func (st *stream) locate(ep *epochLanes, p int64) walker {
	// Invariant: roundRows(lo) = fLo ≤ p < roundRows(hi) = fHi. Rounds hold
	// nearly equal numbers of rows, so interpolation lands on or next to the
	// answer, and probing the neighbour closes the bracket. After three
	// such tries the search bisects, so it never takes more than
	// 2·3 + log₂(rounds) probes of O(lanes) each.
	lo, hi := int64(0), st.rounds
	fLo, fHi := int64(0), st.rows
	for try := 0; hi-lo > 1; try++ {
		if try >= 3 {
			mid := lo + (hi-lo)/2
			if f := st.roundRows(ep, mid); f <= p {
				lo, fLo = mid, f
			} else {
				hi, fHi = mid, f
			}
			continue
		}
		dh, dl := bits.Mul64(uint64(p-fLo), uint64(hi-lo))
		q, _ := bits.Div64(dh, dl, uint64(fHi-fLo)) // < hi-lo, as p < fHi
		g := min(max(lo+int64(q), lo+1), hi-1)
		if f := st.roundRows(ep, g); f <= p {
			lo, fLo = g, f
			if g+1 < hi {
				if f := st.roundRows(ep, g+1); f > p {
					hi, fHi = g+1, f
				} else {
					lo, fLo = g+1, f
				}
			}
		} else {
			hi, fHi = g, f
			if g-1 > lo {
				if f := st.roundRows(ep, g-1); f <= p {
					lo, fLo = g-1, f
				} else {
					hi, fHi = g-1, f
				}
			}
		}
	}
	base := fLo
	var w walker
	st.setRound(ep, &w, lo)
	w.base = base
	st.setUnit(ep, &w)
	for p >= w.base+w.size {
		st.next(ep, &w)
	}
	return w
}

// tabEntry maps the unit that starts at position pos to its first row.
type tabEntry struct{ pos, row int64 }

// cursor evaluates one stream's draws, caching the current epoch and window.
// Not safe for concurrent use; a Plan keeps cursors in a sync.Pool.
type cursor struct {
	st       *stream
	epoch    int64
	lanes    epochLanes
	seg      int64
	segStart int64
	segEnd   int64
	inner    perm
	tab      []tabEntry
	w        walker
	wNext    bool  // w holds the unit at position segEnd
	lastK    int64 // draw index of the previous call, -1 if none
	lastO    int64 // its offset
}

func newCursor(st *stream) *cursor {
	return &cursor{st: st, epoch: -1, seg: -1, lastK: -1}
}

// row returns the row of draw k: epoch k div N, offset k mod N.
func (c *cursor) row(k int64) int64 {
	st := c.st
	// Draws are mostly read forwards: step the offset instead of dividing.
	e, o := c.epoch, c.lastO+(k-c.lastK)
	if k <= c.lastK || c.lastK < 0 || o >= st.rows || o < 0 {
		e, o = k/st.rows, k%st.rows
	}
	c.lastK, c.lastO = k, o
	if e != c.epoch {
		st.initEpoch(&c.lanes, e)
		c.epoch, c.seg, c.wNext = e, -1, false
	}
	if c.seg < 0 || o < c.segStart || o >= c.segEnd {
		c.enter(st.segOf(o))
	}
	p := o
	if st.window > 0 {
		p = c.segStart + int64(c.inner.apply(uint64(o-c.segStart)))
	}
	// Last entry with pos ≤ p; written so the compiler emits a conditional
	// move instead of an unpredictable branch.
	tab := c.tab
	base := 0
	for n := len(tab); n > 1; {
		half := n / 2
		if tab[base+half].pos <= p {
			base += half
		}
		n -= half
	}
	return tab[base].row + p - tab[base].pos
}

// enter makes window j current: its row order and the table of units that
// overlap it.
func (c *cursor) enter(j int64) {
	st := c.st
	start, end := st.segStart(j), st.segStart(j+1)
	if st.window > 0 {
		c.inner = newPerm(derive(c.lanes.key, tagWindow, uint64(j)), uint64(end-start))
	}
	if !(c.wNext && j == c.seg+1) {
		c.w = st.locate(&c.lanes, start)
	}
	c.tab = c.tab[:0]
	c.wNext = false
	for {
		c.tab = append(c.tab, tabEntry{pos: c.w.base, row: st.start[c.w.q]})
		if c.w.base+c.w.size > end {
			c.wNext = true
			break
		}
		if !st.next(&c.lanes, &c.w) {
			break
		}
		if c.w.base >= end {
			c.wNext = true
			break
		}
	}
	c.seg, c.segStart, c.segEnd = j, start, end
}
