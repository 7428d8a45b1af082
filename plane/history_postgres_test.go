package plane

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloom/loom/history/postgres/postgrestest"
)

// TestPostgresHistoryIsShared: two planes (two hosts, each its own
// workspace) given one HistoryURL and HistorySchema share the history: a
// note one remembers, the other finds; neither opens a SQLite file.
func TestPostgresHistoryIsShared(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.Schema(t, url)
	var planes []*Plane
	for range 2 {
		_, cfg := testDirs(t)
		cfg.Families = FamilyHistory
		cfg.HistoryURL, cfg.HistorySchema = url, schema
		p := newTestPlane(t, cfg)
		if p.Store != nil || p.PostgresStore == nil || p.PostgresStore.Schema() != schema {
			t.Fatalf("Store %v, PostgresStore %v", p.Store, p.PostgresStore)
		}
		planes = append(planes, p)
	}
	ctx := context.Background()
	res := planes[0].Dispatcher().Dispatch(ctx, planes[0].Call, "op-1", "step-1", []ToolCall{
		{ID: "1", Name: "remember", Args: json.RawMessage(`{"kind":"fact","title":"greek","description":"letters","note":"the file a.txt holds greek letters"}`)},
	})
	if o := res[0].Outcome; o.IsError {
		t.Fatalf("remember: %s", o.Text)
	}
	res = planes[1].Dispatcher().Dispatch(ctx, planes[1].Call, "op-2", "step-1", []ToolCall{
		{ID: "2", Name: "history_search", Args: json.RawMessage(`{"query":"greek","kind":"note"}`)},
	})
	if o := res[0].Outcome; o.IsError || !strings.Contains(o.Text, "holds **greek** letters") {
		t.Errorf("the other host's search:\n%s", o.Text)
	}
}
