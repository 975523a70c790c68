package sampler

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// maxWeightTotal bounds the sum of the reduced integer weights, so that every
// share computation fits in 128-bit integer arithmetic.
const maxWeightTotal = 1 << 62

// reduceWeights turns positive finite float64 weights into the integers u_i
// that define the shares (q_i = B·u_i/Σu). The reduction is exact and
// machine-independent:
//
//  1. Each weight is read as the shortest decimal that parses back to the
//     same float64 (what strconv, encoding/json and Python's repr print), so
//     0.3 means 3/10, not the binary fraction nearest to it.
//  2. The decimals are scaled to a common power of ten and divided by the
//     greatest common divisor: 0.3 and 0.7 become 3 and 7; 1 and 2.5 become
//     2 and 5.
//  3. Only if those integers sum above maxWeightTotal (weights with many
//     significant digits spread over many orders of magnitude) are they
//     rounded to the nearest integer of a total 2^61 (ties to even), with a
//     floor of 1, and divided by their gcd again. Each share then moves by
//     less than B·n/2^61 of a sample per batch.
//
// Weights proportional to each other therefore reduce to the same integers
// and give the same run.
func reduceWeights(ws []float64) ([]uint64, error) {
	type dec struct {
		digits *big.Int
		exp    int // value = digits · 10^exp
	}
	ds := make([]dec, len(ws))
	minExp := math.MaxInt
	for i, w := range ws {
		if !(w > 0) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("component %d: weight %v is not positive and finite: %w", i, w, ErrWeight)
		}
		s := strconv.FormatFloat(w, 'e', -1, 64) // d.ddde±x, shortest round trip
		mant, expPart, _ := strings.Cut(s, "e")
		e, err := strconv.Atoi(expPart)
		if err != nil {
			return nil, fmt.Errorf("component %d: weight %v: %w", i, w, ErrWeight)
		}
		intPart, frac, _ := strings.Cut(mant, ".")
		digits, ok := new(big.Int).SetString(intPart+frac, 10)
		if !ok {
			return nil, fmt.Errorf("component %d: weight %v: %w", i, w, ErrWeight)
		}
		ds[i] = dec{digits: digits, exp: e - len(frac)}
		minExp = min(minExp, ds[i].exp)
	}
	us := make([]*big.Int, len(ds))
	ten := big.NewInt(10)
	for i, d := range ds {
		scale := new(big.Int).Exp(ten, big.NewInt(int64(d.exp-minExp)), nil)
		us[i] = scale.Mul(scale, d.digits)
	}
	divideByGCD(us)
	total := sumBig(us)
	if total.Cmp(big.NewInt(maxWeightTotal)) > 0 {
		// u_i ← round(u_i · 2^61 / total), ties to even, at least 1.
		two61 := new(big.Int).Lsh(big.NewInt(1), 61)
		for i, u := range us {
			num := new(big.Int).Mul(u, two61)
			q, r := new(big.Int).QuoRem(num, total, new(big.Int))
			switch r.Lsh(r, 1).Cmp(total) {
			case 1:
				q.Add(q, big.NewInt(1))
			case 0:
				if q.Bit(0) == 1 {
					q.Add(q, big.NewInt(1))
				}
			}
			if q.Sign() == 0 {
				q.SetInt64(1)
			}
			us[i] = q
		}
		divideByGCD(us)
	}
	out := make([]uint64, len(us))
	for i, u := range us {
		out[i] = u.Uint64()
	}
	return out, nil
}

func divideByGCD(us []*big.Int) {
	g := new(big.Int).Set(us[0])
	for _, u := range us[1:] {
		g.GCD(nil, nil, g, u)
	}
	if g.Cmp(big.NewInt(1)) == 0 {
		return
	}
	for _, u := range us {
		u.Quo(u, g)
	}
}

func sumBig(us []*big.Int) *big.Int {
	t := new(big.Int)
	for _, u := range us {
		t.Add(t, u)
	}
	return t
}
