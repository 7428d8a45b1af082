package sqlite

import (
	sqldriver "database/sql/driver"

	driver "modernc.org/sqlite"

	"github.com/agentloom/loom/history/internal/packed"
)

// Stored texts. From schema version 3 an entry's text is kept in
// entry_rows either as it is (TEXT) or, when that saves at least an
// eighth, DEFLATE-compressed (BLOB). The view entries shows every text
// as it was indexed, through the SQL function textFunc, and is the word
// index's external content, so FTS5 reads (for snippets and for indexing)
// the original text. Notes are never compressed: the partial index
// entries_notes compares their text as stored.

// textFunc is the SQL function answering a stored text as indexed
// (packed.Damaged for one that does not unpack).
const textFunc = "loom_text"

func init() {
	driver.MustRegisterDeterministicScalarFunction(textFunc, 1, func(_ *driver.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
		switch v := args[0].(type) {
		case []byte:
			return packed.Text(v), nil
		default:
			return v, nil
		}
	})
}

// storedText answers how text is stored: compressed (packed.Pack) when
// that saves at least an eighth, text itself otherwise.
func storedText(text string) any {
	if p := packed.Pack(text); p != nil {
		return p
	}
	return text
}
