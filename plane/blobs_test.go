package plane

import (
	"path/filepath"
	"testing"

	"github.com/agentloom/loom/blob"
)

// TestBlobOptionsBoundTheStore: Config.BlobOptions reach the store New
// opens: a put past the session budget chosen is refused with
// blob.CodeSpillBudget, and Close ends the session, removing its lease.
func TestBlobOptionsBoundTheStore(t *testing.T) {
	_, cfg := testDirs(t)
	cfg.Families = FamilyFiles
	cfg.BlobOptions = blob.Options{SessionBytes: 1 << 20}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Blobs.Put(make([]byte, 1<<20)); err != nil {
		t.Fatalf("a put at the session budget: %v", err)
	}
	_, err = p.Blobs.Put(make([]byte, 1))
	if blob.CodeOf(err) != blob.CodeSpillBudget {
		t.Fatalf("a put past the session budget: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if leases, _ := filepath.Glob(filepath.Join(cfg.BlobDir, "ledger", "*.lease")); len(leases) != 0 {
		t.Fatalf("leases left after Close: %v", leases)
	}
}
