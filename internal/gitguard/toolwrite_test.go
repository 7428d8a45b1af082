//go:build linux

package gitguard

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/sandbox"
	"pgregory.net/rapid"
)

// toolWrite writes rel as a harness-side tool does (outside any
// command) and reports it to the guard.
func (w *guardWorld) toolWrite(rel, s string) ([]sandbox.Neutralisation, error) {
	w.t.Helper()
	w.write(rel, s)
	return w.f.ToolWrite(w.ws, filepath.Join(w.ws, rel))
}

// hostGitRuns runs the host's plain git status in the workspace and
// reports whether a planted payload touched mark.
func hostGitRuns(t *testing.T, ws, mark string) bool {
	t.Helper()
	os.Remove(mark)
	cmd := exec.Command("git", "-C", ws, "status", "--short")
	cmd.Env = hostGitEnv(t)
	cmd.Run()
	_, err := os.Stat(mark)
	return err == nil
}

// plantStep is one file of the red team's fs_write-only plant.
type plantStep struct{ rel, content string }

func plantSteps(mark string) []plantStep {
	return []plantStep{
		{".git", "gitdir: evil\n"},
		{"evil/HEAD", "ref: refs/heads/main\n"},
		{"evil/config", "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch " + mark + "; false\"\n"},
		{"evil/objects/info/.keep", ""},
		{"evil/refs/heads/.keep", ""},
		{"evil/hooks/pre-commit", "#!/bin/sh\ntouch " + mark + ".hook\n"},
	}
}

// TestGitToolWriteNonGitWorkspace is the red team's first finding: in a
// workspace that is no repository, writes a tool makes alone plant a
// repository whose fsmonitor the host's plain git runs. Reported to the
// guard, they are neutralised as they land, whether or not a command
// ran there first; the control turns the guard off and the payload runs.
func TestGitToolWriteNonGitWorkspace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		commandFirst   bool
		off, wantArmed bool
	}{
		{name: "fresh root"},
		{name: "after a command", commandFirst: true},
		{name: "control: guard off", off: true, wantArmed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newGuardWorld(t)
			w.f.Test.Off = tc.off
			mark := filepath.Join(t.TempDir(), "PWNED")
			if tc.commandFirst {
				if _, d := w.command(nil); d != nil {
					t.Fatal(d)
				}
			}
			var all []string
			for _, st := range plantSteps(mark) {
				done, err := w.toolWrite(st.rel, st.content)
				if err != nil {
					t.Fatalf("%s: %v", st.rel, err)
				}
				for _, n := range done {
					all = append(all, n.Path)
				}
			}
			if got := hostGitRuns(t, w.ws, mark); got != tc.wantArmed {
				t.Fatalf("host git ran the payload: %v, want %v (neutralised %v)", got, tc.wantArmed, all)
			}
			if tc.off {
				return
			}
			if strings.Contains(w.read("evil/config"), "fsmonitor") {
				t.Errorf("evil/config still arms fsmonitor: %q", w.read("evil/config"))
			}
			if _, err := os.Lstat(filepath.Join(w.ws, "evil/hooks/pre-commit")); err == nil {
				t.Error("the hook a tool wrote is still in place")
			}
			// The next command settles and the plant stays disarmed.
			if _, d := w.command(nil); d != nil {
				t.Fatal(d)
			}
			if hostGitRuns(t, w.ws, mark) {
				t.Error("the payload ran after the next command")
			}
		})
	}
}

// TestGitToolWriteOrders plants the same repository in every order, each
// file written either by a tool between commands or by a command, with
// or without a command before: however it is assembled, at the end no
// config arms fsmonitor and no hook is in place.
func TestGitToolWriteOrders(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		w := newGuardWorld(t)
		steps := plantSteps(filepath.Join(t.TempDir(), "PWNED"))
		order := rapid.Permutation(steps).Draw(rt, "order")
		byTool := rapid.SliceOfN(rapid.Bool(), len(steps), len(steps)).Draw(rt, "byTool")
		if rapid.Bool().Draw(rt, "commandFirst") {
			if _, d := w.command(nil); d != nil {
				rt.Fatal(d)
			}
		}
		for i, st := range order {
			if byTool[i] {
				if _, err := w.toolWrite(st.rel, st.content); err != nil {
					rt.Fatalf("%s: %v", st.rel, err)
				}
				continue
			}
			// A command's write may fail: a protected path it creates
			// (Protected follows the .git pointer) is moved aside
			// while it runs.
			if _, d := w.command(func() {
				p := filepath.Join(w.ws, st.rel)
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(st.content), 0o755)
			}); d != nil {
				rt.Fatal(d)
			}
		}
		if c := w.read("evil/config"); strings.Contains(c, "fsmonitor") {
			rt.Fatalf("evil/config still arms fsmonitor: %q", c)
		}
		if _, err := os.Lstat(filepath.Join(w.ws, "evil/hooks/pre-commit")); err == nil {
			rt.Fatal("the hook is still in place")
		}
	})
}

// TestGitToolWriteNestedRepository is the red team's second finding: in
// a git workspace a command makes an embedded repository and a tool then
// writes its config (and a hook); the host's git status runs the
// embedded repository's fsmonitor unless the guard is told of the write.
func TestGitToolWriteNestedRepository(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("off=%v", off), func(t *testing.T) {
			t.Parallel()
			w := newGuardWorld(t)
			w.git(w.ws, "init", "-q")
			if _, d := w.command(func() {
				w.git(w.ws, "init", "-q", "sub")
				w.git(filepath.Join(w.ws, "sub"), "commit", "-q", "--allow-empty", "-m", "x")
				w.git(w.ws, "add", "sub")
			}); d != nil {
				t.Fatal(d)
			}
			w.f.Test.Off = off
			mark := filepath.Join(t.TempDir(), "PWNED")
			cfg := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tfsmonitor = \"touch " + mark + "; false\"\n"
			done, err := w.toolWrite("sub/.git/config", cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.toolWrite("sub/.git/hooks/post-checkout", "#!/bin/sh\ntouch "+mark+".hook\n"); err != nil {
				t.Fatal(err)
			}
			if got := hostGitRuns(t, w.ws, mark); got != off {
				t.Fatalf("host git ran the payload: %v (guard off: %v)", got, off)
			}
			if off {
				return
			}
			if len(done) != 1 || !strings.HasSuffix(done[0].Path, "sub/.git/config") || !strings.Contains(strings.Join(done[0].Removed, ","), "core.fsmonitor") {
				t.Errorf("neutralised %+v, want sub/.git/config without core.fsmonitor", done)
			}
			if _, err := os.Lstat(filepath.Join(w.ws, "sub/.git/hooks/post-checkout")); err == nil {
				t.Error("the hook a tool wrote is still in place")
			}
			if _, d := w.command(nil); d != nil {
				t.Fatal(d)
			}
			if hostGitRuns(t, w.ws, mark) {
				t.Error("the payload ran after the next command")
			}
		})
	}
}

// TestGitToolWriteOtherControlFiles covers the rest of the red team's
// list: a submodule's config and a linked worktree's config.worktree a
// tool writes are neutralised at once.
func TestGitToolWriteOtherControlFiles(t *testing.T) {
	t.Parallel()
	for _, rel := range []string{".git/modules/m/config", ".git/worktrees/x/config.worktree"} {
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			w := newGuardWorld(t)
			w.git(w.ws, "init", "-q")
			dir := filepath.Dir(rel)
			if _, d := w.command(func() {
				w.write(dir+"/HEAD", "ref: refs/heads/main\n")
				w.write(dir+"/commondir", "../..\n")
			}); d != nil {
				t.Fatal(d)
			}
			done, err := w.toolWrite(rel, "[core]\n\tfsmonitor = evil\n")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(w.read(rel), "fsmonitor") || len(done) != 1 {
				t.Errorf("%s = %q; neutralised %+v", rel, w.read(rel), done)
			}
		})
	}
}

// TestGitToolWriteKeepsHostChanges: the host's own change to its
// repository between commands stays the host's when a tool then writes
// an ordinary file (the tool write acts only on what it wrote and the
// git directories it made).
func TestGitToolWriteKeepsHostChanges(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	w.git(w.ws, "init", "-q")
	w.git(w.ws, "init", "-q", "sub") // a nested repository, not protected
	if _, d := w.command(nil); d != nil {
		t.Fatal(d)
	}
	for _, dir := range []string{w.ws, filepath.Join(w.ws, "sub")} {
		w.git(dir, "config", "alias.st", "status")
		w.git(dir, "config", "core.pager", "less")
	}
	for _, rel := range []string{"src/main.go", "config", "hooks/useThing.ts", "sub/src/main.go"} {
		done, err := w.toolWrite(rel, "package main\n")
		if err != nil || len(done) != 0 {
			t.Fatalf("%s: neutralised %+v, %v", rel, done, err)
		}
	}
	for _, cfg := range []string{".git/config", "sub/.git/config"} {
		if c := w.read(cfg); !strings.Contains(c, "alias") || !strings.Contains(c, "pager") {
			t.Errorf("the host's own %s lost its entries: %q", cfg, c)
		}
	}
	// The ordinary files a tool wrote are left as written.
	if w.read("config") != "package main\n" {
		t.Error("a tool's ordinary file named config was changed")
	}
}

// TestGitToolWriteIsNotASweep: a tool write costs the written path's
// ancestors, never a walk of the root.
func TestGitToolWriteIsNotASweep(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	for i := range 200 {
		w.write(fmt.Sprintf("tree/d%d/e/f.txt", i), "x")
	}
	if _, d := w.command(nil); d != nil {
		t.Fatal(d)
	}
	if _, err := w.toolWrite("a/b/c.txt", "x"); err != nil {
		t.Fatal(err)
	}
	r := w.f.roots[w.ws]
	r.mu.Lock()
	dirs := r.sweep.dirs
	r.mu.Unlock()
	if dirs != 0 {
		t.Errorf("the tool write walked %d directories", dirs)
	}
}

// TestGitToolWriteFence: a config a tool wrote that cannot be rewritten
// (its directory immutable) fences the workspace; the control shows the
// same write, rewritable, is neutralised without a fence.
func TestGitToolWriteFence(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to set the immutable flag")
	}
	w := newGuardWorld(t)
	w.write("evil/HEAD", "ref: refs/heads/main\n")
	w.write("evil/objects/.keep", "")
	if _, d := w.command(nil); d != nil {
		t.Fatal(d)
	}
	w.write("evil/config", "[core]\n\tfsmonitor = evil\n")
	setImmutable(t, filepath.Join(w.ws, "evil"), true)
	t.Cleanup(func() { setImmutable(t, filepath.Join(w.ws, "evil"), false) })
	_, err := w.f.ToolWrite(w.ws, filepath.Join(w.ws, "evil/config"))
	var den *Error
	if !errors.As(err, &den) || !den.Fenced || !strings.Contains(den.Msg, "evil/config") {
		t.Fatalf("GuardToolWrite on a config it cannot rewrite: %v", err)
	}
	if _, d := w.command(nil); d == nil || !d.Fenced {
		t.Fatalf("the next command ran in a fenced workspace: %v", d)
	}
	setImmutable(t, filepath.Join(w.ws, "evil"), false)
	if err := w.f.Unfence(w.ws); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(w.read("evil/config"), "fsmonitor") {
		t.Error("unfenced with the config still armed")
	}
	// Control: the same write now is neutralised without a fence.
	if _, err := w.toolWrite("evil/config", "[core]\n\tfsmonitor = evil\n"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(w.read("evil/config"), "fsmonitor") {
		t.Error("control: not neutralised")
	}
}

// TestGitToolWriteWithoutBroker: without a guard (a host that runs no
// commands: the broker's GuardToolWrite on a nil *Broker), ToolWriteAlone
// still neutralises what a tool wrote into a repository the host's git
// would use.
func TestGitToolWriteWithoutBroker(t *testing.T) {
	t.Parallel()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(t.TempDir(), "PWNED")
	for _, st := range plantSteps(mark) {
		p := filepath.Join(ws, st.rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(st.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ToolWriteAlone(ws, p); err != nil {
			t.Fatal(err)
		}
	}
	if hostGitRuns(t, ws, mark) {
		t.Error("host git ran the payload")
	}
	if _, err := ToolWriteAlone(ws, "/elsewhere/x"); err == nil {
		t.Error("a path outside the root was accepted")
	}
}

// TestGitToolWriteDuringCommand: a tool write while a command runs in the
// root is acted on like the command's own changes.
func TestGitToolWriteDuringCommand(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	w.git(w.ws, "init", "-q", "sub")
	if _, d := w.command(nil); d != nil {
		t.Fatal(d)
	}
	var toolErr error
	if _, d := w.command(func() {
		_, toolErr = w.toolWrite("sub/.git/config", "[core]\n\tfsmonitor = evil\n")
	}); d != nil {
		t.Fatal(d)
	}
	if toolErr != nil || strings.Contains(w.read("sub/.git/config"), "fsmonitor") {
		t.Fatalf("config %q, %v", w.read("sub/.git/config"), toolErr)
	}
}

// BenchmarkGuardToolWrite measures what one tool write costs the guard
// once the root is started: in a workspace that is no repository and in
// one that is (whose .git the ancestor check visits), at depth 1 and 6.
func BenchmarkGuardToolWrite(b *testing.B) {
	for _, repo := range []bool{false, true} {
		for _, rel := range []string{"f.txt", "a/b/c/d/e/f.txt"} {
			b.Run(fmt.Sprintf("repo=%v/%s", repo, rel), func(b *testing.B) {
				dir, err := filepath.EvalSymlinks(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				ws := filepath.Join(dir, "ws")
				p := filepath.Join(ws, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					b.Fatal(err)
				}
				if repo {
					cmd := exec.Command("git", "init", "-q", ws)
					cmd.Env = hostGitEnv(b)
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%v %s", err, out)
					}
				}
				br := &Fences{markerDir: filepath.Join(dir, "markers")}
				if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
					b.Fatal(err)
				}
				if _, err := br.ToolWrite(ws, p); err != nil { // starts the root
					b.Fatal(err)
				}
				b.ResetTimer()
				for b.Loop() {
					if _, err := br.ToolWrite(ws, p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
