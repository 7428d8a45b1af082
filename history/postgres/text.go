package postgres

import (
	"strconv"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/history/internal/packed"
)

// Stored texts. From schema version 2 an entry's text is kept either in
// the column text as it is, or, when that saves at least an eighth,
// DEFLATE-compressed in the column packed, text then holding "". The
// compression runs here, on the host's cores, as the tokenizing does;
// the server stores the bytes. Notes are never compressed: the partial
// index entries_notes compares their text.

// unpack answers the text of a row: text itself, or packed inflated when
// the row holds it compressed (packed.Damaged when it does not unpack).
func unpack(text string, p []byte) string {
	if p == nil {
		return text
	}
	return packed.Text(p)
}

// maxPackedBytes bounds what a read takes of a row's column packed. pack
// keeps a compressed text only when it saves an eighth, so no text of at
// most history.MaxEntryTextBytes packs to this many bytes: a longer
// column is damaged, and its first bytes are enough for unpack to find it
// damaged, without the server sending (and the host holding) the rest.
const maxPackedBytes = history.MaxEntryTextBytes

// packedColumn is the SQL reading col, a packed column, up to
// maxPackedBytes.
func packedColumn(col string) string {
	return "substring(" + col + " from 1 for " + strconv.Itoa(maxPackedBytes) + ")"
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
