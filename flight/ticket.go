package flight

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/weftdata/weft/versions"
)

// Ticket layout, all versions:
//
//	"weft" | version (1 byte) | kind (1 byte) | payload | checksum (8 bytes)
//
// The checksum is the first 8 bytes of the SHA-256 of everything before it.
// Version 1 payloads are JSON objects, one shape per kind. New kinds (rank
// streams of a run) get new kind bytes; a change to an existing payload gets
// a new version, and old versions stay readable.
const (
	ticketMagic    = "weft"
	ticketVersion  = 1
	ticketSumLen   = 8
	ticketHeadLen  = len(ticketMagic) + 2
	maxTicketBytes = 64 << 10
)

// ticketKind says what a ticket streams.
type ticketKind byte

const (
	kindScan ticketKind = 1 // a range of row groups of a table version
	kindRank ticketKind = 2 // one rank's steps of a run
)

// scanTicket names a range of blocks of a pinned table version.
type scanTicket struct {
	Project versions.ProjectName `json:"p"`
	Commit  versions.CommitID    `json:"c"`
	Table   versions.TableName   `json:"t"`
	Columns []string             `json:"cols,omitempty"` // nil: all columns
	First   int                  `json:"b0"`             // first block
	End     int                  `json:"b1"`             // one past the last block
	Rows    int64                `json:"n"`              // rows in [First, End), checked when served
}

func encodeTicket(kind ticketKind, payload any) ([]byte, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode ticket: %w", err)
	}
	t := make([]byte, 0, ticketHeadLen+len(body)+ticketSumLen)
	t = append(t, ticketMagic...)
	t = append(t, ticketVersion, byte(kind))
	t = append(t, body...)
	sum := sha256.Sum256(t)
	return append(t, sum[:ticketSumLen]...), nil
}

// decodeTicket checks a ticket's frame and returns its kind and payload.
func decodeTicket(t []byte) (ticketKind, []byte, error) {
	switch {
	case len(t) > maxTicketBytes:
		return 0, nil, fmt.Errorf("%w: %d bytes is longer than any ticket this server issues", ErrBadTicket, len(t))
	case len(t) < ticketHeadLen+ticketSumLen || string(t[:len(ticketMagic)]) != ticketMagic:
		return 0, nil, fmt.Errorf("%w: not a Weft ticket; pass the ticket of an endpoint of GetFlightInfo unchanged", ErrBadTicket)
	}
	body, sum := t[:len(t)-ticketSumLen], t[len(t)-ticketSumLen:]
	want := sha256.Sum256(body)
	if !bytes.Equal(sum, want[:ticketSumLen]) {
		return 0, nil, fmt.Errorf("%w: checksum mismatch: the ticket was cut short or altered; pass it unchanged", ErrBadTicket)
	}
	if v := t[len(ticketMagic)]; v != ticketVersion {
		return 0, nil, fmt.Errorf("%w: ticket format version %d is not known to this server (it reads version %d)", ErrBadTicket, v, ticketVersion)
	}
	return ticketKind(t[len(ticketMagic)+1]), body[ticketHeadLen:], nil
}

// decodeScanTicket parses and validates a scan ticket's payload.
func decodeScanTicket(payload []byte) (*scanTicket, error) {
	var st scanTicket
	if err := decode(ErrBadTicket, "scan ticket payload", payload, &st); err != nil {
		return nil, err
	}
	if _, err := versions.ParseProjectName(string(st.Project)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	if _, err := versions.ParseTableName(string(st.Table)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	if _, err := versions.ParseCommitID(string(st.Commit)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	if st.First < 0 || st.End < st.First || st.Rows < 0 {
		return nil, fmt.Errorf("%w: scan ticket names blocks [%d, %d) and %d rows", ErrBadTicket, st.First, st.End, st.Rows)
	}
	return &st, nil
}
