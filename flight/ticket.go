package flight

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weftdata/weft/versions"
)

// Ticket layout, version 2 (docs/flight.md, "Tickets"):
//
//	"weft" | version (1 byte) | kind (1 byte) | payload | key id (4 bytes) | HMAC-SHA256 (32 bytes)
//
// The last 36 bytes are auth.Signer's signature over everything before
// them, with a key shared through the bucket: DoGet verifies it before it
// reads anything else, so a ticket edited in any byte, minted without the
// key, or issued over another store is refused. Version 2 payloads are
// JSON objects, one shape per kind. New kinds get new kind bytes; a change
// to an existing payload gets a new version. Version 1 tickets (checksummed,
// not signed) are no longer accepted: clients plan again (GetFlightInfo).
const (
	ticketMagic    = "weft"
	ticketVersion  = 2
	ticketHeadLen  = len(ticketMagic) + 2
	maxTicketBytes = 64 << 10
)

// ticketKind says what a ticket streams.
type ticketKind byte

const (
	kindScan ticketKind = 1 // a range of row groups of a table version
	kindRank ticketKind = 2 // one rank's steps of a run
	// kindWindowScan: a row range of a windowed scan of a table version.
	kindWindowScan ticketKind = 3
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
	// Filtered and sharded scans: the filter's text, and (Ranged) the
	// ordinal range [Lo, Hi) of the rows to send;
	// Matches (balanced shards) is the number of matching rows in it,
	// checked when served.
	Filter  string `json:"f,omitempty"`
	Ranged  bool   `json:"rr,omitempty"`
	Lo      int64  `json:"r0,omitempty"`
	Hi      int64  `json:"r1,omitempty"`
	Matches *int64 `json:"m,omitempty"`
}

// encodeTicket frames and signs a ticket.
func (s *Service) encodeTicket(ctx context.Context, kind ticketKind, payload any) ([]byte, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode ticket: %w", err)
	}
	t := make([]byte, 0, ticketHeadLen+len(body))
	t = append(t, ticketMagic...)
	t = append(t, ticketVersion, byte(kind))
	t = append(t, body...)
	return s.signer.Sign(ctx, t), nil
}

// decodeTicket verifies a ticket's signature, then checks its frame, and
// returns its kind and payload.
func (s *Service) decodeTicket(ctx context.Context, t []byte) (ticketKind, []byte, error) {
	if len(t) > maxTicketBytes {
		return 0, nil, fmt.Errorf("%w: %d bytes is longer than any ticket this server issues; pass the ticket of an endpoint of GetFlightInfo unchanged", ErrBadTicket, len(t))
	}
	body, err := s.signer.Verify(ctx, t)
	if err != nil {
		return 0, nil, kindError{kind: ErrBadTicket, err: err}
	}
	switch {
	case len(body) < ticketHeadLen || string(body[:len(ticketMagic)]) != ticketMagic:
		return 0, nil, fmt.Errorf("%w: not a Weft ticket; pass the ticket of an endpoint of GetFlightInfo unchanged", ErrBadTicket)
	case body[len(ticketMagic)] != ticketVersion:
		return 0, nil, fmt.Errorf("%w: ticket format version %d is not known to this server (it reads version %d); get a new ticket from GetFlightInfo", ErrBadTicket, body[len(ticketMagic)], ticketVersion)
	}
	kind, payload := ticketKind(body[len(ticketMagic)+1]), body[ticketHeadLen:]
	if err := checkTicketFields(kind, payload); err != nil {
		return 0, nil, err
	}
	return kind, payload, nil
}

// requiredTicketFields are the fields a payload of kind must have: left
// out, a number would decode as 0 and name another block, rank or step.
// Every field the server writes without omitempty is listed.
func requiredTicketFields(kind ticketKind) (string, []string) {
	switch kind {
	case kindScan:
		return "scan", []string{"p", "c", "t", "b0", "b1", "n"}
	case kindRank:
		return "rank", []string{"run", "p", "r", "w", "s0", "s1"}
	case kindWindowScan:
		return "windowed scan", []string{"p", "c", "t", "w", "r0", "r1", "k"}
	}
	return "", nil
}

// checkTicketFields refuses a payload of a known kind that lacks a
// required field. A payload that is not a JSON object is left to the
// kind's decoder, which says what is wrong with it.
func checkTicketFields(kind ticketKind, payload []byte) error {
	name, required := requiredTicketFields(kind)
	if len(required) == 0 {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(payload, &fields) != nil {
		return nil
	}
	for _, f := range required {
		if _, ok := fields[f]; !ok {
			return fmt.Errorf("%w: %s ticket payload: field %q is missing; pass the ticket of an endpoint of GetFlightInfo unchanged", ErrBadTicket, name, f)
		}
	}
	return nil
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
	if st.First < 0 || st.End < st.First || st.Rows < 0 || st.Lo < 0 || st.Hi < st.Lo || st.Matches != nil && *st.Matches < 0 {
		return nil, fmt.Errorf("%w: scan ticket names blocks [%d, %d) and %d rows", ErrBadTicket, st.First, st.End, st.Rows)
	}
	return &st, nil
}
