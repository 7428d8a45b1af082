package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/agentloom/loom/history/historytest"
)

// TestConformance runs the behaviour every index shows through history's
// seams (package historytest) against the SQLite index.
func TestConformance(t *testing.T) {
	t.Parallel()
	historytest.Run(t, func(t *testing.T, o historytest.Options) historytest.Index {
		path := filepath.Join(t.TempDir(), "history.db")
		if o.Again != nil {
			path = o.Again.(*Store).Path()
		}
		s, err := Open(path, Options{NoSubstrings: o.NoSubstrings})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
