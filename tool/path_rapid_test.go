package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/sandbox"
)

// TestResolveAgreesWithTheKernel builds random trees of directories and
// symlinks (relative, absolute, escaping, onto protected entries, cyclic)
// and checks every path the resolver accepts against the kernel's own
// resolution: an existing path resolves to what filepath.EvalSymlinks says,
// and anything accepted lies inside the workspace and outside protection.
func TestResolveAgreesWithTheKernel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		root, err := os.MkdirTemp("/var/tmp", "loom-rapid-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(root)
		ws := filepath.Join(root, "ws")
		outside := filepath.Join(root, "out")
		for _, d := range []string{ws + "/.git/hooks", outside} {
			os.MkdirAll(d, 0o755)
		}
		c := &Call{Workspace: ws, Base: protectedHooks(ws)}

		names := []string{"a", "b", "c", ".git", "hooks", ".."}
		dirs := []string{ws, ws + "/.git"}
		for i, n := 0, rapid.IntRange(0, 12).Draw(rt, "entries"); i < n; i++ {
			parent := rapid.SampledFrom(dirs).Draw(rt, "parent")
			name := rapid.SampledFrom(names[:5]).Draw(rt, "name")
			p := filepath.Join(parent, name)
			if rapid.Bool().Draw(rt, "isLink") {
				target := rapid.SampledFrom([]string{
					"..", "../..", "a", "b/c", ".git/hooks", "hooks", outside, ws + "/.git/hooks", "/", ws, name,
				}).Draw(rt, "target")
				os.Symlink(target, p)
			} else if os.Mkdir(p, 0o755) == nil {
				dirs = append(dirs, p)
			}
		}
		parts := rapid.SliceOfN(rapid.SampledFrom(append(names, "new.txt")), 1, 6).Draw(rt, "path")
		path := strings.Join(parts, "/")

		for _, resolve := range []func(string) (string, error){c.ResolveRead, c.ResolveWrite} {
			got, err := resolve(path)
			if err != nil {
				continue
			}
			realWS, _ := filepath.EvalSymlinks(ws)
			if !sandbox.Covers(realWS, got) {
				rt.Fatalf("%q resolved to %q, outside the workspace", path, got)
			}
			if sandbox.Covers(filepath.Join(realWS, ".git/hooks"), got) {
				rt.Fatalf("%q resolved to %q, under a protected entry", path, got)
			}
			if kernel, err := filepath.EvalSymlinks(ws + "/" + path); err == nil && kernel != got {
				rt.Fatalf("%q: resolver says %q, kernel says %q", path, got, kernel)
			}
		}
	})
}
