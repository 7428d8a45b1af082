//go:build linux

package gitguard

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"pgregory.net/rapid"
)

// armedRepo makes a repository outside the workspace (where a command
// prepares one in its own /tmp) whose fsmonitor touches mark, and
// returns its .git directory and its HEAD commit.
func (w *guardWorld) armedRepo(mark string) (gitdir, head string) {
	w.t.Helper()
	dir := filepath.Join(w.t.TempDir(), "src")
	w.git(filepath.Dir(dir), "init", "-q", dir)
	w.git(dir, "commit", "-q", "--allow-empty", "-m", "x")
	w.git(dir, "config", "core.fsmonitor", "touch "+mark+"; false")
	return filepath.Join(dir, ".git"), strings.TrimSpace(w.git(dir, "rev-parse", "HEAD"))
}

// copyDir copies the directory from to rel in the workspace.
func (w *guardWorld) copyDir(from, rel string) {
	w.t.Helper()
	to := filepath.Join(w.ws, rel)
	os.MkdirAll(filepath.Dir(to), 0o755)
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		w.t.Fatalf("cp -a %s %s: %v %s", from, to, err, out)
	}
}

// gitlink records rel as a submodule in the workspace's index without
// reading what rel holds, so the host's git status recurses into it.
func (w *guardWorld) gitlink(rel, head string) {
	w.t.Helper()
	w.git(w.ws, "update-index", "--add", "--cacheinfo", "160000,"+head+","+rel)
}

func (w *guardWorld) symlink(to, rel string) {
	w.t.Helper()
	p := filepath.Join(w.ws, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(to, p); err != nil {
		w.t.Fatal(err)
	}
}

// fillObjectFanout makes every directory git keeps loose objects in
// (.git/objects/00 to ff) in the workspace's repository. Which of them
// exist depends on the ids of the objects a test's commits made, and so
// on the clock: with all of them there, a plant that writes where git
// keeps its objects fails on every run, not on the one run in 256 whose
// commit id began with that name.
func (w *guardWorld) fillObjectFanout() {
	w.t.Helper()
	for i := range 256 {
		if err := os.MkdirAll(filepath.Join(w.ws, fmt.Sprintf(".git/objects/%02x", i)), 0o755); err != nil {
			w.t.Fatal(err)
		}
	}
}

// pointerPlant is one way to leave a pointer git follows to an armed
// git directory: each step is one command's writes.
type pointerPlant struct {
	name  string
	steps []func(w *guardWorld, src, head string)
}

func pointerPlants() []pointerPlant {
	hide := func(w *guardWorld, src, _ string) { w.copyDir(src, ".git/objects/ev") }
	pointTo := func(content string) func(w *guardWorld, src, head string) {
		return func(w *guardWorld, _, head string) {
			w.write("sub/.git", strings.ReplaceAll(content, "$WS", w.ws))
			w.gitlink("sub", head)
		}
	}
	both := func(fs ...func(w *guardWorld, src, head string)) func(w *guardWorld, src, head string) {
		return func(w *guardWorld, src, head string) {
			for _, f := range fs {
				f(w, src, head)
			}
		}
	}
	return []pointerPlant{
		{"proc_root_into_store", []func(*guardWorld, string, string){both(hide, pointTo("gitdir: /proc/self/root$WS/.git/objects/ev\n"))}},
		{"proc_self_fd_root", []func(*guardWorld, string, string){both(hide, pointTo("gitdir: /dev/fd/../../self/root$WS/.git/objects/ev\n"))}},
		{"nul_cut", []func(*guardWorld, string, string){both(hide, pointTo("gitdir: ../.git/objects/ev\x00/../../../nothing\n"))}},
		{"nul_padded", []func(*guardWorld, string, string){both(hide, pointTo("gitdir: ../.git/objects/ev\x00"+strings.Repeat("a", 5000)+"\n"))}},
		{"trailing_space_kept", []func(*guardWorld, string, string){both(func(w *guardWorld, src, _ string) {
			w.copyDir(src, ".git/objects/ev ")
		}, pointTo("gitdir: ../.git/objects/ev \r\n"))}},
		{"target_in_a_later_command", []func(*guardWorld, string, string){
			both(func(w *guardWorld, _, _ string) { os.MkdirAll(filepath.Join(w.ws, ".git/objects"), 0o755) },
				pointTo("gitdir: ../.git/objects/ev\n")),
			hide,
		}},
		{"link_on_the_way_swapped_later", []func(*guardWorld, string, string){
			both(hide, func(w *guardWorld, _, _ string) {
				os.MkdirAll(filepath.Join(w.ws, ".git/objects/empty"), 0o755)
				w.symlink("empty", ".git/objects/lnk")
			}, pointTo("gitdir: ../.git/objects/lnk\n")),
			func(w *guardWorld, _, _ string) {
				w.symlink("ev", ".git/objects/lnk2")
				if err := os.Rename(filepath.Join(w.ws, ".git/objects/lnk2"), filepath.Join(w.ws, ".git/objects/lnk")); err != nil {
					w.t.Fatal(err)
				}
			},
		}},
		{"outside_the_root", []func(*guardWorld, string, string){func(w *guardWorld, src, head string) {
			w.write("sub/.git", "gitdir: "+src+"\n")
			w.gitlink("sub", head)
		}}},
		{"commondir_link_to_a_file", []func(*guardWorld, string, string){both(hide, func(w *guardWorld, src, _ string) {
			head, _ := os.ReadFile(filepath.Join(src, "HEAD"))
			w.write("wt/HEAD", string(head))
			w.write(".git/objects/cdir", filepath.Join(w.ws, ".git/objects/ev")+"\n")
			w.symlink("../.git/objects/cdir", "wt/commondir")
		}, pointTo("gitdir: ../wt\n"))}},
		{"git_link_through_proc", []func(*guardWorld, string, string){both(hide, func(w *guardWorld, _, head string) {
			w.symlink("/proc/self/root"+w.ws+"/.git/objects/ev", "sub/.git")
			w.gitlink("sub", head)
		})}},
		{"nested_repo_inside_a_fake_git_dir", []func(*guardWorld, string, string){func(w *guardWorld, src, head string) {
			// b looks like a git directory to a HEAD-and-objects test but
			// is none to git, which tracks the repository inside it.
			w.write("b/HEAD", "not a ref\n")
			w.write("b/objects/.keep", "")
			w.copyDir(src, "b/inner/.git")
			w.gitlink("b/inner", head)
		}}},
	}
}

// TestGitGuardPointerClass plants, as commands, every way of hiding an
// armed git directory behind a pointer the red team found or that the
// same class holds: the host's plain git status never runs the payload;
// the control, with the guard off, shows each plant arms the host's git.
// The workspace's object store holds every loose-object directory
// (fillObjectFanout), so no plant depends on the base commit's id.
func TestGitGuardPointerClass(t *testing.T) {
	t.Parallel()
	for _, pl := range pointerPlants() {
		t.Run(pl.name, func(t *testing.T) {
			t.Parallel()
			for _, mode := range []struct{ off, noWatch bool }{{false, false}, {false, true}, {true, false}} {
				off := mode.off
				w := newGuardWorld(t)
				w.f.Test.Off, w.f.Test.NoWatch = off, mode.noWatch
				w.git(w.ws, "init", "-q")
				w.git(w.ws, "commit", "-q", "--allow-empty", "-m", "base")
				w.fillObjectFanout()
				mark := filepath.Join(t.TempDir(), "PWNED")
				src, head := w.armedRepo(mark)
				if _, d := w.command(nil); d != nil {
					t.Fatal(d)
				}
				for _, step := range pl.steps {
					if _, d := w.command(func() { step(w, src, head) }); d != nil {
						t.Fatal(d)
					}
				}
				if got := hostGitRuns(t, w.ws, mark); got != off {
					t.Errorf("guard off=%v (no watch %v): host git ran the payload: %v", off, mode.noWatch, got)
				}
				if !off {
					if why := w.f.Fenced(w.ws); why != "" {
						t.Errorf("fenced where moving aside sufficed: %s", why)
					}
				}
			}
		})
	}
}

// TestGitGuardCommondirPlantLivePassAnywhere splits the
// commondir_link_to_a_file plant into the file system operations a
// command makes and runs a live pass (as the watch's goroutine does
// when inotify reports a change) before each one in turn, then before
// every one: wherever the pass lands, the host's git does not run the
// payload and the workspace is not fenced. The control (guard off) shows
// the operations alone arm the host's git.
func TestGitGuardCommondirPlantLivePassAnywhere(t *testing.T) {
	t.Parallel()
	ops := []func(w *guardWorld, src, head string){
		func(w *guardWorld, src, _ string) { w.copyDir(src, ".git/objects/ev") },
		func(w *guardWorld, _, _ string) { os.MkdirAll(filepath.Join(w.ws, "wt"), 0o755) },
		func(w *guardWorld, _, _ string) { w.write("wt/HEAD", "") },
		func(w *guardWorld, src, _ string) {
			head, _ := os.ReadFile(filepath.Join(src, "HEAD"))
			w.write("wt/HEAD", string(head))
		},
		func(w *guardWorld, _, _ string) {
			w.write(".git/objects/cdir", filepath.Join(w.ws, ".git/objects/ev")+"\n")
		},
		func(w *guardWorld, _, _ string) { w.symlink("../.git/objects/cdir", "wt/commondir") },
		func(w *guardWorld, _, _ string) { os.MkdirAll(filepath.Join(w.ws, "sub"), 0o755) },
		func(w *guardWorld, _, _ string) { w.write("sub/.git", "") },
		func(w *guardWorld, _, _ string) { w.write("sub/.git", "gitdir: ../wt\n") },
		func(w *guardWorld, _, head string) { w.gitlink("sub", head) },
	}
	type run struct {
		name string
		off  bool
		at   func(i int) bool // a live pass before operation i (len(ops): after the last)
	}
	runs := []run{
		{name: "control_guard_off", off: true, at: func(int) bool { return false }},
		{name: "before_every_operation", at: func(int) bool { return true }},
	}
	for k := 0; k <= len(ops); k++ {
		runs = append(runs, run{name: fmt.Sprintf("before_operation_%d", k), at: func(i int) bool { return i == k }})
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			w := newGuardWorld(t)
			w.f.Test.Off = r.off
			w.git(w.ws, "init", "-q")
			w.git(w.ws, "commit", "-q", "--allow-empty", "-m", "base")
			w.fillObjectFanout()
			mark := filepath.Join(t.TempDir(), "PWNED")
			src, head := w.armedRepo(mark)
			if _, d := w.command(nil); d != nil {
				t.Fatal(d)
			}
			s, d := w.command(func() {
				for i, op := range ops {
					if r.at(i) {
						w.livePass()
					}
					op(w, src, head)
				}
				if r.at(len(ops)) {
					w.livePass()
				}
			})
			if d != nil {
				t.Fatal(d)
			}
			if got := hostGitRuns(t, w.ws, mark); got != r.off {
				t.Errorf("guard off=%v: host git ran the payload: %v (neutralised %+v)", r.off, got, s.GitNeutralised)
			}
			if why := w.f.Fenced(w.ws); why != "" {
				t.Errorf("fenced where moving aside sufficed: %s", why)
			}
		})
	}
}

// TestGitGuardPointerMovedAside: a pointer a command wrote that the
// guard cannot follow with certainty is moved aside and reported, not
// merely fenced; the same pointer the host made is left alone.
func TestGitGuardPointerMovedAside(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, content string }{
		{"nul", "gitdir: ../x\x00y\n"},
		{"oversize", "gitdir: ../x" + strings.Repeat("/.", maxPointerFileBytes) + "\n"},
		{"proc", "gitdir: /proc/self/cwd\n"},
		{"dev", "gitdir: /dev/fd/3\n"},
		{"control_byte", "gitdir: ../x\ty\n"},
		{"outside", "gitdir: /usr\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			host := newGuardWorld(t)
			host.write("sub/.git", tc.content)
			if _, d := host.command(nil); d != nil {
				t.Fatal(d)
			}
			if host.read("sub/.git") != tc.content {
				t.Error("the host's own pointer was moved")
			}
			w := newGuardWorld(t)
			if _, d := w.command(nil); d != nil {
				t.Fatal(d)
			}
			s, d := w.command(func() { w.write("sub/.git", tc.content) })
			if d != nil {
				t.Fatal(d)
			}
			if _, err := os.Lstat(filepath.Join(w.ws, "sub/.git")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("sub/.git still in place: %v", err)
			}
			var moved bool
			for _, n := range s.GitNeutralised {
				moved = moved || n.Path == filepath.Join(w.ws, "sub/.git") && n.MovedTo != ""
			}
			if !moved {
				t.Errorf("not reported moved aside: %+v", s.GitNeutralised)
			}
			if why := w.f.Fenced(w.ws); why != "" {
				t.Errorf("fenced: %s", why)
			}
		})
	}
	// A plain pointer to a git directory beneath the root stays, and so
	// does one git refuses (it runs nothing; an empty one is also what
	// a pass may see of a pointer being written).
	for _, content := range []string{"gitdir: ../gd\n", "", "gitdir:../gd\n", "gitdir: \n"} {
		w := newGuardWorld(t)
		if _, d := w.command(nil); d != nil {
			t.Fatal(d)
		}
		if _, d := w.command(func() {
			w.write("gd/HEAD", "ref: refs/heads/main\n")
			w.write("gd/objects/.keep", "")
			w.write("sub/.git", content)
		}); d != nil {
			t.Fatal(d)
		}
		if b, err := os.ReadFile(filepath.Join(w.ws, "sub/.git")); err != nil || string(b) != content {
			t.Errorf("the pointer %q was moved: %q, %v", content, b, err)
		}
	}
}

// gitReadGitfile is git's read_gitfile_gently on a buffer, modelled on
// its C semantics byte for byte (a NUL-terminated copy, starts_with,
// the trailing line-end loop, the C string at offset 8): the oracle the
// parser is checked against.
func gitReadGitfile(data []byte) (string, bool) {
	buf := append(append([]byte{}, data...), 0)
	cstr := func(b []byte) []byte { return b[:bytes.IndexByte(b, 0)] }
	if !bytes.HasPrefix(cstr(buf), []byte("gitdir: ")) {
		return "", false
	}
	n := len(data)
	for buf[n-1] == '\n' || buf[n-1] == '\r' {
		n--
	}
	if n < 9 {
		return "", false
	}
	buf[n] = 0
	return string(cstr(buf[8:])), true
}

// gitReadCommondir is git's get_common_dir_noenv on a buffer: the data
// (empty refused), trailing line ends dropped, then read as a C string.
func gitReadCommondir(data []byte) (string, bool) {
	if len(data) == 0 {
		return "", false
	}
	buf := append(append([]byte{}, data...), 0)
	n := len(data)
	for n > 0 && (buf[n-1] == '\n' || buf[n-1] == '\r') {
		n--
	}
	buf[n] = 0
	return string(buf[:bytes.IndexByte(buf, 0)]), true
}

func checkGitPointer(t interface{ Fatalf(string, ...any) }, data []byte) {
	p, ok := parseGitfile(data)
	wp, wok := gitReadGitfile(data)
	if p != wp || ok != wok {
		t.Fatalf("parseGitfile(%q) = %q, %v; git reads %q, %v", data, p, ok, wp, wok)
	}
	c, cok := parseCommondir(data)
	wc, wcok := gitReadCommondir(data)
	if c != wc || cok != wcok {
		t.Fatalf("parseCommondir(%q) = %q, %v; git reads %q, %v", data, c, cok, wc, wcok)
	}
	// A plain pointer is one every reader takes the same way: the bytes
	// between the prefix and the line ends, NUL-free, never empty.
	if plainPointer(data, true) {
		want := strings.TrimRight(strings.TrimPrefix(string(data), gitfilePrefix), "\r\n")
		if !ok || p != want || p == "" || strings.ContainsRune(p, 0) {
			t.Fatalf("plain .git file %q read as %q, %v", data, p, ok)
		}
	}
	if plainPointer(data, false) {
		if want := strings.TrimRight(string(data), "\r\n"); !cok || c != want || c == "" {
			t.Fatalf("plain commondir %q read as %q, %v", data, c, cok)
		}
	}
	if bytes.IndexByte(data, 0) >= 0 && (plainPointer(data, true) || plainPointer(data, false)) {
		t.Fatalf("%q holds a NUL yet is plain", data)
	}
}

// FuzzGitPointer checks the pointer parsers against the model of git's
// own reading, and plainPointer's promise.
func FuzzGitPointer(f *testing.F) {
	for _, s := range []string{
		"gitdir: ../.git/modules/x\n", "gitdir: ../.git/objects/ev\x00/../../../nothing\n", "gitdir: \x00x\n",
		"gitdir: a\n\x00", "gitdir:x\n", "gitdir: \n", "gitdir: x \r\n\r\n", "", "\n", "../common\n", "\x00/abs",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkGitPointer(t, data) })
}

// TestGitPointerParseProperties is FuzzGitPointer's check over drawn
// inputs, so plain go test runs it: bytes biased toward the ones git's
// reading turns on.
func TestGitPointerParseProperties(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		pick := rapid.SampledFrom([]string{"gitdir: ", "gitdir:", "\x00", "\n", "\r", " ", "/", "..", "a", "é", "\t", "\xff"})
		var b []byte
		for _, s := range rapid.SliceOfN(pick, 0, 12).Draw(t, "parts") {
			b = append(b, s...)
		}
		checkGitPointer(t, b)
	})
}

// TestGitPointerResolveMatchesKernel: over drawn trees of directories
// and links (relative, absolute, looping, dangling) and drawn paths,
// resolveHost lands where the kernel does (os.Stat of the same path),
// or says the path is missing exactly when the kernel finds nothing.
func TestGitPointerResolveMatchesKernel(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		base, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			rt.Fatal(err)
		}
		names := []string{"a", "b", "c", "d"}
		name := rapid.SampledFrom(names)
		rel := func(label string) string {
			var parts []string
			for _, p := range rapid.SliceOfN(rapid.SampledFrom(append(names, "..", ".")), 1, 4).Draw(rt, label) {
				parts = append(parts, p)
			}
			return strings.Join(parts, "/")
		}
		for i, n := 0, rapid.IntRange(1, 10).Draw(rt, "entries"); i < n; i++ {
			p := filepath.Join(base, name.Draw(rt, "parent"), name.Draw(rt, "name"))
			if rapid.Bool().Draw(rt, "top") {
				p = filepath.Join(base, name.Draw(rt, "name"))
			}
			os.MkdirAll(filepath.Dir(p), 0o755)
			switch rapid.IntRange(0, 3).Draw(rt, "kind") {
			case 0:
				os.Mkdir(p, 0o755)
			case 1:
				os.Symlink(rel("link"), p)
			case 2:
				os.Symlink(filepath.Join(base, rel("abs")), p)
			default:
				os.WriteFile(p, nil, 0o644)
			}
		}
		p := filepath.Join(base, rel("path"))
		if rapid.Bool().Draw(rt, "relative") {
			p = rel("path")
		}
		res, err := resolveHost(osFS{}, splitPath(base), p)
		full := p
		if !filepath.IsAbs(p) {
			full = base + "/" + p
		}
		want, kerr := os.Stat(full)
		switch {
		case err != nil:
			if !errors.Is(kerr, syscall.ELOOP) {
				rt.Fatalf("resolveHost(%q): %v; the kernel: %v", p, err, kerr)
			}
		case res.missing:
			if kerr == nil {
				rt.Fatalf("resolveHost(%q) missing at %v; the kernel finds it", p, res.comps)
			}
		default:
			got, err := os.Lstat("/" + strings.Join(res.comps, "/"))
			if kerr != nil || err != nil || !os.SameFile(got, want) || got.IsDir() != res.dir {
				rt.Fatalf("resolveHost(%q) = /%s (%v); the kernel: %v", p, strings.Join(res.comps, "/"), err, kerr)
			}
		}
	})
}

// TestGitToolWritePointerThroughProc: a tool writes, on a model's
// behalf, a pointer through /proc to an armed git directory a command
// hid in the object store. GuardToolWrite moves it aside at once, and
// the host's git does not run the payload; the control (guard off)
// shows the write alone arms the host's git.
func TestGitToolWritePointerThroughProc(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		w := newGuardWorld(t)
		w.f.Test.Off = off
		w.git(w.ws, "init", "-q")
		w.git(w.ws, "commit", "-q", "--allow-empty", "-m", "base")
		mark := filepath.Join(t.TempDir(), "PWNED")
		src, head := w.armedRepo(mark)
		if _, d := w.command(func() { w.copyDir(src, ".git/objects/ev") }); d != nil {
			t.Fatal(d)
		}
		w.gitlink("sub", head)
		n, err := w.toolWrite("sub/.git", "gitdir: /proc/self/root"+w.ws+"/.git/objects/ev\n")
		if err != nil {
			t.Fatal(err)
		}
		if got := hostGitRuns(t, w.ws, mark); got != off {
			t.Errorf("guard off=%v: host git ran the payload: %v (neutralised %+v)", off, got, n)
		}
		if !off && (len(n) != 1 || n[0].MovedTo == "") {
			t.Errorf("GuardToolWrite did not report the pointer moved aside: %+v", n)
		}
	}
}

// TestGitGuardPointedHostRepositoriesStay: what a command's pointer
// names is judged only where the host's checkout could have written it.
// The host's repository and a nested one the host made, each with config
// entries off the allowlist (core.sshCommand, a diff driver) and a hook,
// stay as they are while a command adds a linked worktree of each (a
// pointer into their .git, whose commondir names it), and so does a
// separate git directory the command made itself; nothing is
// neutralised and the host's git works in every worktree. A bare
// repository the host keeps in the tree, which a checkout could have
// written, is judged: the command's pointers into it are moved aside, and
// the host's git in that worktree no longer reads its config.
func TestGitGuardPointedHostRepositoriesStay(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	hostRepo := func(dir string, args ...string) {
		w.git(w.ws, append([]string{"init", "-q"}, append(args, dir)...)...)
		w.git(w.ws, "--git-dir="+gitDirOf(w.ws, dir, args), "config", "core.sshCommand", "ssh -i "+filepath.Base(dir)+"-key")
		w.git(w.ws, "--git-dir="+gitDirOf(w.ws, dir, args), "config", "diff.img.textconv", "exiftool")
		w.write(filepath.Join(strings.TrimPrefix(gitDirOf(w.ws, dir, args), w.ws+"/"), "hooks/pre-commit"), "#!/bin/sh\nexit 0\n")
	}
	hostRepo(".")
	w.git(w.ws, "commit", "-q", "--allow-empty", "-m", "host")
	hostRepo("vendor/lib")
	w.git(filepath.Join(w.ws, "vendor/lib"), "commit", "-q", "--allow-empty", "-m", "lib")
	hostRepo("upstream", "--bare")
	w.git(w.ws, "push", "-q", "upstream", "HEAD:main")
	configs := []string{".git/config", "vendor/lib/.git/config", "upstream/config"}
	before := map[string]string{}
	for _, c := range configs {
		before[c] = w.read(c)
	}
	if _, d := w.command(nil); d != nil {
		t.Fatal(d)
	}
	s, d := w.command(func() {
		w.git(w.ws, "worktree", "add", "-q", "wt")
		w.git(filepath.Join(w.ws, "vendor/lib"), "worktree", "add", "-q", "../../wt2")
		w.git(w.ws, "init", "-q", "--separate-git-dir", filepath.Join(w.ws, "sep"), "sepwt")
		w.git(filepath.Join(w.ws, "sepwt"), "config", "user.name", "agent")
	})
	if d != nil {
		t.Fatal(d)
	}
	if len(s.GitNeutralised) != 0 {
		t.Errorf("neutralised: %+v", s.GitNeutralised)
	}
	for _, wt := range []string{"wt", "wt2", "sepwt"} {
		w.git(filepath.Join(w.ws, wt), "status", "--short")
	}
	for _, c := range configs {
		if got := w.read(c); got != before[c] {
			t.Errorf("the host's %s changed:\n%s", c, got)
		}
	}
	s, d = w.command(func() {
		// The guard's live pass may move the pointers aside before git
		// is done: the command's git may fail.
		cmd := exec.Command("git", "--git-dir=upstream", "worktree", "add", "-q", "wt3")
		cmd.Dir, cmd.Env = w.ws, hostGitEnv(t)
		cmd.Run()
	})
	if d != nil {
		t.Fatal(d)
	}
	// Whichever pointer the guard met first is moved aside (wt3/.git, or
	// the worktree's commondir, which leaves wt3/.git naming no
	// repository): the host's git in wt3 no longer reads upstream's
	// config.
	cmd := exec.Command("git", "-C", filepath.Join(w.ws, "wt3"), "config", "core.sshCommand")
	cmd.Env = hostGitEnv(t)
	if out, _ := cmd.Output(); strings.Contains(string(out), "upstream-key") || len(s.GitNeutralised) == 0 {
		t.Errorf("the host's git in wt3 reads the bare repository upstream's config (neutralised %+v)", s.GitNeutralised)
	}
	if got := w.read("upstream/config"); got != before["upstream/config"] {
		t.Errorf("the host's upstream/config changed:\n%s", got)
	}
	if why := w.f.Fenced(w.ws); why != "" {
		t.Errorf("fenced: %s", why)
	}
}

// gitDirOf is where git init, given args, puts dir's git directory.
func gitDirOf(ws, dir string, args []string) string {
	if slices.Contains(args, "--bare") {
		return filepath.Join(ws, dir)
	}
	return filepath.Join(ws, dir, ".git")
}
