//go:build linux

package gitguard

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/agentloom/loom/sandbox"
	"golang.org/x/sys/unix"
)

// guardWorld is a workspace and a guard driven as the broker drives it
// (Enter, then Settle), the test standing in for a command's writes.
type guardWorld struct {
	t      *testing.T
	ws     string
	f      *Fences
	mu     sync.Mutex
	audits []Event
	seen   chan Event
}

func newGuardWorld(t *testing.T) *guardWorld {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &guardWorld{t: t, ws: filepath.Join(dir, "ws"), seen: make(chan Event, 256)}
	if err := os.MkdirAll(w.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	w.f = &Fences{Audit: func(e Event) {
		w.mu.Lock()
		w.audits = append(w.audits, e)
		w.mu.Unlock()
		select {
		case w.seen <- e:
		default:
		}
	}}
	w.f.markerDir = filepath.Join(dir, "markers")
	return w
}

// git runs git in dir with a private HOME and no system config.
func (w *guardWorld) git(dir string, args ...string) string {
	w.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = hostGitEnv(w.t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (w *guardWorld) write(rel, s string) {
	w.t.Helper()
	p := filepath.Join(w.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
		w.t.Fatal(err)
	}
}

func (w *guardWorld) read(rel string) string {
	b, _ := os.ReadFile(filepath.Join(w.ws, rel))
	return string(b)
}

// enter enters the guard for a command that may write the workspace,
// under the default protected paths.
func (w *guardWorld) enter() (*Hold, *Error) {
	g, err := w.f.Enter([]string{w.ws}, Protected(w.ws))
	if err != nil {
		return nil, asError(w.t, err)
	}
	return g, nil
}

// asError is err as the guard's *Error; anything else fails the test.
func asError(t testing.TB, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("not a guard *Error: %v", err)
	}
	return e
}

// settled is what a command's settlement reports of the guard, as the
// broker's Settled holds it.
type settled struct {
	GitNeutralised   []sandbox.Neutralisation
	ProtectedCreated []Moved
}

// settleHold settles g.
func settleHold(g *Hold) settled {
	n, c := g.Settle()
	return settled{GitNeutralised: n, ProtectedCreated: c}
}

// command enters the guard, runs do as the command's writes, and
// settles.
func (w *guardWorld) command(do func()) (settled, *Error) {
	w.t.Helper()
	g, d := w.enter()
	if d != nil {
		return settled{}, d
	}
	if do != nil {
		do()
	}
	s := settleHold(g)
	return s, nil
}

// hostGitEnv is an environment for a test's own git: a private HOME, no
// system config.
func hostGitEnv(t testing.TB) []string {
	return []string{"HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin", "GIT_TERMINAL_PROMPT=0"}
}

func neutralisedPaths(s settled) []string {
	var out []string
	for _, n := range s.GitNeutralised {
		out = append(out, n.Path)
	}
	return out
}

func TestGitGuardNeutralisesWhatACommandPlants(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	w.git(w.ws, "init", "-q")
	s, d := w.command(func() {
		w.git(w.ws, "init", "-q", "lib")
		w.git(filepath.Join(w.ws, "lib"), "config", "core.fsmonitor", filepath.Join(w.ws, "evil.sh"))
		w.git(filepath.Join(w.ws, "lib"), "config", "diff.x.textconv", "evil")
		w.write("lib/.git/hooks/post-checkout", "#!/bin/sh\n")
		w.write(".git/commondir", "../evil\n")
		w.write("deep/er/bare/HEAD", "ref: refs/heads/main\n")
		w.write("deep/er/bare/objects/.keep", "")
		w.write("deep/er/bare/config", "[core]\n\tpager = evil\n")
		w.write("sub/.git", "gitdir: ../planted\n")
		w.write("planted/config", "[core]\n\tsshCommand = evil\n")
		// A gitdir hidden in the object store the sweep does not walk,
		// reached through a .git symlink.
		w.write(".git/objects/zz/HEAD", "ref: refs/heads/main\n")
		w.write(".git/objects/zz/objects/.keep", "")
		w.write(".git/objects/zz/config", "[core]\n\tfsmonitor = evil\n")
		os.MkdirAll(filepath.Join(w.ws, "linked"), 0o755)
		os.Symlink("../.git/objects/zz", filepath.Join(w.ws, "linked/.git"))
	})
	if d != nil {
		t.Fatal(d)
	}
	cfg := w.read("lib/.git/config")
	if strings.Contains(cfg, "fsmonitor") || strings.Contains(cfg, "textconv") || !strings.Contains(cfg, "repositoryformatversion") {
		t.Errorf("lib/.git/config after settle:\n%s", cfg)
	}
	if _, err := os.Lstat(filepath.Join(w.ws, "lib/.git/hooks/post-checkout")); err == nil {
		t.Error("planted hook still in place")
	}
	if strings.Contains(w.read("deep/er/bare/config"), "pager") {
		t.Error("bare repository's pager survived")
	}
	if strings.Contains(w.read("planted/config"), "sshCommand") {
		t.Error("the config a .git file points at kept sshCommand")
	}
	if _, err := os.Lstat(filepath.Join(w.ws, ".git/commondir")); err == nil {
		t.Error("planted commondir still in place")
	}
	got := neutralisedPaths(s)
	for _, want := range []string{"lib/.git/config", "lib/.git/hooks/post-checkout", "deep/er/bare/config", "planted/config", ".git/objects/zz/config"} {
		if !slices.Contains(got, filepath.Join(w.ws, want)) {
			t.Errorf("settled.GitNeutralised lacks %s: %+v", want, s.GitNeutralised)
		}
	}
	if len(s.ProtectedCreated) != 1 || s.ProtectedCreated[0].Path != filepath.Join(w.ws, ".git/commondir") {
		t.Errorf("ProtectedCreated = %+v", s.ProtectedCreated)
	}
	w.mu.Lock()
	kinds := map[EventKind]int{}
	for _, e := range w.audits {
		kinds[e.Kind]++
	}
	w.mu.Unlock()
	if kinds[EventNeutralised] < 4 || kinds[EventQuarantined] < 1 {
		t.Errorf("audits: %v", kinds)
	}
	// The next command sees a clean slate: nothing more to do.
	s, d = w.command(nil)
	if d != nil || len(s.GitNeutralised) != 0 {
		t.Errorf("second command: %v %+v", d, s.GitNeutralised)
	}
}

// TestGitGuardLeavesCloneAndHostConfig: a fresh clone a command makes is
// untouched, and so are nested repositories' exec keys that were there
// before the broker's first command (the host's own).
func TestGitGuardLeavesCloneAndHostConfig(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	w.git(w.ws, "init", "-q", "src")
	w.git(filepath.Join(w.ws, "src"), "commit", "-q", "--allow-empty", "-m", "x")
	w.git(w.ws, "init", "-q", "mine")
	w.git(filepath.Join(w.ws, "mine"), "config", "core.hooksPath", ".husky")
	before := w.read("mine/.git/config")
	s, d := w.command(func() {
		w.git(w.ws, "clone", "-q", "src", "clone")
		w.git(filepath.Join(w.ws, "clone"), "commit", "-q", "--allow-empty", "-m", "y")
	})
	if d != nil {
		t.Fatal(d)
	}
	if len(s.GitNeutralised) != 0 || len(s.ProtectedCreated) != 0 {
		t.Errorf("a clone and a commit were neutralised: %+v %+v", s.GitNeutralised, s.ProtectedCreated)
	}
	if w.read("mine/.git/config") != before {
		t.Error("the host's own nested config was rewritten")
	}
	// Changed by a command, the same config loses the key.
	s, _ = w.command(func() { w.git(filepath.Join(w.ws, "mine"), "config", "user.name", "changed") })
	if strings.Contains(w.read("mine/.git/config"), "hooksPath") || len(s.GitNeutralised) != 1 {
		t.Errorf("changed config kept hooksPath: %+v", s.GitNeutralised)
	}
}

// TestGitGuardLive: while a command runs, what it plants is neutralised
// as inotify reports it, before the command settles.
func TestGitGuardLive(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	g, d := w.enter()
	if d != nil {
		t.Fatal(d)
	}
	w.write("a/b/c/.git/HEAD", "ref: refs/heads/main\n")
	w.write("a/b/c/.git/config", "[core]\n\tfsmonitor = evil\n")
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case e := <-w.seen:
			done = e.Kind == EventNeutralised && strings.HasSuffix(e.Path, "a/b/c/.git/config")
		case <-deadline:
			t.Fatal("nothing neutralised while the command ran")
		}
	}
	if strings.Contains(w.read("a/b/c/.git/config"), "fsmonitor") {
		t.Error("fsmonitor still set")
	}
	s := settleHold(g)
	if !slices.Contains(neutralisedPaths(s), filepath.Join(w.ws, "a/b/c/.git/config")) {
		t.Errorf("settlement does not report the live neutralisation: %+v", s.GitNeutralised)
	}
}

// TestGitGuardCrashMarker: a marker left by a host that died mid-command
// makes the next broker sweep the root whole before its first command;
// without it, what was there is taken as the host's.
func TestGitGuardCrashMarker(t *testing.T) {
	t.Parallel()
	for _, crashed := range []bool{true, false} {
		w := newGuardWorld(t)
		w.write("lib/.git/HEAD", "ref: refs/heads/main\n")
		w.write("lib/.git/config", "[core]\n\tfsmonitor = evil\n")
		if crashed {
			if err := w.f.setMarker(w.ws); err != nil {
				t.Fatal(err)
			}
		}
		if _, d := w.command(nil); d != nil {
			t.Fatal(d)
		}
		if got := strings.Contains(w.read("lib/.git/config"), "fsmonitor"); got == crashed {
			t.Errorf("crashed=%v: fsmonitor kept=%v", crashed, got)
		}
		if w.f.markerExists(w.ws) {
			t.Errorf("crashed=%v: marker left after the command settled", crashed)
		}
	}
}

// TestGitGuardFence: a neutralisation the broker cannot do (an immutable
// directory) fences the workspace until Unfence succeeds.
func TestGitGuardFence(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to set the immutable flag")
	}
	w := newGuardWorld(t)
	w.write("lib/.git/HEAD", "ref: refs/heads/main\n")
	w.write("lib/.git/config", "[core]\n\tbare = false\n")
	if _, d := w.command(func() {
		// The directory first, so not even a pass while the command runs
		// can rewrite the config (it stages a file beside it).
		setImmutable(t, filepath.Join(w.ws, "lib/.git"), true)
		f, err := os.OpenFile(filepath.Join(w.ws, "lib/.git/config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("\tfsmonitor = evil\n")
		f.Close()
	}); d != nil {
		t.Fatal(d)
	}
	t.Cleanup(func() { setImmutable(t, filepath.Join(w.ws, "lib/.git"), false) })
	_, d := w.command(nil)
	if d == nil || !d.Fenced || !strings.Contains(d.Msg, "Unfence") || !strings.Contains(d.Msg, "lib/.git/config") {
		t.Fatalf("next command: %v", d)
	}
	if !w.f.markerExists(w.ws) {
		t.Error("a fenced workspace lost its marker (a restarted host would not re-check it)")
	}
	var den *Error
	if err := w.f.Unfence(w.ws); !errors.As(err, &den) || !den.Fenced {
		t.Fatalf("Unfence with the cause still there: %v", err)
	}
	setImmutable(t, filepath.Join(w.ws, "lib/.git"), false)
	if err := w.f.Unfence(w.ws); err != nil {
		t.Fatalf("Unfence: %v", err)
	}
	if strings.Contains(w.read("lib/.git/config"), "fsmonitor") {
		t.Error("Unfence lifted the fence without neutralising")
	}
	if _, d := w.command(nil); d != nil {
		t.Fatalf("after Unfence: %v", d)
	}
}

func setImmutable(t *testing.T, p string, on bool) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var flags int
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.FS_IOC_GETFLAGS, uintptr(unsafe.Pointer(&flags))); e != 0 {
		t.Fatalf("FS_IOC_GETFLAGS: %v", e)
	}
	if on {
		flags |= fsImmutableFl
	} else {
		flags &^= fsImmutableFl
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.FS_IOC_SETFLAGS, uintptr(unsafe.Pointer(&flags))); e != 0 {
		t.Fatalf("FS_IOC_SETFLAGS: %v", e)
	}
}

// TestGitGuardOff is the control for the tests above: with the guard off
// the same plant survives.
func TestGitGuardOff(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	w.f.Test.Off = true
	w.command(func() {
		w.write("lib/.git/HEAD", "ref: refs/heads/main\n")
		w.write("lib/.git/config", "[core]\n\tfsmonitor = evil\n")
	})
	if !strings.Contains(w.read("lib/.git/config"), "fsmonitor") {
		t.Error("control: the plant did not survive with the guard off")
	}
}

// fsImmutableFl is FS_IMMUTABLE_FL from linux/fs.h.
const fsImmutableFl = 0x00000010

// TestGitGuardWithoutWatch: where inotify is unavailable every settle
// sweeps the root whole, and still finds what a command planted.
func TestGitGuardWithoutWatch(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	w.f.Test.NoWatch = true
	s, d := w.command(func() {
		w.write("x/y/.git/HEAD", "ref: refs/heads/main\n")
		w.write("x/y/.git/config", "[core]\n\thooksPath = h\n")
	})
	if d != nil {
		t.Fatal(d)
	}
	if strings.Contains(w.read("x/y/.git/config"), "hooksPath") || len(s.GitNeutralised) != 1 {
		t.Errorf("without a watch: %+v", s.GitNeutralised)
	}
	if r := w.f.roots[w.ws]; r == nil || r.watch != nil {
		t.Errorf("the guard watched anyway")
	}
}

// TestGitGuardHardLink: a write through a hard link elsewhere in the
// workspace (no event in the git directory) is still caught at settle.
func TestGitGuardHardLink(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	w.write("lib/.git/HEAD", "ref: refs/heads/main\n")
	w.write("lib/.git/config", "[core]\n\tbare = false\n")
	if _, d := w.command(func() {
		if err := os.Link(filepath.Join(w.ws, "lib/.git/config"), filepath.Join(w.ws, "innocent")); err != nil {
			t.Fatal(err)
		}
	}); d != nil {
		t.Fatal(d)
	}
	s, d := w.command(func() {
		f, err := os.OpenFile(filepath.Join(w.ws, "innocent"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("\tfsmonitor = evil\n")
		f.Close()
	})
	if d != nil {
		t.Fatal(d)
	}
	if strings.Contains(w.read("lib/.git/config"), "fsmonitor") {
		t.Errorf("write through a hard link survived: %+v", s.GitNeutralised)
	}
}

// TestGitGuardOverflowSweepsWhole: after an inotify queue overflow the
// next pass walks the root whole instead of trusting the dirty set.
func TestGitGuardOverflowSweepsWhole(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	g, d := w.enter()
	if d != nil {
		t.Fatal(d)
	}
	r := w.f.roots[w.ws]
	// The live sweeper (gitRoot.live), kicked by the overflow, takes the
	// watch's changes under r.mu: held here, it cannot take the overflow
	// before this test does (it did, now and then, and the test failed).
	r.mu.Lock()
	r.watch.overflowed()
	_, _, first := r.watch.take(true)
	_, _, second := r.watch.take(true)
	_, _, unsynced := r.watch.take(false)
	r.mu.Unlock()
	if !first {
		t.Error("an overflow did not ask for a whole sweep")
	}
	if second {
		t.Error("the overflow was not cleared by the whole sweep")
	}
	if !unsynced {
		t.Error("an unsynced take did not ask for a whole sweep")
	}
	settleHold(g)
}

// TestGitGuardWorkspaceReplaced: a workspace directory replaced between
// commands is guarded afresh, not through the old directory's handle.
func TestGitGuardWorkspaceReplaced(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	if _, d := w.command(nil); d != nil {
		t.Fatal(d)
	}
	if err := os.Rename(w.ws, w.ws+".old"); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(w.ws, 0o755)
	s, d := w.command(func() {
		w.write("n/.git/HEAD", "ref: refs/heads/main\n")
		w.write("n/.git/config", "[core]\n\tfsmonitor = evil\n")
	})
	if d != nil {
		t.Fatal(d)
	}
	if strings.Contains(w.read("n/.git/config"), "fsmonitor") {
		t.Errorf("the replaced workspace was not guarded: %+v", s.GitNeutralised)
	}
}

// TestGitGuardRootAsGitDir: a command makes the root itself the git
// directory (a .git file saying "gitdir: .", with HEAD, objects and refs
// beside it), so the host's git status in the root reads the root's own
// config, and runs its fsmonitor. The guard checks the root as it checks
// any git directory; the control turns the guard off and the payload
// runs. A .git file naming the root when the root is no git directory
// leaves the root's own project file named config alone.
func TestGitGuardRootAsGitDir(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		w := newGuardWorld(t)
		w.f.Test.Off = off
		mark := filepath.Join(t.TempDir(), "PWNED")
		if _, d := w.command(nil); d != nil {
			t.Fatal(d)
		}
		if _, d := w.command(func() {
			w.write("HEAD", "ref: refs/heads/main\n")
			w.write("objects/.keep", "")
			w.write("refs/heads/.keep", "")
			w.write("config", "[core]\n\tbare = false\n\tfsmonitor = \"touch "+mark+"; false\"\n")
			w.write(".git", "gitdir: .\n")
		}); d != nil {
			t.Fatal(d)
		}
		if got := hostGitRuns(t, w.ws, mark); got != off {
			t.Errorf("guard off=%v: host git ran the payload: %v", off, got)
		}
	}
	w := newGuardWorld(t)
	if _, d := w.command(func() {
		w.write("config", "not git's = [\n")
		w.write(".git", "gitdir: .\n")
	}); d != nil {
		t.Fatal(d)
	}
	if w.read("config") != "not git's = [\n" {
		t.Error("the root's own file named config was touched though the root is no git directory")
	}
}

// TestGitGuardGitDirBecomesPointer: a command turns a nested .git
// directory the guard knows into a pointer file (git's own submodule
// absorbing does this); the guard follows the pointer and does not fence
// the workspace for a git directory that is no directory any more.
func TestGitGuardGitDirBecomesPointer(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	w.write("sub/.git/HEAD", "ref: refs/heads/main\n")
	w.write("sub/.git/objects/.keep", "")
	if _, d := w.command(nil); d != nil {
		t.Fatal(d)
	}
	if _, d := w.command(func() {
		if err := os.Rename(filepath.Join(w.ws, "sub/.git"), filepath.Join(w.ws, "sub-gd")); err != nil {
			t.Fatal(err)
		}
		w.write("sub/.git", "gitdir: ../sub-gd\n")
		w.write("sub-gd/config", "[core]\n\tfsmonitor = evil\n")
	}); d != nil {
		t.Fatal(d)
	}
	if why := w.f.Fenced(w.ws); why != "" {
		t.Errorf("fenced: %s", why)
	}
	if strings.Contains(w.read("sub-gd/config"), "fsmonitor") {
		t.Error("the config the pointer names is armed")
	}
}

// TestGitGuardModulesPastDepthFence: a submodule git directory deeper
// under .git/modules than MaxModuleDepth cannot be vouched for, so the
// workspace is fenced rather than the armed directory left unchecked
// (the host's `git submodule update` reuses it). Control: the same plant
// one level shallower is neutralised.
func TestGitGuardModulesPastDepthFence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		levels int
		fenced bool
	}{{"within", MaxModuleDepth - 1, false}, {"past", MaxModuleDepth + 1, true}} {
		w := newGuardWorld(t)
		if _, d := w.command(nil); d != nil {
			t.Fatal(d)
		}
		// Built where the watch does not look, then moved into place as
		// the workspace's .git in one rename, as a command would.
		built := filepath.Join(t.TempDir(), "built")
		module := "modules"
		for i := range tc.levels {
			module += fmt.Sprintf("/n%d", i)
		}
		for rel, body := range map[string]string{
			"HEAD": "ref: refs/heads/main\n", "objects/info/.keep": "", "refs/heads/.keep": "", "config": "[core]\n",
			module + "/HEAD": "ref: refs/heads/main\n", module + "/objects/info/.keep": "", module + "/refs/heads/.keep": "",
			module + "/config": "[core]\n\tfsmonitor = \"touch /tmp/pwned; false\"\n",
		} {
			p := filepath.Join(built, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s, d := w.command(func() {
			if err := os.Rename(built, filepath.Join(w.ws, ".git")); err != nil {
				t.Fatal(err)
			}
		})
		if d != nil {
			t.Fatal(d)
		}
		fenced := w.f.Fenced(w.ws) != ""
		armed := strings.Contains(w.read(".git/"+module+"/config"), "fsmonitor")
		if fenced != tc.fenced || (!fenced && armed) {
			t.Errorf("%s (%d levels): fenced=%v armed=%v neutralised=%v", tc.name, tc.levels, fenced, armed, neutralisedPaths(s))
		}
	}
}

// TestGitGuardFencesARootSwappedForALink: a writable root a command
// renamed away and replaced with a link (to another repository, to /) is
// fenced at the next command, and the guard does not start over where
// the link leads; the control, with the guard taking the new place as
// the root's, admits the command and re-pins onto the link's target.
func TestGitGuardFencesARootSwappedForALink(t *testing.T) {
	t.Parallel()
	for _, check := range []bool{true, false} {
		w := newGuardWorld(t)
		w.git(w.ws, "init", "-q")
		elsewhere := filepath.Join(filepath.Dir(w.ws), "elsewhere")
		w.git(filepath.Dir(w.ws), "init", "-q", elsewhere)
		if _, d := w.command(nil); d != nil {
			t.Fatal(d)
		}
		if _, d := w.command(func() {
			os.Rename(w.ws, w.ws+".old")
			os.Symlink(elsewhere, w.ws)
		}); d != nil {
			t.Fatal(d)
		}
		w.f.mu.Lock()
		r := w.f.roots[w.ws]
		w.f.mu.Unlock()
		if !check {
			r.mu.Lock()
			r.resolved = elsewhere
			r.mu.Unlock()
		}
		_, d := w.command(nil)
		r.mu.Lock()
		swept := r.sweep != nil && sameDir(r.root, elsewhere)
		r.mu.Unlock()
		if check {
			if d == nil || !d.Fenced || w.f.Fenced(w.ws) == "" {
				t.Fatalf("the swapped root ran a command: %v", d)
			}
			if swept {
				t.Error("the guard pinned the link's target as the root")
			}
		} else if d != nil || !swept {
			t.Fatalf("control: denial %v, re-pinned onto the link's target %v: the test shows nothing", d, swept)
		}
	}
}

// livePass runs one acting pass over every guarded root now, as the
// watch's goroutine does when inotify reports a change mid-command.
func (w *guardWorld) livePass() {
	w.f.mu.Lock()
	roots := make([]*gitRoot, 0, len(w.f.roots))
	for _, r := range w.f.roots {
		roots = append(roots, r)
	}
	w.f.mu.Unlock()
	for _, r := range roots {
		r.mu.Lock()
		r.pass(true)
		r.mu.Unlock()
	}
}

// TestGitGuardFollowsAPointerWhoseTargetComesLater: a live pass that
// meets a .git file naming a directory not made yet keeps watching where
// it would appear, so the config a command writes there afterwards is
// neutralised (CI once ran the pass between the two writes).
func TestGitGuardFollowsAPointerWhoseTargetComesLater(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"../planted", "../a/b/planted", "../early"} {
		t.Run(target, func(t *testing.T) {
			w := newGuardWorld(t)
			w.git(w.ws, "init", "-q")
			dir := filepath.Dir(strings.TrimPrefix(target, "../"))
			_, d := w.command(func() {
				if target == "../early" {
					// The directory is there, not yet a git directory.
					os.MkdirAll(filepath.Join(w.ws, "early"), 0o755)
				}
				w.write("sub/.git", "gitdir: "+target+"\n")
				w.livePass()
				w.write(filepath.Join(dir, filepath.Base(target), "config"), "[core]\n\tsshCommand = evil\n")
			})
			if d != nil {
				t.Fatal(d)
			}
			if got := w.read(filepath.Join(dir, filepath.Base(target), "config")); strings.Contains(got, "sshCommand") {
				t.Errorf("the config the .git file names kept sshCommand:\n%s", got)
			}
		})
	}
}

// TestGitGuardWatchesADirectoryMadeWhereAWatchedOneMovedAway: a watched
// directory moved into a git store (which no walk opens again, so its
// watch keeps the old name) and another made at its path is watched in
// turn, so a repository planted in it (or a pointer's target there) is
// neutralised; before, the stale name made the new directory look
// watched already (red team).
func TestGitGuardWatchesADirectoryMadeWhereAWatchedOneMovedAway(t *testing.T) {
	t.Parallel()
	for _, plant := range []string{"pointer", "nested"} {
		t.Run(plant, func(t *testing.T) {
			w := newGuardWorld(t)
			w.git(w.ws, "init", "-q")
			for _, d := range []string{"a/b", "n/.git/objects"} {
				if err := os.MkdirAll(filepath.Join(w.ws, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			w.command(nil) // the baseline: a/b is watched
			pass := func() { syncWatch(); w.livePass() }
			cfg := "a/b/r/.git/config"
			_, d := w.command(func() {
				if plant == "pointer" {
					w.write("sub/.git", "gitdir: ../a/b/evil\n")
					cfg = "a/b/evil/config"
				}
				pass()
				if err := os.Rename(filepath.Join(w.ws, "a/b"), filepath.Join(w.ws, "n/.git/objects/b")); err != nil {
					t.Fatal(err)
				}
				pass()
				if err := os.Mkdir(filepath.Join(w.ws, "a/b"), 0o755); err != nil {
					t.Fatal(err)
				}
				pass()
				w.write(cfg, "[core]\n\tsshCommand = evil\n")
			})
			if d != nil {
				t.Fatal(d)
			}
			if got := w.read(cfg); strings.Contains(got, "sshCommand") {
				t.Errorf("%s kept sshCommand:\n%s", cfg, got)
			}
		})
	}
}

// TestFencesCloseStopsWatching: Close removes each idle root's inotify
// watches (the hub no longer delivers to it) and ends its live pass; the
// guard still neutralises what a later command plants, sweeping whole.
func TestFencesCloseStopsWatching(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	if _, d := w.command(nil); d != nil {
		t.Fatal(d)
	}
	r := w.f.roots[w.ws]
	if r == nil || r.watch == nil {
		if runtime.GOOS == "linux" {
			t.Fatal("the root has no watch to stop")
		}
		t.Skip("no inotify here: nothing to stop") // the guard then runs as TestGitGuardWithoutWatch
	}
	watch := r.watch
	w.f.Close()
	hub.mu.Lock()
	still := hub.roots[watch]
	hub.mu.Unlock()
	if r.watch != nil || still {
		t.Fatalf("after Close the root still watches: %v %v", r.watch != nil, still)
	}
	if _, open := <-watch.kick; open {
		t.Fatal("the live pass's channel is still open")
	}
	s, d := w.command(func() {
		w.write("x/.git/HEAD", "ref: refs/heads/main\n")
		w.write("x/.git/config", "[core]\n\thooksPath = h\n")
	})
	if d != nil {
		t.Fatal(d)
	}
	if strings.Contains(w.read("x/.git/config"), "hooksPath") || len(s.GitNeutralised) != 1 {
		t.Errorf("after Close: %+v", s.GitNeutralised)
	}
}
