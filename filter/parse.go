package filter

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits bound what Parse accepts, against hostile input.
type Limits struct {
	MaxBytes  int // longest filter text
	MaxDepth  int // deepest nesting of parentheses, NOT, AND and OR
	MaxInList int // most literals in one IN list
}

// DefaultLimits: 64 KiB of text, depth 64, 10,000 IN literals.
func DefaultLimits() Limits { return Limits{MaxBytes: 64 << 10, MaxDepth: 64, MaxInList: 10_000} }

// Expr is a parsed filter: a tree of predicates joined by AND, OR and NOT.
// Its String is its canonical text (keywords upper case, literals and
// names quoted the same way, minimal parentheses): two filters that parse
// to the same tree print the same.
type Expr struct {
	root node
	text string
}

// String returns the canonical text of e.
func (e *Expr) String() string { return e.text }

type node interface {
	pos() int
	write(b *strings.Builder, prec int)
}

type (
	logical struct {
		p     int
		or    bool
		terms []node
	}
	notNode struct {
		p int
		x node
	}
	column struct {
		p    int
		name string
	}
	litKind int
	literal struct {
		p    int
		kind litKind
		text string // number text, string value, date or timestamp text
		neg  bool   // number with a leading minus (text excludes it)
		b    bool
	}
	compare struct {
		p   int
		op  string // = != < <= > >=
		col column
		lit literal
	}
	inList struct {
		p    int
		col  column
		lits []literal
		not  bool
	}
	isNull struct {
		p   int
		col column
		not bool
	}
	between struct {
		p      int
		col    column
		lo, hi literal
		not    bool
	}
	prefix struct {
		p      int
		col    column
		prefix string
		not    bool
	}
	boolCol struct{ col column }
)

const (
	litNumber litKind = iota
	litString
	litBool
	litDate
	litTimestamp
)

func (n *logical) pos() int { return n.p }
func (n *notNode) pos() int { return n.p }
func (n *compare) pos() int { return n.p }
func (n *inList) pos() int  { return n.p }
func (n *isNull) pos() int  { return n.p }
func (n *between) pos() int { return n.p }
func (n *prefix) pos() int  { return n.p }
func (n *boolCol) pos() int { return n.col.p }

// Parse parses a filter's text (doc.go, "Grammar") within lim.
func Parse(text string, lim Limits) (*Expr, error) {
	if len(text) > lim.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(text), lim.MaxBytes)
	}
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("%w: at byte %d: the filter is not valid UTF-8", ErrSyntax, invalidUTF8(text))
	}
	p := &parser{src: text, lim: lim}
	if err := p.lex(); err != nil {
		return nil, err
	}
	root, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.expected(t, "AND, OR or the end of the filter")
	}
	var b strings.Builder
	root.write(&b, 0)
	return &Expr{root: root, text: b.String()}, nil
}

func invalidUTF8(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return i
			}
		}
	}
	return 0
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tQuotedIdent
	tNumber
	tString
	tOp // = == != <> < <= > >=
	tLParen
	tRParen
	tComma
	tMinus
)

type token struct {
	kind tokKind
	p    int
	text string // identifier/string value, number text, operator
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "the end of the filter"
	case tIdent:
		return strconv.Quote(t.text)
	case tQuotedIdent:
		return "column " + strconv.Quote(t.text)
	case tNumber:
		return "number " + t.text
	case tString:
		return "string " + quoteString(t.text)
	}
	return strconv.Quote(t.text)
}

type parser struct {
	src  string
	lim  Limits
	toks []token
	i    int
}

func (p *parser) lex() error {
	s := p.src
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			p.toks = append(p.toks, token{tLParen, i, "("})
			i++
		case c == ')':
			p.toks = append(p.toks, token{tRParen, i, ")"})
			i++
		case c == ',':
			p.toks = append(p.toks, token{tComma, i, ","})
			i++
		case c == '-':
			p.toks = append(p.toks, token{tMinus, i, "-"})
			i++
		case c == '=' || c == '!' || c == '<' || c == '>':
			op := string(c)
			if i+1 < len(s) {
				two := s[i : i+2]
				switch two {
				case "==", "!=", "<>", "<=", ">=":
					op = two
				}
			}
			if op == "!" {
				return fmt.Errorf("%w: at byte %d: expected != or another operator, found %q", ErrSyntax, i, "!")
			}
			p.toks = append(p.toks, token{tOp, i, op})
			i += len(op)
		case c == '\'' || c == '"':
			start := i
			var b strings.Builder
			i++
			for {
				if i >= len(s) {
					what := "string"
					if c == '"' {
						what = "quoted column name"
					}
					return fmt.Errorf("%w: at byte %d: the %s that starts here has no closing %c", ErrSyntax, start, what, c)
				}
				if s[i] == c {
					if i+1 < len(s) && s[i+1] == c {
						b.WriteByte(c)
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			k := tString
			if c == '"' {
				k = tQuotedIdent
			}
			p.toks = append(p.toks, token{k, start, b.String()})
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			start := i
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			if i < len(s) && s[i] == '.' {
				i++
				for i < len(s) && s[i] >= '0' && s[i] <= '9' {
					i++
				}
			}
			if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
				j := i + 1
				if j < len(s) && (s[j] == '+' || s[j] == '-') {
					j++
				}
				if j < len(s) && s[j] >= '0' && s[j] <= '9' {
					for j < len(s) && s[j] >= '0' && s[j] <= '9' {
						j++
					}
					i = j
				}
			}
			if i < len(s) && isIdentByte(s[i]) {
				return fmt.Errorf("%w: at byte %d: expected a number, found %q", ErrSyntax, start, s[start:i+1])
			}
			p.toks = append(p.toks, token{tNumber, start, s[start:i]})
		case isIdentStart(c):
			start := i
			for i < len(s) && isIdentByte(s[i]) {
				i++
			}
			p.toks = append(p.toks, token{tIdent, start, s[start:i]})
		default:
			r, _ := utf8.DecodeRuneInString(s[i:])
			return fmt.Errorf("%w: at byte %d: unexpected character %q; expected a column, a literal, an operator or a parenthesis", ErrSyntax, i, r)
		}
	}
	p.toks = append(p.toks, token{kind: tEOF, p: len(s)})
	return nil
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentByte(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' || c == '.' }

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// keyword reports whether the next token is keyword kw (case-insensitive),
// consuming it if so.
func (p *parser) keyword(kw string) bool {
	t := p.peek()
	if t.kind == tIdent && strings.EqualFold(t.text, kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) isKeyword(t token, kw string) bool {
	return t.kind == tIdent && strings.EqualFold(t.text, kw)
}

func (p *parser) expected(t token, what string) error {
	return fmt.Errorf("%w: at byte %d: expected %s, found %s", ErrSyntax, t.p, what, t.describe())
}

func (p *parser) deeper(depth int) error {
	if depth >= p.lim.MaxDepth {
		return fmt.Errorf("%w: at byte %d: nested deeper than %d", ErrTooLarge, p.peek().p, p.lim.MaxDepth)
	}
	return nil
}

func (p *parser) or(depth int) (node, error) {
	if err := p.deeper(depth); err != nil {
		return nil, err
	}
	start := p.peek().p
	first, err := p.and(depth + 1)
	if err != nil {
		return nil, err
	}
	terms := []node{first}
	for p.keyword("OR") {
		t, err := p.and(depth + 1)
		if err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
	if len(terms) == 1 {
		return first, nil
	}
	return &logical{p: start, or: true, terms: terms}, nil
}

func (p *parser) and(depth int) (node, error) {
	if err := p.deeper(depth); err != nil {
		return nil, err
	}
	start := p.peek().p
	first, err := p.not(depth + 1)
	if err != nil {
		return nil, err
	}
	terms := []node{first}
	for p.keyword("AND") {
		t, err := p.not(depth + 1)
		if err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
	if len(terms) == 1 {
		return first, nil
	}
	return &logical{p: start, terms: terms}, nil
}

func (p *parser) not(depth int) (node, error) {
	if err := p.deeper(depth); err != nil {
		return nil, err
	}
	t := p.peek()
	if p.keyword("NOT") {
		x, err := p.not(depth + 1)
		if err != nil {
			return nil, err
		}
		return &notNode{p: t.p, x: x}, nil
	}
	return p.predicate(depth + 1)
}

var reserved = map[string]bool{"AND": true, "OR": true, "NOT": true, "IN": true, "IS": true, "NULL": true,
	"BETWEEN": true, "LIKE": true, "TRUE": true, "FALSE": true, "DATE": true, "TIMESTAMP": true}

func (p *parser) predicate(depth int) (node, error) {
	t := p.peek()
	switch {
	case t.kind == tLParen:
		p.next()
		x, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tRParen {
			return nil, p.expected(c, "AND, OR or )")
		}
		return x, nil
	case t.kind == tIdent && strings.EqualFold(t.text, "starts_with") && p.toks[p.i+1].kind == tLParen:
		p.i += 2
		col, err := p.column()
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tComma {
			return nil, p.expected(c, ",")
		}
		s := p.next()
		if s.kind != tString {
			return nil, p.expected(s, "a string (the prefix)")
		}
		if c := p.next(); c.kind != tRParen {
			return nil, p.expected(c, ")")
		}
		return &prefix{p: t.p, col: col, prefix: s.text}, nil
	case t.kind == tIdent && !reserved[strings.ToUpper(t.text)] || t.kind == tQuotedIdent:
		col, _ := p.column()
		return p.afterColumn(col)
	case t.kind == tNumber || t.kind == tString || t.kind == tMinus || p.isLiteralKeyword(t):
		lit, err := p.literal()
		if err != nil {
			return nil, err
		}
		op := p.next()
		if op.kind != tOp {
			return nil, p.expected(op, "a comparison operator (= != < <= > >=) after the literal")
		}
		col, err := p.column()
		if err != nil {
			return nil, err
		}
		return &compare{p: lit.p, op: flip(canonOp(op.text)), col: col, lit: lit}, nil
	}
	return nil, p.expected(t, "a column, a literal, NOT or (")
}

func (p *parser) isLiteralKeyword(t token) bool {
	for _, kw := range []string{"TRUE", "FALSE", "DATE", "TIMESTAMP", "NULL"} {
		if p.isKeyword(t, kw) {
			return true
		}
	}
	return false
}

func (p *parser) column() (column, error) {
	t := p.next()
	switch {
	case t.kind == tQuotedIdent:
		return column{p: t.p, name: t.text}, nil
	case t.kind == tIdent && !reserved[strings.ToUpper(t.text)]:
		return column{p: t.p, name: t.text}, nil
	}
	return column{}, p.expected(t, "a column name")
}

func (p *parser) afterColumn(col column) (node, error) {
	t := p.peek()
	if t.kind == tOp {
		p.next()
		lit, err := p.literal()
		if err != nil {
			return nil, err
		}
		return &compare{p: col.p, op: canonOp(t.text), col: col, lit: lit}, nil
	}
	if p.keyword("IS") {
		not := p.keyword("NOT")
		if !p.keyword("NULL") {
			return nil, p.expected(p.peek(), "NULL")
		}
		return &isNull{p: col.p, col: col, not: not}, nil
	}
	not := false
	if p.isKeyword(t, "NOT") {
		nt := p.toks[p.i+1]
		if p.isKeyword(nt, "IN") || p.isKeyword(nt, "BETWEEN") || p.isKeyword(nt, "LIKE") {
			p.next()
			not = true
		}
	}
	switch {
	case p.keyword("IN"):
		if c := p.next(); c.kind != tLParen {
			return nil, p.expected(c, "( to open the IN list")
		}
		n := &inList{p: col.p, col: col, not: not}
		for {
			lit, err := p.literal()
			if err != nil {
				return nil, err
			}
			if len(n.lits) == p.lim.MaxInList {
				return nil, fmt.Errorf("%w: at byte %d: an IN list of more than %d literals", ErrTooLarge, lit.p, p.lim.MaxInList)
			}
			n.lits = append(n.lits, lit)
			c := p.next()
			if c.kind == tRParen {
				return n, nil
			}
			if c.kind != tComma {
				return nil, p.expected(c, ", or ) in the IN list")
			}
		}
	case p.keyword("BETWEEN"):
		lo, err := p.literal()
		if err != nil {
			return nil, err
		}
		if !p.keyword("AND") {
			return nil, p.expected(p.peek(), "AND (BETWEEN low AND high)")
		}
		hi, err := p.literal()
		if err != nil {
			return nil, err
		}
		return &between{p: col.p, col: col, lo: lo, hi: hi, not: not}, nil
	case p.keyword("LIKE"):
		s := p.next()
		if s.kind != tString {
			return nil, p.expected(s, "a string pattern ('prefix%')")
		}
		body, ok := strings.CutSuffix(s.text, "%")
		if !ok || strings.ContainsAny(body, "%_") {
			return nil, fmt.Errorf("%w: at byte %d: expected a prefix pattern 'abc%%' (LIKE supports only one trailing %%, and no _), found %s", ErrSyntax, s.p, quoteString(s.text))
		}
		return &prefix{p: col.p, col: col, prefix: body, not: not}, nil
	}
	if not {
		return nil, p.expected(p.peek(), "IN, BETWEEN or LIKE after NOT")
	}
	return &boolCol{col: col}, nil
}

func (p *parser) literal() (literal, error) {
	t := p.next()
	switch {
	case t.kind == tMinus:
		n := p.next()
		if n.kind != tNumber || n.p != t.p+1 {
			return literal{}, p.expected(n, "a number after -")
		}
		return literal{p: t.p, kind: litNumber, text: n.text, neg: true}, nil
	case t.kind == tNumber:
		return literal{p: t.p, kind: litNumber, text: t.text}, nil
	case t.kind == tString:
		return literal{p: t.p, kind: litString, text: t.text}, nil
	case p.isKeyword(t, "TRUE"), p.isKeyword(t, "FALSE"):
		return literal{p: t.p, kind: litBool, b: strings.EqualFold(t.text, "TRUE")}, nil
	case p.isKeyword(t, "DATE"), p.isKeyword(t, "TIMESTAMP"):
		s := p.next()
		if s.kind != tString {
			return literal{}, p.expected(s, "a string after "+strings.ToUpper(t.text)+" (e.g. DATE '2024-01-31')")
		}
		k := litDate
		if p.isKeyword(t, "TIMESTAMP") {
			k = litTimestamp
		}
		return literal{p: t.p, kind: k, text: s.text}, nil
	case p.isKeyword(t, "NULL"):
		return literal{}, fmt.Errorf("%w: at byte %d: expected a literal, found NULL (a comparison with NULL is never true; write column IS NULL or IS NOT NULL)", ErrSyntax, t.p)
	}
	return literal{}, p.expected(t, "a literal (number, 'string', TRUE, FALSE, DATE '…' or TIMESTAMP '…')")
}

func canonOp(op string) string {
	switch op {
	case "==":
		return "="
	case "<>":
		return "!="
	}
	return op
}

// flip turns lit op col into col op' lit.
func flip(op string) string {
	switch op {
	case "<":
		return ">"
	case "<=":
		return ">="
	case ">":
		return "<"
	case ">=":
		return "<="
	}
	return op
}

// Canonical text.

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (c column) String() string {
	ok := c.name != "" && isIdentStart(c.name[0]) && !reserved[strings.ToUpper(c.name)] && !strings.EqualFold(c.name, "starts_with")
	for i := 0; ok && i < len(c.name); i++ {
		ok = isIdentByte(c.name[i])
	}
	if ok {
		return c.name
	}
	return `"` + strings.ReplaceAll(c.name, `"`, `""`) + `"`
}

func (l literal) String() string {
	switch l.kind {
	case litNumber:
		if l.neg {
			return "-" + l.text
		}
		return l.text
	case litString:
		return quoteString(l.text)
	case litBool:
		if l.b {
			return "TRUE"
		}
		return "FALSE"
	case litDate:
		return "DATE " + quoteString(l.text)
	}
	return "TIMESTAMP " + quoteString(l.text)
}

func (n *logical) write(b *strings.Builder, prec int) {
	my, sep := 2, " AND "
	if n.or {
		my, sep = 1, " OR "
	}
	if prec > my {
		b.WriteByte('(')
	}
	for i, t := range n.terms {
		if i > 0 {
			b.WriteString(sep)
		}
		t.write(b, my+1)
	}
	if prec > my {
		b.WriteByte(')')
	}
}

func (n *notNode) write(b *strings.Builder, prec int) {
	b.WriteString("NOT ")
	n.x.write(b, 3)
}

func (n *compare) write(b *strings.Builder, prec int) {
	b.WriteString(n.col.String() + " " + n.op + " " + n.lit.String())
}

func notWord(not bool) string {
	if not {
		return "NOT "
	}
	return ""
}

func (n *inList) write(b *strings.Builder, prec int) {
	b.WriteString(n.col.String() + " " + notWord(n.not) + "IN (")
	for i, l := range n.lits {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(l.String())
	}
	b.WriteByte(')')
}

func (n *isNull) write(b *strings.Builder, prec int) {
	b.WriteString(n.col.String() + " IS " + notWord(n.not) + "NULL")
}

func (n *between) write(b *strings.Builder, prec int) {
	if prec > 2 { // BETWEEN's AND must not read as a conjunction
		b.WriteByte('(')
		defer b.WriteByte(')')
	}
	b.WriteString(n.col.String() + " " + notWord(n.not) + "BETWEEN " + n.lo.String() + " AND " + n.hi.String())
}

func (n *prefix) write(b *strings.Builder, prec int) {
	if n.not {
		b.WriteString("NOT ")
	}
	b.WriteString("starts_with(" + n.col.String() + ", " + quoteString(n.prefix) + ")")
}

func (n *boolCol) write(b *strings.Builder, prec int) { b.WriteString(n.col.String()) }
