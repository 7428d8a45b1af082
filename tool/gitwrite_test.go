//go:build linux

package tool

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
	"golang.org/x/sys/unix"
)

// gitWriteSession is a workspace that is no repository, with the file
// tools and bash, and a broker unless none is asked for.
func gitWriteSession(t *testing.T, withBroker bool) (*Registry, *Call) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return gitWriteSessionIn(t, ws, withBroker)
}

// gitWriteSessionIn is gitWriteSession on an existing workspace.
func gitWriteSessionIn(t *testing.T, ws string, withBroker bool) (*Registry, *Call) {
	t.Helper()
	c := &Call{
		Workspace: ws,
		OpID:      "op", StepID: t.Name(),
		Base: sandbox.Policy{
			SystemRoots:   sandbox.SystemReadableRoots(),
			WritableRoots: []string{ws},
			Protected:     broker.DefaultProtected(ws),
			Network:       sandbox.NetworkOff,
			EnvAllow:      []string{"PATH", "HOME"},
		},
		Env: map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": ws},
	}
	if withBroker {
		c.Broker = testBroker(t)
	}
	r, err := NewRegistry(append(FileTools(), shellTool())...)
	if err != nil {
		t.Fatal(err)
	}
	return r, c
}

// hostGitStatus runs the host's plain git status in ws (a private HOME,
// no system config) and reports whether a payload touched mark.
func hostGitStatus(t *testing.T, ws, mark string) bool {
	t.Helper()
	os.Remove(mark)
	cmd := exec.Command("git", "-C", ws, "status", "--short")
	cmd.Env = []string{"HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin", "GIT_TERMINAL_PROMPT=0"}
	cmd.Run()
	_, err := os.Stat(mark)
	return err == nil
}

func armedConfig(mark string) string {
	return "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch " + mark + "; false\"\n"
}

// TestWriteRefusesGitControlPath: fs_write and fs_edit refuse every path
// git's own files live under, in band, in any spelling git (or a
// case-insensitive filesystem) takes as .git, as given or through a
// link; names that merely start with .git are written.
func TestWriteRefusesGitControlPath(t *testing.T) {
	t.Parallel()
	r, c := gitWriteSession(t, true)
	ws := c.Workspace
	if err := os.MkdirAll(filepath.Join(ws, ".git/info"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(ws, "gitlink")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path    string
		refused bool
	}{
		{".git", true},
		{".git/info/exclude", true},
		{".GIT/config", true},
		{"sub/.Git/config", true},
		{"sub/.git/hooks/pre-commit", true},
		{".git./config", true},
		{".git /config", true},
		{"GIT~1/config", true},
		{".g\u200cit/config", true},
		{"gitlink/info/attributes", true},
		{filepath.Join(ws, ".git/modules/m/config"), true},
		{".gitignore", false},
		{".gitattributes", false},
		{".github/workflows/ci.yml", false},
		{"git/config", false},
		{"repo.git/notes", false},
		{".gitx/y", false},
	} {
		o := call(t, r, c, "fs_write", map[string]any{"path": tc.path, "content": "x\n"})
		if got := code(o) == CodeGitControlPath; got != tc.refused {
			t.Errorf("fs_write %q: refused=%v, want %v (%s)", tc.path, got, tc.refused, o.Text)
		}
		if tc.refused && !strings.Contains(o.Text, "bash") {
			t.Errorf("fs_write %q: the refusal does not say to use git through bash: %s", tc.path, o.Text)
		}
		// fs_edit on the same path, planned against an empty file the
		// host made.
		p := tc.path
		if !filepath.IsAbs(p) {
			p = filepath.Join(ws, p)
		}
		if tc.refused {
			if _, err := os.Lstat(p); err == nil && tc.path != ".git" {
				t.Errorf("fs_write %q wrote the file", tc.path)
			}
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if fi, err := os.Lstat(p); err != nil || fi.Mode().IsRegular() {
			os.WriteFile(p, []byte("a\n"), 0o644)
		} else {
			continue
		}
		e := call(t, r, c, "fs_edit", map[string]any{"path": tc.path, "digest": "0000000000000000-0",
			"hunks": []map[string]any{{"op": "append", "lines": []string{"b"}}}})
		if got := code(e) == CodeGitControlPath; got != tc.refused {
			t.Errorf("fs_edit %q: refused=%v, want %v (%s)", tc.path, got, tc.refused, e.Text)
		}
	}
}

// TestWriteGuardsPlantedRepository is the red team's fs_write plant in
// a workspace that is no repository: the files of a repository whose
// config arms fsmonitor, written with fs_write, and the .git pointer to
// it (which fs_write now refuses) made by a command, before or after.
// The host's plain git status must not run the payload. The control
// writes the same files, and the pointer, around the tools (a command's
// pointer to a git directory armed by anyone is moved aside by the
// guard) and the payload runs.
func TestWriteGuardsPlantedRepository(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		pointerFirst  bool
		aroundTheTool bool
	}{
		{name: "pointer last"},
		{name: "pointer first", pointerFirst: true},
		{name: "control: written around the tools", aroundTheTool: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, c := gitWriteSession(t, true)
			ws := c.Workspace
			mark := filepath.Join(t.TempDir(), "PWNED")
			pointer := func() {
				if tc.aroundTheTool {
					os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: evil\n"), 0o644)
					return
				}
				if o := call(t, r, c, "bash", map[string]any{"command": "printf 'gitdir: evil\\n' > .git"}); o.IsError {
					t.Fatal(o.Text)
				}
			}
			if tc.pointerFirst {
				pointer()
			}
			if o := call(t, r, c, "fs_write", map[string]any{"path": ".git", "content": "gitdir: evil\n"}); code(o) != CodeGitControlPath && !tc.pointerFirst {
				t.Fatalf("fs_write .git: %s", o.Text)
			}
			var reported []sandbox.Neutralisation
			for _, f := range []struct{ rel, content string }{
				{"evil/HEAD", "ref: refs/heads/main\n"},
				{"evil/config", armedConfig(mark)},
				{"evil/objects/info/.keep", ""},
				{"evil/refs/heads/.keep", ""},
				{"evil/hooks/pre-commit", "#!/bin/sh\ntouch " + mark + ".hook\n"},
			} {
				if tc.aroundTheTool {
					p := filepath.Join(ws, f.rel)
					os.MkdirAll(filepath.Dir(p), 0o755)
					os.WriteFile(p, []byte(f.content), 0o755)
					continue
				}
				o := call(t, r, c, "fs_write", map[string]any{"path": f.rel, "content": f.content})
				if o.IsError {
					t.Fatalf("fs_write %s: %s", f.rel, o.Text)
				}
				d := o.Details.(WriteDetails)
				reported = append(reported, d.GitNeutralised...)
				if len(d.GitNeutralised) > 0 && !strings.Contains(o.Text, "git guard") {
					t.Errorf("fs_write %s neutralised %v without saying so: %s", f.rel, d.GitNeutralised, o.Text)
				}
			}
			if !tc.pointerFirst {
				pointer()
			}
			armed := hostGitStatus(t, ws, mark)
			if armed != tc.aroundTheTool {
				t.Fatalf("host git ran the payload: %v, want %v (reported %+v)", armed, tc.aroundTheTool, reported)
			}
			if tc.aroundTheTool {
				return
			}
			if tc.pointerFirst && len(reported) == 0 {
				t.Error("with the pointer in place the writes neutralised nothing they reported")
			}
			if _, err := os.Lstat(filepath.Join(ws, "evil/hooks/pre-commit")); err == nil {
				t.Error("the hook fs_write planted is in place")
			}
		})
	}
}

// TestWriteGuardsNestedRepository is the red team's nested finding: a
// command makes an embedded repository whose git directory lies beside
// it (a .git file points there), and fs_write writes that directory's
// config; the host's git status at the top runs it unless guarded. The
// control writes the same config around the tool.
func TestWriteGuardsNestedRepository(t *testing.T) {
	t.Parallel()
	for _, around := range []bool{false, true} {
		t.Run(map[bool]string{false: "fs_write", true: "control: around the tool"}[around], func(t *testing.T) {
			t.Parallel()
			ws, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			r, c := gitWriteSessionIn(t, ws, true)
			mark := filepath.Join(t.TempDir(), "PWNED")
			o := call(t, r, c, "bash", map[string]any{"command": "export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@a GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@a; " +
				"git init -q sub && git -C sub commit -q --allow-empty -m x && git add sub && " +
				"mv sub/.git sub-gd && printf 'gitdir: ../sub-gd\\n' > sub/.git && git status --short"})
			if o.IsError {
				t.Fatal(o.Text)
			}
			cfg := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tfsmonitor = \"touch " + mark + "; false\"\n"
			if o := call(t, r, c, "fs_write", map[string]any{"path": "sub/.git", "content": "gitdir: ../sub-gd\n"}); code(o) != CodeGitControlPath {
				t.Errorf("fs_write sub/.git: %s", o.Text)
			}
			if around {
				os.WriteFile(filepath.Join(ws, "sub-gd/config"), []byte(cfg), 0o644)
			} else {
				o := call(t, r, c, "fs_write", map[string]any{"path": "sub-gd/config", "content": cfg})
				d, _ := o.Details.(WriteDetails)
				if o.IsError || len(d.GitNeutralised) != 1 || !strings.Contains(o.Text, "core.fsmonitor") {
					t.Fatalf("fs_write sub-gd/config: %+v %s", d, o.Text)
				}
			}
			if got := hostGitStatus(t, ws, mark); got != around {
				t.Fatalf("host git ran the payload: %v, want %v", got, around)
			}
			if around {
				return
			}
			// The next command leaves it disarmed.
			if o := call(t, r, c, "bash", map[string]any{"command": "true"}); o.IsError {
				t.Fatal(o.Text)
			}
			if hostGitStatus(t, ws, mark) {
				t.Error("the payload ran after the next command")
			}
		})
	}
}

// TestWriteGuardsWithoutBroker: a host with no broker runs no command,
// but its own git may still meet the workspace, so fs_write and fs_edit
// guard without one. The .git pointer is a leftover the host did not
// write; the control writes the config around the tools.
func TestWriteGuardsWithoutBroker(t *testing.T) {
	t.Parallel()
	for _, around := range []bool{false, true} {
		r, c := gitWriteSession(t, false)
		ws := c.Workspace
		mark := filepath.Join(t.TempDir(), "PWNED")
		os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: evil\n"), 0o644)
		for _, rel := range []string{"evil/HEAD", "evil/objects/info/.keep", "evil/refs/heads/.keep"} {
			if o := call(t, r, c, "fs_write", map[string]any{"path": rel, "content": "ref: refs/heads/main\n"}); o.IsError {
				t.Fatal(o.Text)
			}
		}
		if around {
			os.WriteFile(filepath.Join(ws, "evil/config"), []byte(armedConfig(mark)), 0o644)
		} else {
			// Written benign, then armed by fs_edit.
			o := call(t, r, c, "fs_write", map[string]any{"path": "evil/config", "content": "[core]\n"})
			d := o.Details.(WriteDetails)
			e := call(t, r, c, "fs_edit", map[string]any{"path": "evil/config", "digest": d.Digest,
				"hunks": []map[string]any{{"op": "append", "lines": []string{"\tfsmonitor = \"touch " + mark + "; false\""}}}})
			ed, _ := e.Details.(EditDetails)
			if e.IsError || len(ed.GitNeutralised) != 1 {
				t.Fatalf("fs_edit: %+v %s", ed, e.Text)
			}
		}
		if got := hostGitStatus(t, ws, mark); got != around {
			t.Errorf("around=%v: host git ran the payload: %v", around, got)
		}
	}
}

// TestWriteGuardFailureFences: a write the guard cannot make safe (the
// repository's directory is immutable, so its config cannot be
// rewritten) is an error outcome that says the file was written and the
// workspace is fenced; the next command is refused. The control is the
// same write with the directory writable.
func TestWriteGuardFailureFences(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to set the immutable flag")
	}
	for _, immutable := range []bool{true, false} {
		r, c := gitWriteSession(t, true)
		ws := c.Workspace
		for rel, s := range map[string]string{"evil/HEAD": "ref: refs/heads/main\n", "evil/objects/.keep": "", "evil/config": "[core]\n\tfsmonitor = evil\n"} {
			os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755)
			os.WriteFile(filepath.Join(ws, rel), []byte(s), 0o644)
		}
		if immutable {
			setDirImmutable(t, filepath.Join(ws, "evil"), true)
		}
		o := call(t, r, c, "fs_write", map[string]any{"path": "evil/objects/info/packs", "content": "\n"})
		if immutable {
			setDirImmutable(t, filepath.Join(ws, "evil"), false)
		}
		if !immutable {
			if o.IsError || strings.Contains(string(readFile(t, filepath.Join(ws, "evil/config"))), "fsmonitor") {
				t.Fatalf("control: %s", o.Text)
			}
			continue
		}
		if !o.IsError || code(o) != Code(sandbox.DenialWorkspaceFenced) || !strings.Contains(o.Text, "written") || !strings.Contains(o.Text, "fenced") {
			t.Fatalf("fs_write the guard cannot make safe: %v %q %s", o.IsError, code(o), o.Text)
		}
		if _, err := os.Stat(filepath.Join(ws, "evil/objects/info/packs")); err != nil {
			t.Errorf("the outcome says written, but: %v", err)
		}
		b := call(t, r, c, "bash", map[string]any{"command": "true"})
		if !b.IsError || !strings.Contains(b.Text, "could not neutralise") {
			t.Errorf("the next command ran in a fenced workspace: %s", b.Text)
		}
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// setDirImmutable sets or clears the immutable attribute of p.
func setDirImmutable(t *testing.T, p string, on bool) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const immutableFl = 0x10 // FS_IMMUTABLE_FL
	var flags int
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.FS_IOC_GETFLAGS, uintptr(unsafe.Pointer(&flags))); e != 0 {
		t.Fatal(errors.New("FS_IOC_GETFLAGS: " + e.Error()))
	}
	if on {
		flags |= immutableFl
	} else {
		flags &^= immutableFl
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.FS_IOC_SETFLAGS, uintptr(unsafe.Pointer(&flags))); e != 0 {
		t.Fatal(errors.New("FS_IOC_SETFLAGS: " + e.Error()))
	}
}
