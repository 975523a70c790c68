package flight

import (
	"github.com/weftdata/weft/client"
)

// decode parses a JSON command, action body or ticket payload with the
// protocol's one strict decoder (client.Decode, shared with the Go client)
// and marks its errors as kind (ErrBadRequest or ErrBadTicket).
//
// TODO(integrator): once Service.status maps errdefs kinds, kind can go:
// client.Decode's errors wrap errdefs.ErrInvalidArgument already.
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
