package auth

import (
	"encoding/json"
	"fmt"
)

// Scope is what a token may do in a project. Scopes are ordered: each
// includes the ones before it.
type Scope int8

const (
	// None: nothing (the zero value).
	None Scope = iota
	// Read: list, scan, plan and stream runs, read the log and branches.
	Read
	// Write: Read, plus append (DoPut) and create branches.
	Write
	// Admin: Write, plus project administration (create the project).
	Admin
)

var scopeNames = [...]string{None: "none", Read: "read", Write: "write", Admin: "admin"}

func (s Scope) String() string {
	if s >= None && int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return fmt.Sprintf("scope(%d)", int8(s))
}

// ParseScope reads "read", "write" or "admin".
func ParseScope(s string) (Scope, error) {
	for i, n := range scopeNames {
		if i != int(None) && n == s {
			return Scope(i), nil
		}
	}
	return None, fmt.Errorf("%w: scope %q: want read, write or admin", ErrInvalid, s)
}

func (s Scope) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

func (s *Scope) UnmarshalJSON(data []byte) error {
	var str string
	if err := json.Unmarshal(data, &str); err != nil {
		return err
	}
	v, err := ParseScope(str)
	if err != nil {
		return err
	}
	*s = v
	return nil
}
