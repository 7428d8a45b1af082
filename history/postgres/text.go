package postgres

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

// Stored texts. From schema version 2 an entry's text is kept either in
// the column text as it is, or, when that saves at least an eighth,
// DEFLATE-compressed in the column packed, text then holding "". The
// compression runs here, on the host's cores, as the tokenizing does;
// the server stores the bytes. Notes are never compressed: the partial
// index entries_notes compares their text.

// compressMinBytes is the shortest text worth compressing.
const compressMinBytes = 128

var (
	deflaters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed)
		return w
	}}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(nil) }}
)

// pack answers text compressed, or nil when compressing it does not save
// an eighth.
func pack(text string) []byte {
	if len(text) < compressMinBytes {
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

// unpack answers the text of a row: text itself, or packed inflated when
// the row holds it compressed.
func unpack(text string, packed []byte) (string, error) {
	if packed == nil {
		return text, nil
	}
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(packed), nil); err != nil {
		return "", err
	}
	var b bytes.Buffer
	b.Grow(2 * len(packed))
	if _, err := b.ReadFrom(r); err != nil {
		return "", fmt.Errorf("a stored text does not inflate: %w", err)
	}
	return b.String(), nil
}

// leftChars answers the first n characters of s, as PostgreSQL's left()
// does on text.
func leftChars(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
