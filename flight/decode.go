package flight

import (
	"github.com/weftdata/weft/client"
)

// decode parses a JSON command, action body or ticket payload with the
// protocol's one strict decoder (client.Decode, shared with the Go client)
// and marks its errors as kind (ErrBadRequest or ErrBadTicket).
// client.Decode's errors wrap errdefs.ErrInvalidArgument already, which is
// what the status mapping reads; kind adds flight's own sentinel to the
// chain so that callers and tests can tell a bad ticket from a bad command
// with errors.Is, without changing the message.
func decode(kind error, what string, data []byte, v any) error {
	if err := client.Decode(what, data, v); err != nil {
		return kindError{kind: kind, err: err}
	}
	return nil
}

// kindError adds a kind to err's chain without adding to its message.
type kindError struct{ kind, err error }

func (e kindError) Error() string   { return e.err.Error() }
func (e kindError) Unwrap() []error { return []error{e.kind, e.err} }
