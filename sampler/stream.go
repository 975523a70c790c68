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
// near-equal pieces (the first b mod k one row longer); runs of shorter blocks
// are clumped until a clump holds at least ⌈buffer_rows/maxLanes⌉ rows.
func units(rows int64, blocks []int64, window int64) []int64 {
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
	for i := int64(0); i < st.lanes; i++ {
		h := derive(ep.key, tagLane, uint64(i))
		ep.rho[i] = int64(h % uint64(st.laneSize(i)))
		ep.rev[i] = mix(h)&1 == 1
	}
}

// element is the index inside lane i of the unit that lane i contributes to
// round j.
func (st *stream) element(ep *epochLanes, i, j int64) int64 {
	size := st.laneSize(i)
	if ep.rev[i] {
		return ((ep.rho[i]-j)%size + size) % size
	}
	return (ep.rho[i] + j) % size
}

// laneRows is the number of rows in the first j rounds' units of lane i.
func (st *stream) laneRows(ep *epochLanes, i, j int64) int64 {
	if j == 0 {
		return 0
	}
	size := st.laneSize(i)
	from := ep.rho[i]
	if ep.rev[i] {
		from = ((from-j+1)%size + size) % size
	}
	off := st.laneOffset(i)
	p := st.prefix
	if end := from + j; end <= size {
		return p[off+end] - p[off+from]
	} else {
		return p[off+size] - p[off+from] + p[off+end-size] - p[off]
	}
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
	order       perm // order of the lanes in this round
}

func (st *stream) setRound(ep *epochLanes, w *walker, j int64) {
	w.round, w.slot = j, 0
	w.order = newPerm(derive(ep.key, tagRound, uint64(j)), uint64(st.roundSize(j)))
}

func (st *stream) setUnit(ep *epochLanes, w *walker) {
	i := int64(w.order.apply(uint64(w.slot)))
	w.q = st.laneOffset(i) + st.element(ep, i, w.round)
	w.size = st.prefix[w.q+1] - st.prefix[w.q]
}

// next moves to the following unit; false at the end of the epoch.
func (st *stream) next(ep *epochLanes, w *walker) bool {
	w.base += w.size
	w.slot++
	if w.slot == st.roundSize(w.round) {
		if w.round+1 == st.rounds {
			return false
		}
		st.setRound(ep, w, w.round+1)
	}
	st.setUnit(ep, w)
	return true
}

// locate positions a walker on the unit holding position p of the epoch:
// bisection over rounds (O(lanes·log rounds)), then a scan of one round.
func (st *stream) locate(ep *epochLanes, p int64) walker {
	lo, hi := int64(0), st.rounds
	var base int64
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if f := st.roundRows(ep, mid); f <= p {
			lo, base = mid, f
		} else {
			hi = mid
		}
	}
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
	wNext    bool // w holds the unit at position segEnd
}

func newCursor(st *stream) *cursor {
	return &cursor{st: st, epoch: -1, seg: -1}
}

// row returns the row of draw k: epoch k div N, offset k mod N.
func (c *cursor) row(k int64) int64 {
	st := c.st
	e, o := k/st.rows, k%st.rows
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
	tab := c.tab
	lo, hi := 0, len(tab)
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if tab[mid].pos <= p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return tab[lo].row + p - tab[lo].pos
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
