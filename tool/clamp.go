package tool

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// ClampNote is the one wording of a clamp every tool announces when it
// lowers a value the model asked for ("limit 5000 clamped to 2000"), so a
// model reads every clamp the same way. Callers add their own "note: "
// prefix or line break where their answer needs one.
func ClampNote(property string, asked, granted int64) string {
	return fmt.Sprintf("%s %d clamped to %d", property, asked, granted)
}

// bound holds o to the outcome bounds (MaxOutcomeBytes,
// MaxOutcomeImages, MaxOutcomeImageBytes): images past them are left
// out, Details too long (or not encodable) are replaced by
// OmittedDetails, and Text is cut, each loss said in Text. Code, IsError
// and Terminate are kept.
func bound(o Outcome) Outcome {
	var note string
	o.Images, note = boundImages(o.Images)
	o.Details = boundDetails(o.Details)
	o.Text = boundText(o.Text, note, MaxOutcomeBytes)
	return o
}

// boundImages keeps images in order while they fit MaxOutcomeImages and
// MaxOutcomeImageBytes, and returns the note saying what it left out
// ("" when nothing).
func boundImages(images []Image) ([]Image, string) {
	kept, total := 0, 0
	for kept < len(images) && kept < MaxOutcomeImages && total+len(images[kept].Data) <= MaxOutcomeImageBytes {
		total += len(images[kept].Data)
		kept++
	}
	if kept == len(images) {
		return images, ""
	}
	left := 0
	for _, img := range images[kept:] {
		left += len(img.Data)
	}
	note := fmt.Sprintf("\n[%d of %d images left out (%d bytes): one answer carries at most %d images of %d bytes together]",
		len(images)-kept, len(images), left, MaxOutcomeImages, MaxOutcomeImageBytes)
	return images[:kept:kept], note
}

// boundDetails returns d when its JSON encoding is at most
// MaxOutcomeBytes, and otherwise an OmittedDetails saying why not.
func boundDetails(d any) any {
	if d == nil {
		return nil
	}
	n, err := encodedLen(d)
	switch {
	case err != nil:
		return OmittedDetails{Type: fmt.Sprintf("%T", d), Error: clipReason(err.Error())}
	case n > MaxOutcomeBytes:
		return OmittedDetails{Type: fmt.Sprintf("%T", d), Bytes: n}
	}
	return d
}

// encodedLen is the length of d's JSON encoding; a MarshalJSON that
// panics is an encoding failure, never a panic into the host.
func encodedLen(d any) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("encoding panicked: %v", p)
		}
	}()
	b, err := json.Marshal(d)
	return len(b), err
}

// boundText returns text followed by note, cut so the whole is at most
// max bytes: when it does not fit, the longest head of text that does
// (ending on a rune boundary), a line saying where it was cut and how
// long it was, then note. note must be far shorter than max.
func boundText(text, note string, max int) string {
	if len(text)+len(note) <= max {
		return text + note
	}
	cutNote := func(shown int) string {
		return fmt.Sprintf("\n[answer cut: the first %d of its %d bytes are shown, the most one answer holds; ask for a smaller part]", shown, len(text))
	}
	// The note's length grows with shown's digits; max's are as many.
	head := runePrefix(text, max-len(note)-len(cutNote(max)))
	return head + cutNote(len(head)) + note
}

// runePrefix returns the longest prefix of s of at most n bytes that
// does not end inside a UTF-8 sequence: a sequence the cut would split is
// left out whole (bytes that are not UTF-8 may be cut anywhere).
func runePrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	// Only a sequence starting in the last UTFMax-1 bytes can be split.
	for i := n - 1; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:n]) {
				return s[:i]
			}
			break
		}
	}
	return s[:n]
}
