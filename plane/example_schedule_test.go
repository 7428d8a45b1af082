package plane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/schedule"
	schedules "github.com/agentloom/loom/schedule/sqlite"
)

// A host wires the reference scheduler into a plane: it opens the
// schedules' file beside the history index (outside the workspace),
// hands it to Config.Schedules with the opt-in FamilyHost, runs its loop
// beside the model's, and closes it after the plane. The callback
// receives each fire after it is recorded: the message, its target
// strand and whether it may start a run (Wake); delivering it (into the
// strand's inbox, or as a new run when the strand is idle) is the
// host's. Here the clock is the example's, so Tick stands in for Run.
func Example_schedules() {
	root, _ := os.MkdirTemp("/var/tmp", "loom-plane-schedules-")
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)

	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s, err := schedules.Open(filepath.Join(root, "schedules.sqlite"), schedules.Options{
		Wake: schedule.WakesIdle, // the most the host grants; zero: fires only steer
		Now:  clock,              // nil: the wall clock
		Fire: func(_ context.Context, f schedules.Fire) {
			fmt.Printf("to %s: %q (fire %d, wake %v, last %v)\n", f.Target, f.Message, f.N, f.Wake, f.Last)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close() // after the plane's Close: deferred first, runs last

	p, err := plane.New(plane.Config{
		Workspace:   ws,
		BlobDir:     filepath.Join(root, "blobs"),
		HistoryPath: filepath.Join(root, "history.sqlite"),
		Scratch:     filepath.Join(root, "scratch"),
		Families:    plane.AllFamilies | plane.FamilyHost,
		Schedules:   s,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	// A real host runs the loop until it shuts down:
	//	ctx, stop := context.WithCancel(context.Background())
	//	defer stop()
	//	go s.Run(ctx)
	ctx := context.Background()
	call := p.CallFor(plane.DefaultStrand, "op-1")
	call.Now = clock
	out := p.Registry.Dispatch(ctx, call.At("op-1", "step-1", 0), schedule.CreateToolName,
		json.RawMessage(`{"in_seconds":300,"message":"check the deploy","wake":true}`))
	fmt.Println(out.Text)

	now = now.Add(5 * time.Minute)
	if _, err := s.Tick(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Schedule "sch-1" for "main": once at 2026-12-07T09:05:00Z; first fire 2026-12-07T09:05:00Z. A fire starts a run when the target is idle.
	// to main: "check the deploy" (fire 1, wake true, last true)
}
