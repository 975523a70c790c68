package versions

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// identity builds the canonical encoding that content ids hash:
//
//	"weft:" kind ":" version(uvarint)  then, for each field in ascending key order,
//	len(key) key  len(value) value     (lengths as uvarint)
//
// Integers are encoded as 8 bytes big-endian, strings as their UTF-8 bytes.
// Fields must be added in ascending key order; nested lists are flattened by
// the caller into numbered keys, each itself length-prefixed, so the encoding
// is unambiguous. A change to what is hashed must bump the kind's version.
type identity struct {
	buf     []byte
	lastKey string
}

func newIdentity(kind string, version uint64) *identity {
	id := &identity{}
	id.buf = append(id.buf, "weft:"...)
	id.buf = append(id.buf, kind...)
	id.buf = append(id.buf, ':')
	id.buf = binary.AppendUvarint(id.buf, version)
	return id
}

func (id *identity) field(key string, value []byte) {
	if key <= id.lastKey && id.lastKey != "" {
		panic("versions: identity fields out of order: " + id.lastKey + " >= " + key)
	}
	id.lastKey = key
	id.buf = binary.AppendUvarint(id.buf, uint64(len(key)))
	id.buf = append(id.buf, key...)
	id.buf = binary.AppendUvarint(id.buf, uint64(len(value)))
	id.buf = append(id.buf, value...)
}

func (id *identity) str(key, value string) { id.field(key, []byte(value)) }

func (id *identity) int(key string, v int64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	id.field(key, b[:])
}

// sub is a nested encoding (a list element or map entry), added as one field.
func (id *identity) sub(key string, child *identity) { id.field(key, child.buf) }

func (id *identity) sum() string {
	h := sha256.Sum256(id.buf)
	return hex.EncodeToString(h[:])
}
