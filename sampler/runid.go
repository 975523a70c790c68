package sampler

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// EncodingVersion versions both the run id encoding and the algorithm that
// turns a run into batches. Any change to either (the share rule, a
// permutation, a key derivation, a layout constant) must bump it; the golden
// vectors in testdata/ catch changes that forget to.
const EncodingVersion = 1

// runMagic opens the encoding, so a run id can never collide with another
// kind of Weft id.
const runMagic = "weft/sampler/run"

// runID hashes the canonical encoding of the run's semantic fields (see
// doc.go, "Run id"). World size, rank and step are not among them.
func runID(s *Spec, weights []uint64, steps int64) string {
	e := encoder{h: sha256.New()}
	e.str(runMagic)
	e.u64(EncodingVersion)
	e.u64(s.Seed)
	e.u64(uint64(s.BatchSize))
	e.u64(uint64(steps))
	e.u64(uint64(s.Shuffle.BufferRows))
	e.u64(uint64(len(s.Components)))
	for i, c := range s.Components {
		e.u64(weights[i])
		e.u64(uint64(c.Rows))
		if len(c.Blocks) == 0 {
			e.u64(1)
			e.u64(uint64(c.Rows))
		} else {
			e.u64(uint64(len(c.Blocks)))
			for _, b := range c.Blocks {
				e.u64(uint64(b))
			}
		}
		e.str(c.Identity)
	}
	return hex.EncodeToString(e.sum())
}

// encoder writes big-endian uint64s and length-prefixed strings to a hash,
// buffered.
type encoder struct {
	h   hash.Hash
	buf []byte
}

func (e *encoder) flush() {
	e.h.Write(e.buf)
	e.buf = e.buf[:0]
}

func (e *encoder) u64(v uint64) {
	e.buf = binary.BigEndian.AppendUint64(e.buf, v)
	if len(e.buf) >= 4096 {
		e.flush()
	}
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.flush()
	e.h.Write([]byte(s))
}

func (e *encoder) sum() []byte {
	e.flush()
	return e.h.Sum(nil)
}
