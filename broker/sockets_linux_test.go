//go:build linux

package broker

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSocketsMaskedByResolvedForm: a socket the table shows bound
// through a link is masked where it resolves too (red team: a root
// written as the resolved directory reached a socket bound as
// /work/hl/u/app.sock); a shared socket's resolved form stays shared, and
// each directory is resolved once.
func TestSocketsMaskedByResolvedForm(t *testing.T) {
	t.Parallel()
	calls := map[string]int{}
	resolve := func(d string) (string, error) {
		calls[d]++
		switch d {
		case "/hl/u":
			return "/real/u", nil
		case "/gone":
			return "", os.ErrNotExist
		}
		return d, nil
	}
	got := withResolvedForms([]string{"/hl/u/a.sock", "/hl/u/b.sock", "/run/c.sock", "/gone/d.sock"}, []string{"/real/u/b.sock"}, resolve)
	want := []string{"/hl/u/a.sock", "/hl/u/b.sock", "/run/c.sock", "/gone/d.sock", "/real/u/a.sock"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if calls["/hl/u"] != 1 {
		t.Errorf("resolved /hl/u %d times", calls["/hl/u"])
	}
}

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
