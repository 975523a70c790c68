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
	tagRound0                      // first round key of a bijection
)

// feistelRounds is the number of rounds of the bijection. Six rounds of a
// full-avalanche round function are well past the four Luby–Rackoff need for
// a pseudorandom permutation; the cost is one multiply-xorshift pair a round.
const feistelRounds = 6

// perm is a keyed bijection of [0, n): a Feistel network on the k-bit words,
// where k is the least number of bits that holds n-1, restricted to [0, n) by
// cycle walking (apply the network again until the value falls below n; with
// n > 2^(k-1) that takes fewer than two tries on average).
//
// The word is split into a high part of ⌈k/2⌉ bits and a low part of ⌊k/2⌋
// bits; round i xors a keyed hash of one part into the other, alternating, so
// every round is a bijection whatever the split. The zero perm and any perm
// with n ≤ 1 are the identity.
type perm struct {
	n       uint64
	lowBits uint
	maskHi  uint64
	maskLo  uint64
	keys    [feistelRounds]uint64
}

// newPerm returns the bijection of [0, n) for key.
func newPerm(key, n uint64) perm {
	p := perm{n: n}
	if n <= 1 {
		return p
	}
	k := uint(bits.Len64(n - 1))
	p.lowBits = k / 2
	p.maskLo = 1<<p.lowBits - 1
	p.maskHi = 1<<(k-p.lowBits) - 1
	for i := range p.keys {
		p.keys[i] = derive(key, tagRound0+uint64(i))
	}
	return p
}

func (p *perm) forward(x uint64) uint64 {
	hi, lo := x>>p.lowBits, x&p.maskLo
	for i := 0; i < feistelRounds; i += 2 {
		hi ^= mix(p.keys[i]^lo) & p.maskHi
		lo ^= mix(p.keys[i+1]^hi) & p.maskLo
	}
	return hi<<p.lowBits | lo
}

func (p *perm) backward(x uint64) uint64 {
	hi, lo := x>>p.lowBits, x&p.maskLo
	for i := feistelRounds - 2; i >= 0; i -= 2 {
		lo ^= mix(p.keys[i+1]^hi) & p.maskLo
		hi ^= mix(p.keys[i]^lo) & p.maskHi
	}
	return hi<<p.lowBits | lo
}

// apply maps x in [0, n) to its image in [0, n).
func (p *perm) apply(x uint64) uint64 {
	if p.n <= 1 {
		return x
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
	if p.n <= 1 {
		return y
	}
	for {
		y = p.backward(y)
		if y < p.n {
			return y
		}
	}
}
