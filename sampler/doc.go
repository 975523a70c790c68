// Package sampler is Weft's determinism contract: pure math that turns a
// resolved run (seed, batch size B, per-component weight, row count N_i and
// block layout, shuffle window, optional run length) into the global batch of
// any step and any rank's slice of it. It does no I/O and imports no storage
// or Arrow packages. Every result is a pure function of the Spec and the
// arguments: the same at any number of ranks, after any crash, on any machine.
//
// # API
//
// NewPlan validates a Spec and precomputes O(#blocks) state. Plan.Batch(s)
// is the global batch of step s: B Samples (component, row ordinal).
// Plan.RankSlice(s, r, W) is rank r's part of it: positions r, r+W, r+2W, …;
// W must divide B, and the union over ranks is the global batch. Plan.Counts
// gives the per-component slot counts of a step, Plan.DrawRange the draws a
// step uses, Plan.Draw and Plan.DrawRows map a component's draw index to a
// row (the serving layer prefetches a step's rows with Batch), and
// Plan.Weights gives the reduced weights. Plan.RunID identifies the run.
// DriftBound states the long-run share guarantee. A Plan is safe for
// concurrent use. Every error wraps ErrInvalid.
//
// # Weights
//
// Weights are positive finite float64s, reduced once to integers u_i: each
// weight is read as its shortest round-trip decimal (0.3 is 3/10), the
// decimals are scaled to a common power of ten and divided by their gcd (0.3
// and 0.7 become 3 and 7). If those integers would sum above 2^62 they are
// instead rounded (ties to even, at least 1) to a total of 2^61. All share
// arithmetic is then exact integer arithmetic on u_i and U = Σu_i, in 128
// bits where needed, so two machines cannot disagree. Proportional weights
// reduce to the same integers and give the same run.
//
// # Exact shares
//
// Component i's quota is q_i = B·u_i/U. Write q_v = F_v + m_v/U (0 ≤ m_v < U)
// for a component or a group v of consecutive components. At every step, v
// gets F_v slots plus one extra slot when its extra indicator e_v(s) is 1;
// X_v(k) = Σ_{s<k} e_v(s) counts v's extras over the first k steps.
//
// The components are the leaves of a balanced binary tree (a node over
// components [lo, hi) splits at lo + ⌈(hi-lo)/2⌉). The root holds all
// components: q = B, so it never has extras. A node v splits its extras
// between its children l and r in one of two ways, as m_l + m_r is m_v or
// m_v + U:
//
//   - m_l + m_r = m_v: the children's extras add up to v's, e_l + e_r = e_v.
//     X_l(k) = round(X_v(k)·m_l/m_v), X_r = X_v - X_l.
//   - m_l + m_r = m_v + U: the children's steps WITHOUT an extra add up to
//     v's, (1-e_l) + (1-e_r) = 1-e_v. With N_v(k) = k - X_v(k):
//     N_l(k) = round(N_v(k)·(U-m_l)/(U-m_v)), N_r = N_v - N_l.
//
// Here round(y) = ⌊y + 1/2⌋, computed exactly. The ratio in each rule is at
// most 1, so as the parent's counter rises by 0 or 1 the child's rises by 0
// or 1 and the sibling's by the rest: every step gives each component ⌊q_i⌋
// or ⌈q_i⌉ slots (exactly ⌊q_i⌋ = q_i when q_i is whole), and the counts sum
// to B. Each X_v(k) is a closed form in k, so the counts at step s,
// c_i(s) = F_i + X_i(s+1) - X_i(s), and the running total
// C_i(s) = F_i·(s+1) + X_i(s+1) cost O(#components) at any s: there is no
// history to replay. A component whose quota is below one sample per batch
// (F_i = 0) still appears, at its rate m_i/U.
//
// Drift bound. Let δ_v(k) = X_v(k) - k·m_v/U, so that C_i(s) - q_i·(s+1) =
// δ_i(s+1). At the root δ = 0. In the first rule, with ρ = m_l/m_v,
// X_l = ρ·X_v + ε with |ε| ≤ 1/2, hence δ_l = ρ·δ_v + ε and
// δ_r = (1-ρ)·δ_v - ε; the second rule is the same on N. So a child's drift
// is at most 1/2 more than its parent's, and a component at depth d drifts
// at most d/2:
//
//	|C_i(s) - q_i·(s+1)| ≤ ⌈log₂ n⌉/2    for every step s   (DriftBound(n))
//
// that is 1/2 for two components (the issue asks for < 1), 1 for three or
// four, 3/2 for up to eight. The rule is stateless and seeks in O(n); a rule
// that replays history could do a little better, which the contract
// deliberately does not buy.
//
// # Streams
//
// Component i is an endless stream of draws: draw k is epoch e = k div N_i,
// offset o = k mod N_i, and its row is π_{i,e}(o) for a keyed bijection
// π_{i,e} of [0, N_i), different for every epoch and component, computed and
// never materialized. Every row appears exactly once per epoch.
//
// The keyed bijection used throughout (perm.go) is, for n ≤ 64, a
// Fisher–Yates shuffle driven by the key, and for larger n an eight-round
// mixed-radix Feistel network on [0, a·b) ⊇ [0, n), a = 2^⌈k/2⌉ for k the bit
// length of n-1 and b = ⌈n/a⌉, restricted to [0, n) by cycle walking (needed
// with probability below 2/√n). Its rounds hash one half with a keyed
// multiply-shift and add it into the other (xor into the power-of-two half,
// addition mod b into the other). Eight rounds, not four: chi-square tests of
// the joint image of two points reject four rounds outright and six
// marginally. All keys derive from the seed by the splitmix64 finalizer, with
// a tag per use.
//
// π_{i,e} shuffles with locality, so that the serving layer reads each block
// about once per epoch:
//
//  1. Units. The component's blocks (Component.Blocks: row groups or clumps
//     of them) become units, consecutive row ranges in row order. With a
//     shuffle window W = Shuffle.BufferRows > 0: a block longer than
//     max(W, ⌈N/4096⌉) rows is cut into near-equal pieces no longer than
//     that (so a component stored as one huge row group still shuffles
//     across its whole length); other consecutive blocks are clumped until
//     a clump holds at least ⌈W/64⌉ rows, so a block of that many rows is a
//     unit by itself and a window holds at most about 64 units. With W = 0
//     the units are the blocks.
//  2. Lanes. A fixed seeded bijection σ of the M units (materialized once,
//     O(M)) deals them into r = min(M, 64) lanes of ⌊M/r⌋ or ⌈M/r⌉ units.
//  3. Epoch order of units. Round j of an epoch takes one unit from every
//     lane that has a j-th: lane ℓ contributes its unit (ρ_ℓ ± j) mod |ℓ|,
//     with a rotation ρ_ℓ and a direction drawn per epoch and lane; the
//     lanes appear in the round in a seeded order drawn per epoch and round
//     (Fisher–Yates). Concatenating the rounds' units gives the epoch's
//     position order. Fresh rotations and orders each epoch put every unit
//     at a uniform position and next to new units, yet the position of any
//     row is found in O(r·log M): the rows of rounds 0..j-1 are a sum of r
//     rotated ranges of prefix sums, so a position is located by an
//     interpolation search over rounds and a scan of one round. (A fully
//     random unit order per epoch would need the prefix sums of that order,
//     O(M) work per epoch; lanes trade a little of its randomness, namely
//     that units of one lane keep their cyclic order, for O(log M) seeks.)
//     With M ≤ 64 every unit is its own lane and the unit order is a fresh
//     uniform permutation every epoch.
//  4. Windows. The N positions are cut into nW = max(1, ⌊N/W⌋) windows of
//     ⌊N/nW⌋ or ⌈N/nW⌉ consecutive positions, so a window has L rows with
//     W ≤ L < 2W; window j's offsets map to its positions through a keyed
//     bijection of [0, L) drawn per epoch and window. With W = 0 rows keep
//     their position: block order only.
//
// Locality: the draws of one window are the rows of L consecutive positions,
// which touch at most t blocks, where t - 2 is the largest number of blocks
// whose sizes sum to at most L - 2; with blocks of at least b rows that is
// ⌊(L-2)/b⌋ + 2 (34 for N = 10^6 in blocks of 256 and the default window:
// "buffer_rows/256 + 2"). Because L ≥ W, any W consecutive draws lie in two
// adjacent windows, so they touch the blocks of at most 2·L_max consecutive
// positions: ⌊(2·L_max-2)/b⌋ + 2 (66 for the same component). A block that
// is not split lies in one window or straddles two adjacent ones, so a
// serving layer that keeps the blocks of the current and the next window
// reads every block once per epoch (121 of those 3,907 blocks straddle).
//
// Shuffle quality: the order of units over an epoch is as uncorrelated with
// row order as a uniformly random permutation of them. For N = 10^6 in
// blocks of 256 with the default window, the Spearman correlation between
// draw order and row has rms 0.016 over seeds (1/√3907 for a random order of
// its 3,907 blocks) and is tested below 0.05. A component of fewer than 2W
// rows, such as 9,412 rows in one row group, is a single window: its epoch
// order is a keyed pseudorandom permutation of all its rows (Spearman within
// ±0.012 in the tests, and every tenth of the epoch draws evenly from every
// tenth of the rows).
//
// Seek: the batch at step s costs O(n) for the shares, O(r·log M) plus the
// units of one window for each window it enters, and O(1) per sample,
// whatever s is: step 10^12 costs what step 0 costs.
//
// # Batches and ranks
//
// The batch at step s lists, in component order, component i's draws
// C_i(s-1) … C_i(s)-1 (where C_i(-1) = 0), and then puts the x-th of those B
// samples at position τ_s(x), τ_s a keyed bijection of [0, B) drawn per step.
// Rank r of W reads positions r, r+W, …; as τ_s is pseudorandom, every rank's
// slice is an unbiased sample of the batch. World size is not an input to
// anything else, so any W sees the same global batch.
//
// Run length: Spec.Steps if set, else ⌈Σ N_i / B⌉.
//
// # Run id
//
// RunID is the lowercase hex SHA-256 of this encoding, every integer a
// big-endian uint64 and every string its length then its bytes:
//
//	"weft/sampler/run", EncodingVersion, seed, B, steps (resolved),
//	buffer_rows, n, then per component: u_i (reduced weight), N_i,
//	the number of blocks, each block size (nil blocks encode as [N_i]),
//	identity
//
// World size, rank and step are not in it. EncodingVersion covers the
// algorithm as well as the encoding: any change that alters a batch bumps
// it, and the golden vectors in testdata/ make such a change visible.
package sampler
