package gitguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestQuarantineAside(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	os.MkdirAll(filepath.Join(real, "hooks"), 0o755)
	os.WriteFile(filepath.Join(real, "hooks", "pre-commit"), []byte("evil"), 0o755)
	to, err := quarantineAside(filepath.Join(real, "hooks"))
	if err != nil || !strings.HasPrefix(filepath.Base(to), "hooks"+QuarantineSuffix) {
		t.Fatalf("quarantine: %q %v", to, err)
	}
	if _, err := os.Stat(filepath.Join(to, "pre-commit")); err != nil {
		t.Fatalf("moved content missing: %v", err)
	}
	// A symlinked parent must not redirect the rename.
	os.MkdirAll(filepath.Join(real, "x"), 0o755)
	os.Symlink(real, filepath.Join(dir, "link"))
	if _, err := quarantineAside(filepath.Join(dir, "link", "x")); err == nil {
		t.Fatal("quarantine followed a symlinked parent")
	}
	if _, err := os.Stat(filepath.Join(real, "x")); err != nil {
		t.Fatal("the symlink target was touched")
	}
}
