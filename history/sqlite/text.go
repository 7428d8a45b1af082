package sqlite

import (
	"bytes"
	"compress/flate"
	sqldriver "database/sql/driver"
	"fmt"
	"io"
	"sync"

	driver "modernc.org/sqlite"
)

// Stored texts. From schema version 3 an entry's text is kept in
// entry_rows either as it is (TEXT) or, when that saves at least an
// eighth, DEFLATE-compressed (BLOB). The view entries shows every text
// as it was indexed, through the SQL function textFunc, and is the word
// index's external content, so FTS5 reads (for snippets and for indexing)
// the original text. Notes are never compressed: the partial index
// entries_notes compares their text as stored.
const (
	// compressMinBytes is the shortest text worth compressing.
	compressMinBytes = 128
	// textFunc is the SQL function answering a stored text as indexed.
	textFunc = "loom_text"
)

func init() {
	driver.MustRegisterDeterministicScalarFunction(textFunc, 1, func(_ *driver.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
		switch v := args[0].(type) {
		case []byte:
			return inflate(v)
		default:
			return v, nil
		}
	})
}

var (
	deflaters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed)
		return w
	}}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(nil) }}
)

// storedText answers how text is stored: DEFLATE-compressed bytes when
// that saves at least an eighth, text itself otherwise.
func storedText(text string) any {
	if len(text) < compressMinBytes {
		return text
	}
	var buf bytes.Buffer
	buf.Grow(len(text) * 3 / 4)
	w := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(w)
	w.Reset(&buf)
	if _, err := io.WriteString(w, text); err != nil {
		return text
	}
	if err := w.Close(); err != nil || buf.Len() > len(text)-len(text)/8 {
		return text
	}
	return buf.Bytes()
}

// inflate answers the text compressed stored.
func inflate(stored []byte) (string, error) {
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(stored), nil); err != nil {
		return "", err
	}
	var b bytes.Buffer
	b.Grow(2 * len(stored))
	if _, err := b.ReadFrom(r); err != nil {
		return "", fmt.Errorf("a stored text does not inflate: %w", err)
	}
	return b.String(), nil
}
