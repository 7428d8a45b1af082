//go:build linux

package gitguard

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// benchGitPointers is how many submodules the pointer benchmark's
// workspace holds.
const benchGitPointers = 100

// pointerBenchSweep builds a workspace of benchGitPointers submodules,
// each either a .git file pointing into .git/modules (pointers) or a
// .git directory of its own, and returns a sweep that has recorded it.
func pointerBenchSweep(b *testing.B, pointers bool) *gitSweep {
	b.Helper()
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	write := func(rel, s string) {
		p := filepath.Join(ws, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(".git/HEAD", "ref: refs/heads/main\n")
	os.MkdirAll(filepath.Join(ws, ".git/objects"), 0o755)
	for i := range benchGitPointers {
		gd := fmt.Sprintf("sub%03d/.git", i)
		if pointers {
			gd = fmt.Sprintf(".git/modules/sub%03d", i)
			write(fmt.Sprintf("sub%03d/.git", i), fmt.Sprintf("gitdir: ../.git/modules/sub%03d\n", i))
		}
		write(gd+"/HEAD", "ref: refs/heads/main\n")
		write(gd+"/config", "[core]\n\tbare = false\n")
		os.MkdirAll(filepath.Join(ws, gd, "objects"), 0o755)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { root.Close() })
	s := newGitSweep(root, ws)
	s.begin(false)
	s.full()
	return s
}

// BenchmarkGitPointerPass measures one acting pass over the known git
// directories (what every live pass and every settle of a command that
// changed something runs) on a workspace of benchGitPointers submodules
// whose git directories are named by pointers and on one whose
// submodules hold their own .git directories, interleaved pass by pass;
// it reports the median of each and their difference. "changed" is a
// pass where one submodule directory changed (only pointers whose path
// passes a changed directory are followed again), "all" one that
// follows every pointer again (after an overflow, or without a watch).
func BenchmarkGitPointerPass(b *testing.B) {
	for _, v := range []struct {
		name  string
		dirty []string
	}{{"changed", []string{"sub007"}}, {"all", nil}} {
		b.Run(v.name, func(b *testing.B) {
			ptr, own := pointerBenchSweep(b, true), pointerBenchSweep(b, false)
			var tp, to []time.Duration
			pass := func(s *gitSweep) time.Duration {
				t0 := time.Now()
				s.begin(true)
				s.knownDirs()
				s.knownPointers(v.dirty)
				return time.Since(t0)
			}
			for b.Loop() {
				tp = append(tp, pass(ptr))
				to = append(to, pass(own))
			}
			med := func(d []time.Duration) float64 {
				slices.Sort(d)
				return float64(d[len(d)/2].Microseconds())
			}
			mp, mo := med(tp), med(to)
			b.ReportMetric(mp, "pointers-median-us")
			b.ReportMetric(mo, "own-dirs-median-us")
			b.ReportMetric(mp-mo, "pointer-overhead-us")
		})
	}
}
