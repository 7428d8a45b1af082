package hashline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
)

// Op names what a hunk does.
type Op string

// The accepted operations.
const (
	// OpReplace replaces lines Start..End (inclusive; End omitted means
	// Start) with Lines. Empty Lines deletes them.
	OpReplace Op = "replace"
	// OpInsertBefore places Lines immediately before line Start.
	OpInsertBefore Op = "insert_before"
	// OpInsertAfter places Lines immediately after line Start.
	OpInsertAfter Op = "insert_after"
	// OpAppend places Lines after the last line. It takes no refs and works
	// on empty content.
	OpAppend Op = "append"
)

// acceptedOps names the accepted operations, for messages.
const acceptedOps = "replace, insert_before, insert_after, append"

func (o Op) valid() bool {
	switch o {
	case OpReplace, OpInsertBefore, OpInsertAfter, OpAppend:
		return true
	}
	return false
}

// Hunk is one edit, addressed by refs into the content it was planned from.
//
// Lines are file text, never display text: an element that begins with the
// display prefix ("12:ab12cd34|") is refused. An element holding line breaks
// is several lines, cut the way content is cut: at each "\n", a "\r" just
// before it belonging to the break, and a break at the very end of the
// element starting no further line ("a\nb" and "a\r\nb\n" are two lines; ""
// and "\n" are one empty line). A "\r" ending an element is dropped too,
// since written before a line break it would become part of that break.
// Written lines end with the file's dominant line break (CRLF when more
// lines end in CRLF than in LF, else LF).
type Hunk struct {
	Op    Op       `json:"op"`
	Start *Ref     `json:"start,omitempty"`
	End   *Ref     `json:"end,omitempty"`
	Lines []string `json:"lines"`
}

// knownFields names the JSON fields of a hunk, for messages.
const knownFields = "op, start, end, lines"

func isHunkField(name string) bool {
	switch name {
	case "op", "start", "end", "lines":
		return true
	}
	return false
}

// pieces cuts a hunk's Lines into the lines it writes (see Hunk).
func pieces(elems []string) []string {
	return appendPieces(make([]string, 0, countPieces(elems)), elems)
}

// appendPieces appends the pieces of elems to out.
func appendPieces(out []string, elems []string) []string {
	for _, p := range eachPiece(elems) {
		out = append(out, p)
	}
	return out
}

// countPieces is len(pieces(elems)), counted without cutting.
func countPieces(elems []string) int {
	n := 0
	for _, e := range elems {
		n += strings.Count(e, "\n")
		if e == "" || e[len(e)-1] != '\n' {
			n++ // the text after the last LF (or the whole element)
		}
	}
	return n
}

// eachPiece yields the pieces of elems with their 0-based index: each
// element cut at its LFs, each piece without a trailing CR, and no empty
// piece after an element's final LF.
func eachPiece(elems []string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		j := 0
		for _, e := range elems {
			for {
				i := strings.IndexByte(e, '\n')
				if i < 0 {
					if !yield(j, strings.TrimSuffix(e, "\r")) {
						return
					}
					j++
					break
				}
				if !yield(j, strings.TrimSuffix(e[:i], "\r")) {
					return
				}
				j++
				if e = e[i+1:]; e == "" {
					break
				}
			}
		}
	}
}

// ValidateHunks checks everything about hunks that does not depend on the
// content: a non-empty list, known ops, the refs each op needs and no
// others, lines numbered from 1, End not before Start, something to insert,
// and no line in display form. It returns the first problem as a *HunkError.
// Overlap and staleness need the content; NewPlan checks them.
func ValidateHunks(hunks []Hunk) error {
	if len(hunks) == 0 {
		return &HunkError{Code: CodeNoHunks, Index: -1, Detail: "empty: give at least one edit"}
	}
	for i, h := range hunks {
		if err := validateHunk(i, h); err != nil {
			return err
		}
	}
	return nil
}

func validateHunk(i int, h Hunk) error {
	if !h.Op.valid() {
		return &HunkError{Code: CodeBadOp, Index: i, Field: "op",
			Detail: fmt.Sprintf("unknown op %q; accepted ops: %s", truncate(string(h.Op), maxQuoted), acceptedOps)}
	}
	switch h.Op {
	case OpAppend:
		if h.Start != nil || h.End != nil {
			return &HunkError{Code: CodeUnexpectedRef, Index: i, Field: refField(h),
				Detail: "append takes no start or end; it always adds after the last line"}
		}
	default:
		if h.Start == nil {
			return &HunkError{Code: CodeMissingRef, Index: i, Field: "start",
				Detail: fmt.Sprintf("%s needs start (\"line:anchor\")", h.Op)}
		}
		if err := h.Start.check(); err != nil {
			return &HunkError{Code: CodeBadRef, Index: i, Field: "start", Detail: "bad ref", Err: err}
		}
		if h.End != nil {
			if h.Op != OpReplace {
				return &HunkError{Code: CodeUnexpectedRef, Index: i, Field: "end",
					Detail: fmt.Sprintf("%s takes only start; end is for replace", h.Op)}
			}
			if err := h.End.check(); err != nil {
				return &HunkError{Code: CodeBadRef, Index: i, Field: "end", Detail: "bad ref", Err: err}
			}
			if h.End.Line < h.Start.Line {
				return &HunkError{Code: CodeEndBeforeStart, Index: i, Field: "end",
					Detail: fmt.Sprintf("end line %d is before start line %d", h.End.Line, h.Start.Line)}
			}
		}
	}
	if h.Op != OpReplace && countPieces(h.Lines) == 0 {
		return &HunkError{Code: CodeEmptyLines, Index: i, Field: "lines",
			Detail: fmt.Sprintf("%s with no lines changes nothing; give the lines to add", h.Op)}
	}
	for j, p := range eachPiece(h.Lines) {
		if HasDisplayPrefix(p) {
			return &HunkError{Code: CodeDisplayPrefix, Index: i, Field: "lines",
				Detail: fmt.Sprintf("line %d starts with a display prefix (%q); lines are file text: drop the \"N:anchor|\" part", j+1, truncate(p, maxQuoted))}
		}
	}
	return nil
}

func refField(h Hunk) string {
	if h.Start != nil {
		return "start"
	}
	return "end"
}

// DecodeHunks decodes a JSON array of hunk objects strictly and validates the
// result with ValidateHunks. Each object has "op" (required), "start" and
// "end" (optional "line:anchor" strings; null means absent) and "lines"
// (required array of strings, possibly empty). Field names are matched
// exactly; any other field is refused naming the accepted ones, and an
// unknown op is refused naming the accepted ops. Every failure is a
// *HunkError. DecodeHunks never panics, whatever data holds.
func DecodeHunks(data []byte) ([]Hunk, error) {
	trimmed := bytes.TrimSpace(data)
	if hunks, ok := decodePlain(trimmed); ok {
		if err := ValidateHunks(hunks); err != nil {
			return nil, err
		}
		return hunks, nil
	}
	return decodeGeneral(trimmed)
}

// decodeGeneral is DecodeHunks for any input, trimmed: it decodes with
// encoding/json, field by field, and says what is wrong.
func decodeGeneral(trimmed []byte) ([]Hunk, error) {
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, &HunkError{Code: CodeBadJSON, Index: -1, Detail: "must be a JSON array of hunk objects"}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(trimmed, &raws); err != nil {
		return nil, &HunkError{Code: CodeBadJSON, Index: -1, Detail: "not valid JSON", Err: err}
	}
	hunks := make([]Hunk, len(raws))
	for i, raw := range raws {
		h, err := decodeHunk(i, raw)
		if err != nil {
			return nil, err
		}
		hunks[i] = h
	}
	if err := ValidateHunks(hunks); err != nil {
		return nil, err
	}
	return hunks, nil
}

func decodeHunk(i int, raw json.RawMessage) (Hunk, error) {
	var h Hunk
	if len(raw) == 0 || raw[0] != '{' {
		return h, &HunkError{Code: CodeBadJSON, Index: i, Detail: "each hunk must be a JSON object"}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return h, &HunkError{Code: CodeBadJSON, Index: i, Detail: "hunk is not a valid JSON object", Err: err}
	}
	var unknown []string
	for k := range fields {
		if !isHunkField(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return h, &HunkError{Code: CodeUnknownField, Index: i, Field: truncate(unknown[0], maxQuoted),
			Detail: "unknown field; known fields: " + knownFields}
	}
	op, ok := fields["op"]
	if !ok || isNull(op) {
		return h, &HunkError{Code: CodeMissingField, Index: i, Field: "op",
			Detail: "op is required; accepted ops: " + acceptedOps}
	}
	var opName string
	if err := json.Unmarshal(op, &opName); err != nil {
		return h, &HunkError{Code: CodeBadOp, Index: i, Field: "op",
			Detail: "op must be a string; accepted ops: " + acceptedOps}
	}
	h.Op = Op(opName)
	if !h.Op.valid() {
		return h, &HunkError{Code: CodeBadOp, Index: i, Field: "op",
			Detail: fmt.Sprintf("unknown op %q; accepted ops: %s", truncate(opName, maxQuoted), acceptedOps)}
	}
	for _, f := range []struct {
		name string
		dst  **Ref
	}{{"start", &h.Start}, {"end", &h.End}} {
		v, ok := fields[f.name]
		if !ok || isNull(v) {
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return h, &HunkError{Code: CodeBadRef, Index: i, Field: f.name,
				Detail: "a ref must be a string \"line:anchor\", e.g. \"12:ab12cd34\""}
		}
		r, err := ParseRef(s)
		if err != nil {
			return h, &HunkError{Code: CodeBadRef, Index: i, Field: f.name, Detail: "bad ref", Err: err}
		}
		*f.dst = &r
	}
	lines, ok := fields["lines"]
	if !ok || isNull(lines) {
		return h, &HunkError{Code: CodeMissingField, Index: i, Field: "lines",
			Detail: "lines is required: an array of strings ([] deletes with replace)"}
	}
	if err := json.Unmarshal(lines, &h.Lines); err != nil || h.Lines == nil {
		return h, &HunkError{Code: CodeBadJSON, Index: i, Field: "lines",
			Detail: "lines must be an array of strings"}
	}
	return h, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }
