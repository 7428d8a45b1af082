package postgres

import (
	"context"
	"testing"

	"github.com/agentloom/loom/history/historytest"
	"github.com/agentloom/loom/history/postgres/postgrestest"
)

// openTest opens a store on a fresh schema, dropped at cleanup.
func openTest(t testing.TB, o Options) *Store {
	t.Helper()
	url := postgrestest.URL(t)
	if o.Schema == "" {
		o.Schema = postgrestest.Schema(t, url)
	}
	s, err := Open(context.Background(), url, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the behaviour every index shows through history's
// seams (package historytest) against the PostgreSQL index.
func TestConformance(t *testing.T) {
	postgrestest.URL(t)
	historytest.Run(t, func(t *testing.T, o historytest.Options) historytest.Index {
		po := Options{NoSubstrings: o.NoSubstrings}
		if o.Again != nil {
			po.Schema = o.Again.(*Store).Schema()
		}
		return openTest(t, po)
	})
}
