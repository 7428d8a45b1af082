package main

import (
	"io"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
)

// TestBlobBudgetFlags: budgets out of range are refused before anything
// is made, and the session budget chosen reaches the plane's store: a
// spill past it is refused with blob.CodeSpillBudget.
func TestBlobBudgetFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-blobs-max-mib", "0"},
		{"-blobs-session-mib", "-1"},
		{"-blobs-max-mib", "2000000000"},
	} {
		if err := run(args, io.Discard); err == nil || !strings.Contains(err.Error(), "between 1 and") {
			t.Errorf("run(%q) = %v, want a range refusal", args, err)
		}
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ws, _ := dirs(t)
	p, err := newPlane(config{workspace: ws, blobsMaxMiB: 4, blobsSessionMiB: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = p.Blobs.Put(make([]byte, 1<<20+1))
	if blob.CodeOf(err) != blob.CodeSpillBudget {
		t.Fatalf("a put past the 1 MiB session budget: %v", err)
	}
}
