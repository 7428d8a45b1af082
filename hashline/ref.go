package hashline

import (
	"fmt"
	"strconv"
)

// Ref addresses one line of a specific content: its 1-based number and the
// anchor the line had when it was read. Both are checked when a plan is made,
// because unrelated edits change line numbers but never anchors, and a line
// with the same text elsewhere has the same anchor but another number.
//
// In JSON (and any other text encoding) a Ref is the string "12:ab12cd34".
type Ref struct {
	Line   int
	Anchor string
}

// String renders r as "line:anchor", the form ParseRef reads.
func (r Ref) String() string {
	return strconv.Itoa(r.Line) + ":" + r.Anchor
}

// MarshalText encodes r as String does. It refuses a Ref ParseRef would not
// read back, so an encoded Ref always decodes.
func (r Ref) MarshalText() ([]byte, error) {
	if err := r.validate(r.String()); err != nil {
		return nil, err
	}
	return []byte(r.String()), nil
}

// UnmarshalText decodes the "line:anchor" form with ParseRef.
func (r *Ref) UnmarshalText(b []byte) error {
	ref, err := ParseRef(string(b))
	if err != nil {
		return err
	}
	*r = ref
	return nil
}

// ParseRef reads "line:anchor": a positive decimal line number that fits in an
// int, a colon, and exactly eight lowercase hex digits, with nothing before or
// after. It is total: every other input yields a *RefError.
func ParseRef(s string) (Ref, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return Ref{}, &RefError{Code: CodeBadRef, Input: s, Reason: "must start with a line number (digits)"}
	}
	if i == len(s) || s[i] != ':' {
		return Ref{}, &RefError{Code: CodeBadRef, Input: s, Reason: "line number must be followed by ':' and the 8-hex anchor"}
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil {
		return Ref{}, &RefError{Code: CodeBadRef, Input: s, Reason: "line number is too large", Err: err}
	}
	r := Ref{Line: n, Anchor: s[i+1:]}
	if err := r.validate(s); err != nil {
		return Ref{}, err
	}
	return r, nil
}

// check is validate with r's String as the input, rendered only when r
// is refused.
func (r Ref) check() error {
	if r.Line >= 1 && isAnchor(r.Anchor) {
		return nil
	}
	return r.validate(r.String())
}

// validate checks the parts of r; input is what the caller wrote, for the
// message.
func (r Ref) validate(input string) error {
	if r.Line < 1 {
		return &RefError{Code: CodeBadRef, Input: input, Reason: "line numbers start at 1"}
	}
	if !isAnchor(r.Anchor) {
		return &RefError{Code: CodeBadRef, Input: input, Reason: fmt.Sprintf("anchor must be exactly %d lowercase hex digits", AnchorLen)}
	}
	return nil
}

// RefError reports a line reference that is not of the form "12:ab12cd34".
type RefError struct {
	Code   Code   // always CodeBadRef
	Input  string // the text that failed to parse
	Reason string // what is wrong with it, in words a model can act on
	Err    error  // an underlying cause, if any
}

func (e *RefError) Error() string {
	return fmt.Sprintf("bad line reference %q: %s (expected \"line:anchor\", e.g. \"12:ab12cd34\")", truncate(e.Input, maxQuoted), e.Reason)
}

// Unwrap returns the underlying cause, if any.
func (e *RefError) Unwrap() error { return e.Err }

// ErrorCode returns e.Code as a string (see CodeOf).
func (e *RefError) ErrorCode() string { return string(e.Code) }

// maxQuoted bounds how many bytes of caller input an error message quotes.
const maxQuoted = 80

// truncate returns at most n bytes of s, marking a cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
