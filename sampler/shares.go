package sampler

import (
	"math/bits"
)

// shares computes, for every step, how many of the B slots each component
// gets. See "Exact shares" in doc.go for the rule and the proof of its bounds.
//
// With U = Σu and the exact quota q_v = B·u_v/U of a node v (a component, or
// a group of consecutive components), write q_v = F_v + m_v/U with
// 0 ≤ m_v < U. Node v gets F_v slots in every step, plus one extra slot at the
// steps where its extra indicator is 1; X_v(k) counts the extras over the first
// k steps. The root (all components) has q = B exactly, so X_root = 0. The
// components form a balanced binary tree; a node's extras are split between
// its two children by rounding a proportional share of a counter, which is a
// closed form in k, so any step is computed directly.
type shares struct {
	batch uint64
	total uint64 // U
	nodes []shareNode
	leaf  []int32 // node index of each component
}

type shareNode struct {
	whole       uint64 // F_v = ⌊B·u_v/U⌋
	frac        uint64 // m_v = B·u_v mod U
	left, right int32  // children, -1 for a leaf
	overflow    bool   // m_left + m_right = m_v + U (else = m_v)
	depth       int32
}

func newShares(batch uint64, u []uint64) shares {
	var total uint64
	for _, x := range u {
		total += x
	}
	sh := shares{batch: batch, total: total, leaf: make([]int32, len(u))}
	sh.nodes = make([]shareNode, 0, 2*len(u)-1)
	prefix := make([]uint64, len(u)+1)
	for i, x := range u {
		prefix[i+1] = prefix[i] + x
	}
	var build func(lo, hi int, depth int32) int32
	build = func(lo, hi int, depth int32) int32 {
		idx := int32(len(sh.nodes))
		w := prefix[hi] - prefix[lo]
		h, l := bits.Mul64(batch, w)
		q, r := bits.Div64(h, l, total)
		sh.nodes = append(sh.nodes, shareNode{whole: q, frac: r, left: -1, right: -1, depth: depth})
		if hi-lo == 1 {
			sh.leaf[lo] = idx
			return idx
		}
		mid := lo + (hi-lo+1)/2
		left := build(lo, mid, depth+1)
		right := build(mid, hi, depth+1)
		n := &sh.nodes[idx]
		n.left, n.right = left, right
		n.overflow = sh.nodes[left].frac+sh.nodes[right].frac != n.frac
		return idx
	}
	build(0, len(u), 0)
	return sh
}

// roundMulDiv returns ⌊x·a/b + 1/2⌋ for a ≤ b, 0 < b < 2^63.
func roundMulDiv(x, a, b uint64) uint64 {
	hi, lo := bits.Mul64(x, 2*a)
	lo, c := bits.Add64(lo, b, 0)
	hi += c
	q, _ := bits.Div64(hi, lo, 2*b)
	return q
}

// extras fills xs[v] = X_v(k), the extra slots of node v over the first k
// steps, for every node. Nodes are stored parents first.
func (sh *shares) extras(k uint64, xs []uint64) {
	xs[0] = 0
	for v := range sh.nodes {
		n := &sh.nodes[v]
		if n.left < 0 {
			continue
		}
		l := &sh.nodes[n.left]
		xv := xs[v]
		if !n.overflow {
			// Extras of the children add up to the node's: the left child
			// gets the rounded fraction m_l/m_v of the node's extras.
			var xl uint64
			if n.frac > 0 {
				xl = roundMulDiv(xv, l.frac, n.frac)
			}
			xs[n.left], xs[n.right] = xl, xv-xl
			continue
		}
		// The children's fractions overflow one slot: count steps WITHOUT an
		// extra instead. Those add up: (1-e_l) + (1-e_r) = 1 - e_v, and the
		// left child gets the rounded fraction (U-m_l)/(U-m_v) of them.
		nv := k - xv
		nl := roundMulDiv(nv, sh.total-l.frac, sh.total-n.frac)
		xs[n.left], xs[n.right] = k-nl, k-(nv-nl)
	}
}

// DriftBound is the documented bound on how far a component's running total
// strays from its exact quota in a run with the given number of components:
// |C_i(s) - q_i·(s+1)| ≤ DriftBound(n) for every component i and step s.
// It is ⌈log₂ n⌉/2: 0 for one component, 1/2 for two, 1 for three or four,
// 3/2 for up to eight.
func DriftBound(components int) float64 {
	if components <= 1 {
		return 0
	}
	return float64(bits.Len(uint(components-1))) / 2
}
