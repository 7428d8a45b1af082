package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/schedule/scheduletest"
	"github.com/agentloom/loom/tool"
)

// TestConformance runs the behaviour every scheduler shows through the
// seam (package scheduletest) against the SQLite file.
func TestConformance(t *testing.T) {
	var n atomic.Int64
	scheduletest.Run(t, func(t *testing.T, o scheduletest.Options) scheduletest.Scheduler {
		path := filepath.Join(t.TempDir(), fmt.Sprint(n.Add(1), ".sqlite"))
		if o.Again != nil {
			path = o.Again.(*Scheduler).Path()
		}
		so := Options{Limits: o.Limits, Wake: o.Wake, Now: o.Now}
		if o.Fire != nil {
			so.Fire = func(ctx context.Context, f Fire) {
				o.Fire(ctx, scheduletest.Fire{ID: f.ID, Owner: f.Owner, Target: f.Target, Message: f.Message, Wake: f.Wake, Due: f.Due, N: f.N, Last: f.Last})
			}
		}
		s, err := Open(path, so)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestOpenRefusesPathsThatAreNoFile: the path is a plain file path.
func TestOpenRefusesPathsThatAreNoFile(t *testing.T) {
	for _, p := range []string{"", ":memory:", "a?mode=memory", "a#b", "a%20b"} {
		if _, err := Open(p, Options{}); tool.CodeOf(err) != schedule.CodeSchedulesUnavailable {
			t.Errorf("Open(%q): %v", p, err)
		}
	}
}
