package sampler

import "math/bits"

// This file holds the two primitives every random choice in the package is
// built from: a 64-bit mixer that derives keys, and a keyed bijection of
// [0, n) that is computed, never materialized. Both are part of the
// determinism contract: changing either changes every batch, so it must bump
// EncodingVersion.

// golden is 2^64 divided by the golden ratio, the usual odd additive constant.
const golden = 0x9e3779b97f4a7c15

// mix is the splitmix64 finalizer: a bijection of uint64 with full avalanche.
func mix(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}

// derive folds words into key k: h = k; for each word w, h = mix(h ^ mix(w + golden)).
// Distinct tags (below) keep the uses of one seed apart.
func derive(k uint64, words ...uint64) uint64 {
	h := k
	for _, w := range words {
		h = mix(h ^ mix(w+golden))
	}
	return h
}

// Tags for derive, one per use of a key. Their values are part of the
// encoding.
const (
	tagPositions uint64 = iota + 1 // seed → per-step order of the batch
	tagStream                      // seed, component → the component's key
	tagUnits                       // component key → fixed order of units (σ)
	tagEpoch                       // component key, epoch → epoch key
	tagLane                        // epoch key, lane → rotation and direction
	tagRound                       // epoch key, round → order of lanes in the round
	tagWindow                      // epoch key, window → order of rows in the window
	tagFeistel                     // key → round keys of a bijection
)

// feistelRounds is the number of rounds of the bijection. Eight rounds of a
// multiply-shift round function make the joint distribution of the images of
// two points indistinguishable from uniform in chi-square tests over domains
// from 33 up; four rounds fail those tests badly and six marginally.
const feistelRounds = 8

// smallPerm: domains up to this size are shuffled exactly by Fisher–Yates
// instead, where a Feistel network on a few bits is far from uniform.
const smallPerm = 64

// perm is a keyed bijection of [0, n), computed, never materialized.
//
// For n > smallPerm it is a mixed-radix Feistel network, restricted to
// [0, n) by cycle walking. With k the number of bits of n-1, the low part of
// x has j = ⌈k/2⌉ bits (a = 2^j values) and the high part ranges over
// [0, b), b = ⌈n/a⌉, so the network permutes [0, a·b) ⊇ [0, n) and
// a·b - n < a ≈ √n: the walk (apply again until the value falls below n) is
// rarely needed. Round i has keys c_i = mix(K + (2i+1)·golden) and odd
// d_i = mix(K + (2i+2)·golden) | 1, K = derive(key, tagFeistel), and
// h_i(v) = (v ^ c_i)·d_i mod 2^64 (multiply-shift hashing: its top bits
// depend on every bit of v):
//
//	even i: lo ^= h_i(hi) >> (64-j)             (the top j bits)
//	odd i:  hi = (hi + ⌊h_i(lo)·b / 2^64⌋) mod b
//
// Each round is a bijection whatever a and b are.
//
// For 2 ≤ n ≤ smallPerm it is the Fisher–Yates shuffle that, for i from n-1
// down to 1, swaps slot i with slot ⌊r_t·(i+1) / 2^32⌋, where t = n-1-i and
// r_t is the high (t even) or low (t odd) 32 bits of mix(key + (⌊t/2⌋+1)·golden).
// The zero perm and any perm with n ≤ 1 are the identity.
type perm struct {
	n     uint64
	shift uint   // j
	mask  uint64 // a-1
	b     uint64
	c, d  [feistelRounds]uint64
	fwd   [smallPerm]uint8 // n ≤ smallPerm: the images
	inv   [smallPerm]uint8 // n ≤ smallPerm: the preimages
}

// newPerm returns the bijection of [0, n) for key.
func newPerm(key, n uint64) perm {
	p := perm{n: n}
	if n <= 1 {
		return p
	}
	if n <= smallPerm {
		for i := range n {
			p.fwd[i] = uint8(i)
		}
		var u uint64
		for i := n - 1; i > 0; i-- {
			// One 64-bit draw serves two swaps: its high half, then its low.
			t := n - 1 - i
			if t%2 == 0 {
				u = mix(key + (t/2+1)*golden)
			} else {
				u <<= 32
			}
			j := (u >> 32) * (i + 1) >> 32
			p.fwd[i], p.fwd[j] = p.fwd[j], p.fwd[i]
		}
		for i := range n {
			p.inv[p.fwd[i]] = uint8(i)
		}
		return p
	}
	k := uint(bits.Len64(n - 1))
	p.shift = (k + 1) / 2
	p.mask = 1<<p.shift - 1
	p.b = (n + p.mask) >> p.shift
	base := derive(key, tagFeistel)
	for i := range p.c {
		p.c[i] = mix(base + uint64(2*i+1)*golden)
		p.d[i] = mix(base+uint64(2*i+2)*golden) | 1
	}
	return p
}

func (p *perm) round(i int, v uint64) uint64 { return (v ^ p.c[i]) * p.d[i] }

// addMod returns (x + ⌊h·b/2^64⌋) mod b for x < b.
func addMod(x, h, b uint64) uint64 {
	d, _ := bits.Mul64(h, b)
	x += d
	if x >= b {
		x -= b
	}
	return x
}

// subMod undoes addMod.
func subMod(x, h, b uint64) uint64 {
	d, _ := bits.Mul64(h, b)
	if x < d {
		x += b
	}
	return x - d
}

func (p *perm) forward(x uint64) uint64 {
	hi, lo := x>>p.shift, x&p.mask
	for i := 0; i < feistelRounds; i += 2 {
		lo ^= p.round(i, hi) >> (64 - p.shift)
		hi = addMod(hi, p.round(i+1, lo), p.b)
	}
	return hi<<p.shift | lo
}

func (p *perm) backward(x uint64) uint64 {
	hi, lo := x>>p.shift, x&p.mask
	for i := feistelRounds - 2; i >= 0; i -= 2 {
		hi = subMod(hi, p.round(i+1, lo), p.b)
		lo ^= p.round(i, hi) >> (64 - p.shift)
	}
	return hi<<p.shift | lo
}

// apply maps x in [0, n) to its image in [0, n).
func (p *perm) apply(x uint64) uint64 {
	if p.n <= smallPerm {
		if p.n <= 1 {
			return x
		}
		return uint64(p.fwd[x])
	}
	for {
		x = p.forward(x)
		if x < p.n {
			return x
		}
	}
}

// invert is the inverse of apply.
func (p *perm) invert(y uint64) uint64 {
	if p.n <= smallPerm {
		if p.n <= 1 {
			return y
		}
		return uint64(p.inv[y])
	}
	for {
		y = p.backward(y)
		if y < p.n {
			return y
		}
	}
}
