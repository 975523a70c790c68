package errdefs

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxQuoted is how many bytes of a value Quote shows.
const MaxQuoted = 64

// MaxListed is how many items List names.
const MaxListed = 8

// Quote returns s quoted like %q when it is at most MaxQuoted bytes, or its
// first MaxQuoted bytes (cut on a UTF-8 boundary) quoted and followed by
// its length: "aaaa…" (17825792 bytes). Error messages quote names and
// values from a request with it, so that a message stays short whatever the
// input.
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	n := MaxQuoted
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s (%d bytes)", strconv.Quote(s[:n]+"…"), len(s))
}

// List joins the first MaxListed items, each passed through Quote, with ", "
// and says how many more there are: `"a", "b", "c" and 997 more`. It is for
// messages that list columns, tables or branches.
func List(items []string) string {
	var b strings.Builder
	for i, s := range items {
		if i == MaxListed {
			fmt.Fprintf(&b, " and %d more", len(items)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Quote(s))
	}
	return b.String()
}

// Truncate returns s if it is at most max bytes, or else a prefix of s cut
// on a UTF-8 boundary followed by "… (N more bytes)", max bytes in all (or
// just the suffix, if max is smaller than it).
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	// The suffix names the bytes dropped, which depends on where the cut
	// falls; size it for the worst case (every byte of s dropped).
	room := max - len(fmt.Sprintf("… (%d more bytes)", len(s)))
	if room < 0 {
		room = 0
	}
	for room > 0 && !utf8.RuneStart(s[room]) {
		room--
	}
	return s[:room] + fmt.Sprintf("… (%d more bytes)", len(s)-room)
}
