package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/versions"
)

// Ticket layout: PAYLOAD || KID (4 bytes, big-endian) || MAC (32 bytes),
// MAC = HMAC-SHA256(key KID, "weft-ticket:1" || KID || PAYLOAD).
const (
	kidLen         = 4
	macLen         = sha256.Size
	TicketOverhead = kidLen + macLen
	ticketDomain   = "weft-ticket:1"
	keyBytes       = 32
)

// TicketKeyFormat is the format version of stored ticket keys.
const TicketKeyFormat = 1

// TicketKey is a stored ticket-signing key (auth/ticket-keys/KID, KID as
// 10 decimal digits). Keys are created with PutIfAbsent and never changed.
type TicketKey struct {
	Format  int       `json:"format"`
	ID      uint32    `json:"id"`
	Alg     string    `json:"alg"` // "HMAC-SHA256"
	Secret  []byte    `json:"secret"`
	Created time.Time `json:"created"`
}

func kidKey(id uint32) string { return versions.TicketKeyKey(fmt.Sprintf("%010d", id)) }

// SignerOptions configure a Signer.
type SignerOptions struct {
	// Refresh is how often the Signer re-reads the key list: a rotated key
	// starts signing, and a removed key stops verifying, within Refresh.
	// A ticket naming a key the Signer does not know triggers a re-read at
	// once (at most once per MinRefresh).
	Refresh, MinRefresh time.Duration
	Now                 func() time.Time
	Logger              *slog.Logger
}

// DefaultSignerOptions: re-read keys every 30 s, on demand at most every second.
func DefaultSignerOptions() SignerOptions {
	return SignerOptions{Refresh: 30 * time.Second, MinRefresh: time.Second, Now: time.Now}
}

// Validate reports an unusable option.
func (o SignerOptions) Validate() error {
	if o.Refresh <= 0 || o.MinRefresh < 0 || o.Now == nil {
		return fmt.Errorf("%w: signer options need Refresh > 0, MinRefresh >= 0 and a clock", ErrInvalid)
	}
	return nil
}

// Signer signs and verifies Flight tickets with the HMAC keys stored in the
// bucket, so every server over one bucket accepts the tickets of every
// other. Safe for concurrent use.
type Signer struct {
	b    bucket.Bucket
	opts SignerOptions
	log  *slog.Logger

	mu struct {
		sync.Mutex
		keys   map[uint32][]byte
		newest uint32
		loaded time.Time
		missed time.Time // last re-read for an unknown key id
	}
}

// NewSigner loads the ticket keys from b, creating the first one (id 1)
// if there is none. Servers starting at once race to create it with
// PutIfAbsent; the losers read the winner's key, so all agree.
func NewSigner(ctx context.Context, b bucket.Bucket, opts SignerOptions) (*Signer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Signer{b: b, opts: opts, log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	keys, err := ListTicketKeys(ctx, b)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		if _, err := createTicketKey(ctx, b, 1, opts.Now()); err != nil && !errors.Is(err, bucket.ErrExists) {
			return nil, err
		}
		if keys, err = ListTicketKeys(ctx, b); err != nil {
			return nil, err
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("%w: ticket key 1 vanished right after it was created", ErrCorrupt)
		}
	}
	s.install(keys)
	return s, nil
}

func (s *Signer) install(keys []*TicketKey) {
	m := make(map[uint32][]byte, len(keys))
	var newest uint32
	for _, k := range keys {
		m[k.ID] = k.Secret
		newest = max(newest, k.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.keys, s.mu.newest, s.mu.loaded = m, newest, s.opts.Now()
}

// refresh re-reads the keys if they are older than age. A failed read
// keeps the old keys (logged): tickets keep working while the bucket
// hiccups.
func (s *Signer) refresh(ctx context.Context, age time.Duration) {
	s.mu.Lock()
	stale := s.opts.Now().Sub(s.mu.loaded) >= age
	s.mu.Unlock()
	if !stale {
		return
	}
	keys, err := ListTicketKeys(ctx, s.b)
	if err != nil || len(keys) == 0 {
		s.log.Warn("could not re-read the ticket keys; using the ones loaded before", "err", err, "keys", len(keys))
		s.mu.Lock()
		s.mu.loaded = s.opts.Now() // do not retry on every call
		s.mu.Unlock()
		return
	}
	s.install(keys)
}

// Sign returns payload with the newest key's id and MAC appended.
func (s *Signer) Sign(ctx context.Context, payload []byte) []byte {
	s.refresh(ctx, s.opts.Refresh)
	s.mu.Lock()
	kid, key := s.mu.newest, s.mu.keys[s.mu.newest]
	s.mu.Unlock()
	out := make([]byte, 0, len(payload)+TicketOverhead)
	out = append(out, payload...)
	out = binary.BigEndian.AppendUint32(out, kid)
	return append(out, mac(key, kid, payload)...)
}

func mac(key []byte, kid uint32, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(ticketDomain))
	var k [kidLen]byte
	binary.BigEndian.PutUint32(k[:], kid)
	h.Write(k[:])
	h.Write(payload)
	return h.Sum(nil)
}

// Verify checks a ticket made by Sign (by any server over the bucket) and
// returns its payload. A ticket cut short, edited in any byte, or signed
// with a key the bucket does not hold (never, or no longer: removed) is an
// error wrapping ErrBadTicket (errdefs.ErrInvalidArgument). The payload is
// a sub-slice of ticket.
func (s *Signer) Verify(ctx context.Context, ticket []byte) ([]byte, error) {
	if len(ticket) < TicketOverhead {
		return nil, fmt.Errorf("%w: %d bytes is too short to be a ticket; pass tickets exactly as GetFlightInfo returned them", ErrBadTicket, len(ticket))
	}
	n := len(ticket) - TicketOverhead
	payload, kid, sum := ticket[:n], binary.BigEndian.Uint32(ticket[n:n+kidLen]), ticket[n+kidLen:]
	s.refresh(ctx, s.opts.Refresh)
	key := s.key(kid)
	if key == nil && s.mayReread() {
		s.refresh(ctx, 0) // perhaps rotated meanwhile
		key = s.key(kid)
	}
	if key == nil || !hmac.Equal(sum, mac(key, kid, payload)) {
		return nil, fmt.Errorf("%w: it was altered, or not issued by a server of this store (or its key was removed); get a fresh ticket from GetFlightInfo", ErrBadTicket)
	}
	return payload, nil
}

// mayReread rate-limits the re-reads for unknown key ids (forged tickets
// must not turn into bucket listings) to one per MinRefresh.
func (s *Signer) mayReread() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if !s.mu.missed.IsZero() && now.Sub(s.mu.missed) < s.opts.MinRefresh {
		return false
	}
	s.mu.missed = now
	return true
}

func (s *Signer) key(kid uint32) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.keys[kid]
}

// ListTicketKeys returns the stored ticket keys, oldest (lowest id) first.
func ListTicketKeys(ctx context.Context, b bucket.Bucket) ([]*TicketKey, error) {
	var out []*TicketKey
	for info, err := range b.List(ctx, versions.TicketKeyPrefix) {
		if err != nil {
			return nil, fmt.Errorf("list ticket keys: %w", err)
		}
		name := strings.TrimPrefix(info.Key, versions.TicketKeyPrefix)
		id, perr := strconv.ParseUint(name, 10, 32)
		if perr != nil || kidKey(uint32(id)) != info.Key {
			return nil, fmt.Errorf("%w: unexpected object %s among the ticket keys", ErrCorrupt, info.Key)
		}
		data, _, err := getSmall(ctx, b, info.Key)
		if errors.Is(err, bucket.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read ticket key %d: %w", id, err)
		}
		var k TicketKey
		if err := json.Unmarshal(data, &k); err != nil {
			return nil, fmt.Errorf("%w: ticket key %d: %w", ErrCorrupt, id, err)
		}
		if k.Format != TicketKeyFormat || k.ID != uint32(id) || k.Alg != "HMAC-SHA256" || len(k.Secret) != keyBytes {
			return nil, fmt.Errorf("%w: ticket key %d is not a format-%d HMAC-SHA256 key with id %d (upgrade Weft?)", ErrCorrupt, id, TicketKeyFormat, id)
		}
		out = append(out, &k)
	}
	return out, nil
}

func createTicketKey(ctx context.Context, b bucket.Bucket, id uint32, now time.Time) (*TicketKey, error) {
	secret := make([]byte, keyBytes)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("ticket key: %w", err)
	}
	k := &TicketKey{Format: TicketKeyFormat, ID: id, Alg: "HMAC-SHA256", Secret: secret, Created: now.UTC()}
	data, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("encode ticket key: %w", err)
	}
	if _, err := b.PutIfAbsent(ctx, kidKey(id), data); err != nil {
		return nil, fmt.Errorf("store ticket key %d: %w", id, err)
	}
	return k, nil
}

// RotateTicketKey adds a key with the next id. Servers sign with it within
// their SignerOptions.Refresh; tickets signed with older keys keep
// verifying until those keys are removed (RemoveTicketKey). Two concurrent
// rotations may both add a key (ids n+1 and n+2); that is harmless.
func RotateTicketKey(ctx context.Context, b bucket.Bucket, now time.Time) (*TicketKey, error) {
	for {
		keys, err := ListTicketKeys(ctx, b)
		if err != nil {
			return nil, err
		}
		var next uint32 = 1
		if len(keys) > 0 {
			next = keys[len(keys)-1].ID + 1
		}
		k, err := createTicketKey(ctx, b, next, now)
		if errors.Is(err, bucket.ErrExists) {
			continue // another rotation took that id: take the next
		}
		return k, err
	}
}

// RemoveTicketKey deletes key id, so tickets signed with it stop verifying
// (within the servers' Refresh). Removing the newest key is refused: rotate
// first, wait for the servers to pick the new key up, then remove the old.
func RemoveTicketKey(ctx context.Context, b bucket.Bucket, id uint32) error {
	keys, err := ListTicketKeys(ctx, b)
	if err != nil {
		return err
	}
	for i, k := range keys {
		if k.ID != id {
			continue
		}
		if i == len(keys)-1 {
			return fmt.Errorf("%w: ticket key %d is the newest, which servers sign with; rotate first ('flightd admin ticket-key rotate'), then remove it", ErrInvalid, id)
		}
		if err := b.Delete(ctx, kidKey(id)); err != nil {
			return fmt.Errorf("remove ticket key %d: %w", id, err)
		}
		return nil
	}
	return fmt.Errorf("%w: no ticket key %d (see 'flightd admin ticket-key list')", ErrKeyNotFound, id)
}

// getSmall reads a token record or ticket key: objects this package
// writes with PutIfAbsent, so at most bucket.MaxConditionalSize bytes. A
// larger one at such a key (another tool's, a damaged one) is ErrCorrupt
// and is not read into memory.
func getSmall(ctx context.Context, b bucket.Bucket, key string) ([]byte, bucket.ObjectInfo, error) {
	data, info, err := bucket.GetSmall(ctx, b, key, bucket.MaxConditionalSize)
	if errors.Is(err, bucket.ErrObjectTooLarge) {
		return nil, info, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return data, info, err
}
