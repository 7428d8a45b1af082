package jail

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestProtectPlan(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{".git/hooks", ".git/objects", "sub/.git/modules/x/hooks", ".husky"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	os.WriteFile(filepath.Join(ws, ".git", "config"), nil, 0o644)
	os.Symlink(filepath.Join(ws, ".husky"), filepath.Join(ws, "sub", ".git", "hooks"))
	j := func(p ...string) string { return filepath.Join(append([]string{ws}, p...)...) }
	pins, ro, links := protectPlan([]string{
		j(".git", "hooks"), j(".git", "config"), j(".git", "missing"),
		j("sub", ".git", "modules", "x", "hooks"), j("sub", ".git", "hooks"),
	}, []string{ws})
	wantRO := []string{j(".husky"), j(".git", "hooks"), j(".git", "config"), j("sub", ".git", "modules", "x", "hooks")}
	wantPins := []string{ws, j(".git"), j("sub"), j("sub", ".git"), j("sub", ".git", "modules"), j("sub", ".git", "modules", "x")}
	wantLinks := []string{j("sub", ".git", "hooks")}
	slices.Sort(ro)
	slices.Sort(wantRO)
	slices.Sort(pins)
	slices.Sort(wantPins)
	if !slices.Equal(ro, wantRO) {
		t.Errorf("read-only binds\n got %v\nwant %v", ro, wantRO)
	}
	if !slices.Equal(pins, wantPins) {
		t.Errorf("pins\n got %v\nwant %v", pins, wantPins)
	}
	if !slices.Equal(links, wantLinks) {
		t.Errorf("links\n got %v\nwant %v", links, wantLinks)
	}
	// Outside every writable root nothing needs pinning.
	pins, ro, _ = protectPlan([]string{j(".git", "hooks")}, nil)
	if len(pins) != 0 || len(ro) != 1 {
		t.Errorf("no writable roots: pins %v ro %v", pins, ro)
	}
}
