package blob

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of the overflow decision.
const (
	// OverflowThreshold is the most output, in bytes, kept inline. Output
	// longer than this spills to a blob and only excerpts stay inline.
	OverflowThreshold = 64 << 10
	// ExcerptBytes is the most bytes each of the head and tail excerpts of
	// spilled output holds.
	ExcerptBytes = 2 << 10
)

// Overflow describes output that spilled to a blob: where the whole of it
// is, how long it is, and its two ends. It is the Details a tool attaches
// to an outcome whose output overflowed; the JSON names are stable.
//
// When the store refused to keep the output (CodeSpillBudget), NotKept
// says why, Ref and Path are empty, and the excerpts are all that is
// left of it.
type Overflow struct {
	// Ref is the content address of the full output; empty when NotKept.
	Ref Ref `json:"ref"`
	// Path is the absolute path of the blob, readable with fs_read;
	// empty when NotKept.
	Path string `json:"path"`
	// Size is the length of the full output in bytes.
	Size int64 `json:"size"`
	// HeadExcerpt is the output's first ExcerptBytes bytes at most, cut
	// on a rune boundary as Excerpts does.
	HeadExcerpt string `json:"head_excerpt"`
	// TailExcerpt is the output's last ExcerptBytes bytes at most, cut on
	// a rune boundary as Excerpts does.
	TailExcerpt string `json:"tail_excerpt"`
	// NotKept is empty when the full output is stored at Path. Otherwise
	// it is the sentence saying why the store did not keep it (the
	// Reason of the CodeSpillBudget error returned beside it).
	NotKept string `json:"not_kept,omitempty"`
}

// Bound makes the overflow decision for complete output. Output of at most
// OverflowThreshold bytes comes back inline, as is, with a nil Overflow
// and nothing stored. Longer output is stored with Spill and described by
// the Overflow, with inline empty. Output is never silently clipped: a
// failed store is returned as an error, with a nil Overflow, except a
// refusal for the session's budget (CodeSpillBudget), which comes with an
// Overflow holding the excerpts and saying the output was not kept
// (NotKept), for the caller to show.
func (s *Store) Bound(data []byte) (inline string, spilled *Overflow, err error) {
	if len(data) <= OverflowThreshold {
		return string(data), nil, nil
	}
	o, err := s.Spill(data)
	return "", o, err
}

// Spill stores data whole, whatever its length, with Put, and describes
// it as an Overflow: ref, path, size and excerpts. When the session's
// budget refuses it, Spill returns the Overflow without ref or path,
// NotKept saying why, together with the *Error (CodeSpillBudget); on any
// other failure it returns a nil Overflow and the error.
func (s *Store) Spill(data []byte) (*Overflow, error) {
	r, err := s.Put(data)
	if err != nil && CodeOf(err) != CodeSpillBudget {
		return nil, err
	}
	head, tail := Excerpts(data, ExcerptBytes)
	o := &Overflow{Size: int64(len(data)), HeadExcerpt: head, TailExcerpt: tail}
	if err != nil {
		o.NotKept = notKeptReason(err)
		return o, err
	}
	o.Ref, o.Path = r, s.Path(r)
	return o, nil
}

// notKeptReason is the sentence an Overflow's NotKept carries for err.
func notKeptReason(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Reason != "" {
		return e.Reason
	}
	return err.Error()
}

// Excerpts returns the longest prefix and the longest suffix of data of at
// most n bytes each (none when n <= 0) that do not split a UTF-8 encoded
// rune: a cut falling inside a well-formed multi-byte sequence moves
// outward to exclude it whole. Bytes that are not well-formed UTF-8 are
// passed through as they are, each one a unit of its own, so both
// excerpts are always exact substrings of data; whoever encodes them (as
// JSON, say) decides how to show such bytes. When len(data) <= 2n the two
// excerpts overlap.
func Excerpts(data []byte, n int) (head, tail string) {
	return string(data[:headCut(data, n)]), string(data[tailCut(data, n):])
}

// headCut returns the end of the longest rune-whole prefix of data of at
// most n bytes. It reads at most n+utf8.UTFMax-1 bytes of data.
func headCut(data []byte, n int) int {
	i := 0
	for i < len(data) {
		_, size := utf8.DecodeRune(data[i:])
		if i+size > n {
			break
		}
		i += size
	}
	return i
}

// tailCut returns the start of the longest rune-whole suffix of data of at
// most n bytes. It reads at most the last n+utf8.UTFMax bytes of data.
// Decoding backwards yields the same rune boundaries as decoding forwards:
// a well-formed sequence has no lead byte after its first, so no backward
// unit can straddle its end or begin inside it.
func tailCut(data []byte, n int) int {
	j := len(data)
	for j > 0 {
		_, size := utf8.DecodeLastRune(data[:j])
		if len(data)-(j-size) > n {
			break
		}
		j -= size
	}
	return j
}

// Text renders o for a model: the head excerpt, a line saying how many
// bytes were elided and the path at which fs_read shows the full output
// (or, when NotKept, that the full output was not kept and why), then the
// tail excerpt. label names the output ("stdout", "output of
// grep"); an empty label reads "output". A nil Overflow renders as "".
func (o *Overflow) Text(label string) string {
	if o == nil {
		return ""
	}
	if label == "" {
		label = "output"
	}
	elided := max(o.Size-int64(len(o.HeadExcerpt))-int64(len(o.TailExcerpt)), 0)
	var b strings.Builder
	b.Grow(len(o.HeadExcerpt) + len(o.TailExcerpt) + 256)
	b.WriteString(o.HeadExcerpt)
	if o.HeadExcerpt != "" && !strings.HasSuffix(o.HeadExcerpt, "\n") {
		b.WriteByte('\n')
	}
	if o.NotKept != "" {
		fmt.Fprintf(&b, "[... %d bytes of %s elided: it is %d bytes in all, over the %d-byte inline limit, and the full %s was not kept: %s ...]\n",
			elided, label, o.Size, OverflowThreshold, label, o.NotKept)
	} else {
		fmt.Fprintf(&b, "[... %d bytes of %s elided: it is %d bytes in all, over the %d-byte inline limit; fs_read path %q shows all of it (blob %s) ...]\n",
			elided, label, o.Size, OverflowThreshold, o.Path, o.Ref)
	}
	b.WriteString(o.TailExcerpt)
	return b.String()
}
