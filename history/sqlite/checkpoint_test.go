package sqlite

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentloom/loom/history"
)

// TestCheckpointRequests holds the background checkpoint requests to
// checkpointEntries: none below it, one at it, and at most one pending.
func TestCheckpointRequests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		adds    []int
		pending bool
		since   int
	}{
		{"nothing", nil, false, 0},
		{"one below the bound", []int{checkpointEntries - 1}, false, checkpointEntries - 1},
		{"at the bound", []int{checkpointEntries}, true, 0},
		{"reached in steps", []int{checkpointEntries - 1, 1}, true, 0},
		{"one past the bound", []int{checkpointEntries + 1}, true, 0},
		{"requests coalesce", []int{checkpointEntries, checkpointEntries, checkpointEntries}, true, 0},
		{"after a request", []int{checkpointEntries, 3}, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &checkpointer{kick: make(chan struct{}, 1)} // no goroutine: requests stay pending
			for _, n := range tc.adds {
				c.added(n)
			}
			if got := len(c.kick); got != map[bool]int{false: 0, true: 1}[tc.pending] {
				t.Errorf("%d requests pending, want pending=%v", got, tc.pending)
			}
			if c.since != tc.since {
				t.Errorf("since = %d, want %d", c.since, tc.since)
			}
		})
	}
}

// TestBackgroundCheckpoint checks that batched writes are copied back
// into the database file by the background checkpointer alone (the
// writer's autocheckpoint is off), and that Close stops its goroutine.
func TestBackgroundCheckpoint(t *testing.T) {
	s := openTest(t, Options{})
	if _, err := s.writer.Exec(`PRAGMA wal_autocheckpoint = 0`); err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		st, err := os.Stat(s.Path())
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	before := size()
	es := make([]history.Entry, checkpointEntries)
	for i := range es {
		es[i] = entry("s", fmt.Sprintf("e%d", i), fmt.Sprintf("checkpointed text %d", i))
	}
	mustIndex(t, s, es...)
	// Until a checkpoint runs, the batch lives in the WAL only. This is a
	// liveness wait, not a timing assertion: the deadline only turns a
	// checkpointer that never runs into a failure rather than a hang.
	for deadline := time.Now().Add(time.Minute); size() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the database file stayed at %d bytes: no background checkpoint ran", before)
		}
	}
	s.Close()
	select {
	case <-s.checkpoint.done:
	default:
		t.Error("Close left the checkpoint goroutine running")
	}
}
