package importers

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/weftdata/weft/errdefs"
)

// maxExpansions bounds the globs one brace pattern expands to.
const maxExpansions = 1 << 17

// ExpandBraces expands the brace groups of a pattern, as webdataset's
// braceexpand does: {a,b,c} alternatives and {0..99} or {000..099}
// numeric ranges (zero-padded to the width of the bounds when either has
// a leading zero). A pattern with more than 131,072 expansions, or a
// malformed group, is an error.
func ExpandBraces(pattern string) ([]string, error) {
	out := []string{""}
	rest := pattern
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			out = appendAll(out, []string{rest})
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("%w: pattern %s has an unclosed {", ErrBadSource, errdefs.Quote(pattern))
		}
		j += i
		alts, err := braceGroup(pattern, rest[i+1:j])
		if err != nil {
			return nil, err
		}
		out = appendAll(out, []string{rest[:i]})
		if len(out)*len(alts) > maxExpansions {
			return nil, fmt.Errorf("%w: pattern %s expands to more than %d names; use a glob (*) instead", ErrBadSource, errdefs.Quote(pattern), maxExpansions)
		}
		out = appendAll(out, alts)
		rest = rest[j+1:]
	}
	return out, nil
}

func appendAll(prefixes, suffixes []string) []string {
	out := make([]string, 0, len(prefixes)*len(suffixes))
	for _, p := range prefixes {
		for _, s := range suffixes {
			out = append(out, p+s)
		}
	}
	return out
}

func braceGroup(pattern, g string) ([]string, error) {
	if lo, hi, ok := strings.Cut(g, ".."); ok && !strings.Contains(g, ",") {
		a, err1 := strconv.ParseInt(lo, 10, 64)
		b, err2 := strconv.ParseInt(hi, 10, 64)
		if err1 != nil || err2 != nil || a > b || a < 0 {
			return nil, fmt.Errorf("%w: pattern %s: bad range {%s}; want {FIRST..LAST} with 0 <= FIRST <= LAST", ErrBadSource, errdefs.Quote(pattern), g)
		}
		if b-a >= maxExpansions {
			return nil, fmt.Errorf("%w: pattern %s: range {%s} has more than %d values", ErrBadSource, errdefs.Quote(pattern), g, maxExpansions)
		}
		width := 0
		if (len(lo) > 1 && lo[0] == '0') || (len(hi) > 1 && hi[0] == '0') {
			width = max(len(lo), len(hi))
		}
		out := make([]string, 0, b-a+1)
		for v := a; v <= b; v++ {
			out = append(out, fmt.Sprintf("%0*d", width, v))
		}
		return out, nil
	}
	return strings.Split(g, ","), nil
}

// matcher matches paths against a compiled Source pattern.
type matcher struct {
	exact  map[string]bool // expansions without glob characters
	globs  []string        // the others
	nested bool            // the pattern has a "/": match whole paths
}

func compilePattern(pattern string) (*matcher, error) {
	if pattern == "" {
		return nil, nil
	}
	globs, err := ExpandBraces(pattern)
	if err != nil {
		return nil, err
	}
	m := &matcher{exact: map[string]bool{}, nested: strings.Contains(pattern, "/")}
	for _, g := range globs {
		if strings.ContainsAny(g, "*?[\\") {
			m.globs = append(m.globs, g)
		} else {
			m.exact[g] = true
		}
	}
	return m, nil
}
