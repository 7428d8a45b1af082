//go:build linux

package jail

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestHomesMaskedByResolvedForm: a HOME named through a link is also
// listed as where it resolves, so secretTargets reaches it from roots
// written either way.
func TestHomesMaskedByResolvedForm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "realhome", "u")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "hl")
	if err := os.Symlink(filepath.Join(dir, "realhome"), link); err != nil {
		t.Fatal(err)
	}
	homes := hostHomes(filepath.Join(link, "u"))
	if !slices.Contains(homes, filepath.Join(link, "u")) || !slices.Contains(homes, real) {
		t.Fatalf("homes %v lack %s or %s", homes, filepath.Join(link, "u"), real)
	}
	if got := secretTargets([]string{real}, homes, func(string) []string { return nil }); !slices.Contains(got, filepath.Join(real, ".ssh")) {
		t.Errorf("secrets under the resolved home %v, want %s among them", got, filepath.Join(real, ".ssh"))
	}
}
