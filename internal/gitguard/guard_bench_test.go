//go:build linux

package gitguard

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/gitguard/guardtest"
)

// BenchmarkGuard measures what the guard costs a command on a
// workspace of guardtest.BenchDirs directories (the broker's BenchmarkGitGuard
// measures it around a jailed command).
//
//   - guard-per-command: the guard alone around a command that changes
//     nothing (Enter, Settle), after the first command's baseline sweep
//     and watch setup.
//   - full-sweep: one full pass over the workspace (what runs after an
//     inotify overflow, a host crash, or where inotify is unavailable).
//   - first-command: the first command's baseline sweep with the watch
//     set up, on fresh Fences each time.
func BenchmarkGuard(b *testing.B) {
	ws := guardtest.BenchWorkspace(b)
	writable, protected := []string{ws}, Protected(ws)
	b.Run("guard-per-command", func(b *testing.B) {
		br := &Fences{markerDir: b.TempDir()}
		oneCommand := func() {
			g, err := br.Enter(writable, protected)
			if err != nil {
				b.Fatal(err)
			}
			g.Settle()
		}
		oneCommand()
		benchMedian(b, nil, oneCommand)
	})
	b.Run("full-sweep", func(b *testing.B) {
		root, err := openDirRoot(ws)
		if err != nil {
			b.Fatal(err)
		}
		defer root.Close()
		s := newGitSweep(root, ws)
		s.begin(false)
		s.full()
		benchMedian(b, nil, func() {
			s.begin(true)
			s.full()
			s.knownDirs()
			if len(s.failed) > 0 || s.dirs < guardtest.BenchDirs {
				b.Fatalf("sweep: %d dirs, %v", s.dirs, s.failed)
			}
		})
	})
	b.Run("first-command", func(b *testing.B) {
		md := b.TempDir()
		benchMedian(b, nil, func() {
			br := &Fences{markerDir: md}
			g, err := br.Enter(writable, protected)
			if err != nil {
				b.Fatal(err)
			}
			g.Settle()
		})
	})
}

// benchNestedRepos is how many nested repositories the nested git guard
// benchmark's workspace holds (every second one with a submodule git
// directory whose core.worktree names its checkout, as git submodule
// add leaves it).
const benchNestedRepos = 50

// benchNestedWorkspace builds a repository of guardtest.BenchDirs directories
// holding benchNestedRepos nested repositories; it returns the
// workspace and the nested repositories' config files (relative).
func benchNestedWorkspace(b *testing.B) (string, []string) {
	b.Helper()
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	for i := 0; i < 100; i++ {
		for j := 0; j < 49; j++ {
			if err := os.MkdirAll(filepath.Join(ws, fmt.Sprintf("d%03d", i), fmt.Sprintf("e%02d", j)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
	}
	gitInit := func(p string) {
		cmd := exec.Command("git", "init", "-q", p)
		cmd.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git init: %v %s", err, out)
		}
	}
	gitInit(ws)
	var configs []string
	for i := 0; i < benchNestedRepos; i++ {
		r := fmt.Sprintf("d%03d/e%02d/r", 2*i, i%49)
		gitInit(filepath.Join(ws, r))
		configs = append(configs, r+"/.git/config")
		if i%2 == 1 {
			continue
		}
		m := filepath.Join(ws, r, ".git", "modules", "m")
		for _, d := range []string{filepath.Join(m, "objects"), filepath.Join(m, "refs"), filepath.Join(ws, r, "m")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		for f, data := range map[string]string{
			filepath.Join(m, "HEAD"):       "ref: refs/heads/main\n",
			filepath.Join(m, "config"):     "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n\tworktree = ../../../m\n",
			filepath.Join(ws, r, "m/.git"): "gitdir: ../.git/modules/m\n",
		} {
			if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		configs = append(configs, r+"/.git/modules/m/config")
	}
	return ws, configs
}

// BenchmarkGuardNested measures what the guard costs a command
// on a workspace of guardtest.BenchDirs directories and benchNestedRepos
// nested repositories (half with a submodule git directory).
//
//   - per-command: the guard around a command that changes nothing
//     (Enter, Settle), after the first command's baseline.
//   - per-command-configs-changed: the same around a command that
//     rewrites every nested repository's config (the writes included:
//     the live passes they set off run while the command does).
//   - full-sweep: one acting pass over the whole root.
//   - first-command: the first command's baseline sweep and watch
//     setup, on fresh Fences each time.
func BenchmarkGuardNested(b *testing.B) {
	ws, configs := benchNestedWorkspace(b)
	// Protected as for a command that made the nested repositories:
	// their configs are its own, acted on when changed.
	writable, protected := []string{ws}, []string{filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, ".git", "config")}
	b.Run("per-command", func(b *testing.B) {
		br := &Fences{markerDir: b.TempDir()}
		oneCommand := func() {
			g, err := br.Enter(writable, protected)
			if err != nil {
				b.Fatal(err)
			}
			if done, _ := g.Settle(); len(done) != 0 {
				b.Fatalf("neutralised %+v", done)
			}
		}
		oneCommand()
		benchCPU(b, func() { benchMedian(b, nil, oneCommand) })
	})
	b.Run("per-command-configs-changed", func(b *testing.B) {
		br := &Fences{markerDir: b.TempDir()}
		n := 0
		oneCommand := func() {
			g, err := br.Enter(writable, protected)
			if err != nil {
				b.Fatal(err)
			}
			n++
			for _, c := range configs {
				f := filepath.Join(ws, c)
				data, err := os.ReadFile(f)
				if err != nil {
					b.Fatal(err)
				}
				if i := bytes.Index(data, []byte("[user]")); i >= 0 {
					data = data[:i]
				}
				data = append(data, fmt.Sprintf("[user]\n\tname = n%d\n", n)...)
				if err := os.WriteFile(f, data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			if done, _ := g.Settle(); len(done) != 0 {
				b.Fatalf("neutralised %+v", done)
			}
		}
		oneCommand()
		benchCPU(b, func() { benchMedian(b, nil, oneCommand) })
	})
	b.Run("full-sweep", func(b *testing.B) {
		root, err := openDirRoot(ws)
		if err != nil {
			b.Fatal(err)
		}
		defer root.Close()
		s := newGitSweep(root, ws)
		s.begin(false)
		s.full()
		benchCPU(b, func() {
			benchMedian(b, nil, func() {
				s.begin(true)
				s.full()
				s.knownDirs()
				if len(s.failed) > 0 || len(s.done) > 0 || s.dirs < guardtest.BenchDirs {
					b.Fatalf("sweep: %d dirs, %v %+v", s.dirs, s.failed, s.done)
				}
			})
		})
	})
	b.Run("first-command", func(b *testing.B) {
		md := b.TempDir()
		benchCPU(b, func() {
			benchMedian(b, nil, func() {
				br := &Fences{markerDir: md}
				g, err := br.Enter(writable, protected)
				if err != nil {
					b.Fatal(err)
				}
				g.Settle()
			})
		})
	})
}

// benchCPU runs f (a benchmark's timed loop) and reports the process's
// CPU time (user and system, every goroutine's: the guard's live passes
// included) per iteration, which a loaded host disturbs less than the
// wall time.
func benchCPU(b *testing.B, f func()) {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	f()
	b.ReportMetric(ms(cpu()-start)/float64(b.N), "cpu-ms/op")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchMedian times f b.N times and reports the median in milliseconds;
// prepare, when not nil, runs untimed before each f.
func benchMedian(b *testing.B, prepare, f func()) time.Duration {
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if prepare != nil {
			b.StopTimer()
			prepare()
			b.StartTimer()
		}
		start := time.Now()
		f()
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	med := samples[len(samples)/2]
	b.ReportMetric(float64(med)/float64(time.Millisecond), "median-ms")
	return med
}
