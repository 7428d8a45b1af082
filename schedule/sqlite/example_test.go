package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/schedule/sqlite"
	"github.com/agentloom/loom/tool"
)

// A host keeps its schedules in a file beside its history, registers
// the three tools over them, and delivers what falls due.
func Example() {
	dir, _ := os.MkdirTemp("", "schedules")
	defer os.RemoveAll(dir)
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s, err := sqlite.Open(filepath.Join(dir, "schedules.sqlite"), sqlite.Options{
		Wake: schedule.WakesIdle,
		Now:  clock,
		Fire: func(_ context.Context, f sqlite.Fire) {
			fmt.Printf("fire %d of %s to %s: %s (wake %v)\n", f.N, f.ID, f.Target, f.Message, f.Wake)
		},
	})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	reg, err := tool.NewRegistry(schedule.Tools(s)...)
	if err != nil {
		panic(err)
	}
	call := &tool.Call{Strand: "main", Now: clock}
	o := reg.Dispatch(context.Background(), call, schedule.CreateToolName,
		json.RawMessage(`{"in_seconds":300,"message":"check the deploy","wake":true}`))
	fmt.Println(o.Text)
	now = now.Add(5 * time.Minute)
	if _, err := s.Tick(context.Background()); err != nil {
		panic(err)
	}
	// Output:
	// Schedule "sch-1" for "main": once at 2026-12-07T09:05:00Z; first fire 2026-12-07T09:05:00Z. A fire starts a run when the target is idle.
	// fire 1 of sch-1 to main: check the deploy (wake true)
}
