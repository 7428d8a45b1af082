// Package packed is how the reference history stores keep an entry's
// text: DEFLATE-compressed when that saves at least an eighth, as it is
// otherwise. Unpack is bounded: a stored text that would inflate past
// history.MaxEntryTextBytes is refused, so a damaged or hostile row
// cannot make a search allocate without bound.
package packed

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agentloom/loom/history"
)

// MinBytes is the shortest text worth compressing.
const MinBytes = 128

var (
	deflaters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed)
		return w
	}}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(nil) }}
)

// Pack answers text compressed, or nil when compressing does not save an
// eighth of it (and for texts shorter than MinBytes).
func Pack(text string) []byte {
	if len(text) < MinBytes {
		return nil
	}
	var buf bytes.Buffer
	buf.Grow(len(text) * 3 / 4)
	w := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(w)
	w.Reset(&buf)
	if _, err := io.WriteString(w, text); err != nil {
		return nil
	}
	if err := w.Close(); err != nil || buf.Len() > len(text)-len(text)/8 {
		return nil
	}
	return buf.Bytes()
}

// Each calls fill(i) for every i below n, spread over a few goroutines
// when n is large enough for that to pay (packing a batch's texts on
// the host's cores before a store takes its write lock). It returns once
// every call has.
func Each(n int, fill func(i int)) {
	const parts, minParallel = 4, 64
	if n < minParallel {
		for i := range n {
			fill(i)
		}
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			for i := p; i < n; i += parts {
				fill(i)
			}
		})
	}
	wg.Wait()
}

// ErrTooLong is Unpack's error for a stored text that inflates past
// history.MaxEntryTextBytes.
var ErrTooLong = errors.New("a stored text inflates past the longest entry text")

// Unpack answers the text Pack compressed into stored. A stored form
// that does not inflate, or inflates past history.MaxEntryTextBytes,
// is an error.
func Unpack(stored []byte) (string, error) {
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(stored), nil); err != nil {
		return "", err
	}
	var b bytes.Buffer
	b.Grow(min(2*len(stored), history.MaxEntryTextBytes))
	n, err := b.ReadFrom(io.LimitReader(r, history.MaxEntryTextBytes+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("a stored text does not inflate: %w", err)
	case n > history.MaxEntryTextBytes:
		return "", ErrTooLong
	}
	return b.String(), nil
}

// Damaged stands in for a stored text Unpack refuses, so one damaged row
// does not fail every search, listing and read that meets it.
const Damaged = "[this entry's stored text is damaged and cannot be read]"

// Text answers the text Pack compressed into stored, or Damaged when
// Unpack refuses it.
func Text(stored []byte) string {
	text, err := Unpack(stored)
	if err != nil {
		return Damaged
	}
	return text
}
