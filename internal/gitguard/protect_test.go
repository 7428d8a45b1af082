package gitguard

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tree builds files under root: a key ending in "/" is a directory, a
// key prefixed "->" in its value is a symlink to the rest of the value.
func tree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case name[len(name)-1] == '/':
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case len(content) > 2 && content[:2] == "->":
			if err := os.Symlink(content[2:], p); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestDefaultProtected(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string // relative to a temp dir; workspace is "ws"
		// want lists entries relative to the temp dir that must be
		// present; deny lists entries that must not be.
		want, deny []string
	}{
		{
			name: "no repository: the lexical entries only",
			want: []string{"ws/.git/config", "ws/.git/hooks"},
		},
		{
			name:  "ordinary repository",
			files: map[string]string{"ws/.git/HEAD": "ref: refs/heads/main\n", "ws/.git/hooks/": "", "ws/.git/config": "[core]\n"},
			want:  []string{"ws/.git/config", "ws/.git/hooks", "ws/.git/config.worktree"},
			deny:  []string{"ws/.git/objects", "ws/.git"}, // a .git directory stays writable (objects, index)
		},
		{
			name: "linked worktree: .git is a file",
			files: map[string]string{
				"main/.git/HEAD":                   "ref: refs/heads/main\n",
				"main/.git/config":                 "[core]\n",
				"main/.git/worktrees/wt/HEAD":      "ref: refs/heads/wt\n",
				"main/.git/worktrees/wt/commondir": "../..\n",
				"ws/.git":                          "gitdir: ../main/.git/worktrees/wt\n",
			},
			want: []string{
				"ws/.git", "ws/.git/config", "ws/.git/hooks", "main/.git/worktrees/wt/commondir",
				"main/.git/worktrees/wt/hooks", "main/.git/worktrees/wt/config",
				"main/.git/hooks", "main/.git/config",
			},
			deny: []string{"main/.git/worktrees/wt", "main/.git/objects"},
		},
		{
			name: "submodules, nested and with slashes in the name",
			files: map[string]string{
				"ws/.git/HEAD":                           "ref: refs/heads/main\n",
				"ws/.git/modules/lib/HEAD":               "x\n",
				"ws/.git/modules/lib/modules/inner/HEAD": "x\n",
				"ws/.git/modules/vendor/dep/HEAD":        "x\n",
				"ws/.git/modules/vendor/dep/config":      "[core]\n\tworktree = ../../../../vendor/dep\n\thooksPath = .hooks\n",
			},
			want: []string{
				"ws/.git/modules/lib/hooks", "ws/.git/modules/lib/config",
				"ws/.git/modules/lib/modules/inner/hooks", "ws/.git/modules/lib/modules/inner/config",
				"ws/.git/modules/vendor/dep/hooks", "ws/.git/modules/vendor/dep/config",
				"ws/vendor/dep/.hooks", // relative to the submodule's worktree
			},
			deny: []string{"ws/.git/modules/vendor/hooks"},
		},
		{
			name: "submodule checkout: .git file into the superproject's modules",
			files: map[string]string{
				"super/.git/modules/sub/HEAD": "x\n",
				"ws/.git":                     "gitdir: " + "../super/.git/modules/sub" + "\n",
			},
			want: []string{"super/.git/modules/sub/hooks", "super/.git/modules/sub/config"},
		},
		{
			name: "symlinked hooks directory: the target too",
			files: map[string]string{
				"ws/.git/HEAD":     "x\n",
				"elsewhere/hooks/": "",
				"ws/.git/hooks":    "->../../elsewhere/hooks",
			},
			want: []string{"ws/.git/hooks", "elsewhere/hooks"},
		},
		{
			name: "core.hooksPath and includes",
			files: map[string]string{
				"ws/.git/HEAD":      "x\n",
				"ws/.git/config":    "[core]\n\tbare = false\n\thooksPath = \".husky/_\" # husky\n[include]\n\tpath = extra.cfg\n[includeIf \"gitdir:~/\"]\n  Path = /abs/cond.cfg\n",
				"ws/.git/extra.cfg": "[core]\nhookspath=/abs/hooks2\n",
			},
			want: []string{"ws/.husky/_", "ws/.git/extra.cfg", "/abs/cond.cfg", "/abs/hooks2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			tree(t, dir, tt.files)
			got := Protected(filepath.Join(dir, "ws"))
			abs := func(p string) string {
				if filepath.IsAbs(p) {
					return p
				}
				return filepath.Join(dir, p)
			}
			for _, w := range tt.want {
				if !slices.Contains(got, abs(w)) {
					t.Errorf("missing %s in %v", w, got)
				}
			}
			for _, d := range tt.deny {
				if slices.Contains(got, abs(d)) {
					t.Errorf("unexpected %s in %v", d, got)
				}
			}
			if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Errorf("not sorted and unique: %v", got)
			}
		})
	}
}

func TestDefaultProtectedSubmoduleDepthBound(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	p := filepath.Join(ws, ".git")
	files := map[string]string{"ws/.git/HEAD": "x\n"}
	rel := "ws/.git"
	for i := 0; i <= MaxSubmoduleDepth; i++ {
		rel += "/modules/m"
		files[rel+"/HEAD"] = "x\n"
	}
	tree(t, dir, files)
	got := Protected(ws)
	// Depths 1..MaxSubmoduleDepth are protected, one past is not.
	at := p
	for i := 1; i <= MaxSubmoduleDepth+1; i++ {
		at = filepath.Join(at, "modules", "m")
		has := slices.Contains(got, filepath.Join(at, "hooks"))
		if i <= MaxSubmoduleDepth && !has {
			t.Errorf("depth %d not protected", i)
		}
		if i > MaxSubmoduleDepth && has {
			t.Errorf("depth %d (one past the bound) protected", i)
		}
	}
}

// TestDefaultProtectedRelativeWorkspaceFailsClosed: a relative
// workspace yields the two lexical entries, relative, which the broker's
// Validate refuses (its TestDefaultProtectedValidates).
func TestDefaultProtectedRelativeWorkspaceFailsClosed(t *testing.T) {
	got := Protected("rel/ws")
	if want := []string{"rel/ws/.git/hooks", "rel/ws/.git/config"}; !slices.Equal(got, want) {
		t.Fatalf("relative workspace: %v, want %v", got, want)
	}
}

func TestParseGitConfig(t *testing.T) {
	in := "# c\n[core]\n\thooksPath = \"a b\" ; trailing\n[includeIf \"gitdir:/x/\"]\npath=one\\ttab\n[Core] HooksPath = x # y\n[broken\nlonely\n"
	got := parseGitConfig(strings.NewReader(in))
	want := []gitConfigEntry{
		{"core", "hookspath", "a b"},
		{"includeif", "path", "one\ttab"},
		{"core", "hookspath", "x"},
		{"core", "lonely", ""},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("parseGitConfig = %q, want %q", got, want)
	}
}

func FuzzParseGitConfig(f *testing.F) {
	f.Add("[core]\n\thooksPath = .husky/_\n[include]\npath = x\n")
	f.Add("[includeIf \"gitdir:~/\"]\n  Path = \"/abs/c\\\"fg\" # c\n")
	f.Add("gitdir: ../x\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range parseGitConfig(strings.NewReader(s)) {
			if e.section != strings.ToLower(e.section) || e.key != strings.ToLower(e.key) {
				t.Fatalf("names not folded: %+v", e)
			}
		}
		dir := t.TempDir()
		p := filepath.Join(dir, ".git")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if gd, ok := readGitdirFile(p); ok && !filepath.IsAbs(gd) {
			t.Fatalf("gitdir %q is not absolute", gd)
		}
		got := Protected(dir)
		if len(got) < 2 || !slices.IsSorted(got) {
			t.Fatalf("Protected = %v", got)
		}
	})
}

// TestDefaultProtectedNeverBlocks plants FIFOs (and a directory) where
// Protected reads config, pointer and module entries: it must
// return, skipping them, rather than wait for a writer. The control shows
// a plain open of such a FIFO does block.
func TestDefaultProtectedNeverBlocks(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		fifo  string // relative to ws
	}{
		{name: "submodule config", files: map[string]string{"ws/.git/HEAD": "x\n", "ws/.git/modules/x/HEAD": "x\n"}, fifo: ".git/modules/x/config"},
		{name: "top config", files: map[string]string{"ws/.git/HEAD": "x\n"}, fifo: ".git/config"},
		{name: "modules directory", files: map[string]string{"ws/.git/HEAD": "x\n"}, fifo: ".git/modules"},
		{name: "commondir", files: map[string]string{"ws/.git": "gitdir: ../gd\n", "gd/HEAD": "x\n"}, fifo: "../gd/commondir"},
		{name: "included config", files: map[string]string{"ws/.git/HEAD": "x\n", "ws/.git/config": "[include]\n\tpath = inc\n"}, fifo: ".git/inc"},
		{name: "gitdir file", files: map[string]string{}, fifo: ".git"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tree(t, dir, tt.files)
			ws := filepath.Join(dir, "ws")
			os.MkdirAll(ws, 0o755)
			fifo := filepath.Join(ws, tt.fifo)
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			if !opensBlock(fifo) {
				t.Fatal("control: a plain open of the FIFO does not block, so the case proves nothing")
			}
			done := make(chan []string, 1)
			go func() { done <- Protected(ws) }()
			select {
			case got := <-done:
				if !slices.Contains(got, filepath.Join(ws, ".git", "config")) {
					t.Errorf("lexical entries missing: %v", got)
				}
			case <-time.After(5 * time.Second):
				// Unblock the stuck reader so the test binary can exit.
				if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				t.Fatal("Protected blocked on a FIFO")
			}
		})
	}
}

// opensBlock reports whether a plain open of path is still waiting after
// a short while; it releases the waiting open either way.
func opensBlock(path string) bool {
	opened := make(chan struct{})
	go func() {
		if f, err := os.Open(path); err == nil {
			f.Close()
		}
		close(opened)
	}()
	select {
	case <-opened:
		return false
	case <-time.After(100 * time.Millisecond):
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-opened
		return true
	}
}

// TestDefaultProtectedHostHooksPath: a core.hooksPath in the host's
// global config that points into the workspace is protected, relative or
// absolute, and so are files that config includes.
func TestDefaultProtectedHostHooksPath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	global := filepath.Join(dir, "gitconfig")
	tree(t, dir, map[string]string{
		"ws/.git/HEAD": "x\n",
		"gitconfig":    "[core]\n\thooksPath = .githooks\n[include]\n\tpath = " + filepath.Join(ws, "inc.cfg") + "\n",
		"ws/inc.cfg":   "[core]\n\thooksPath = " + filepath.Join(ws, "abs-hooks") + "\n",
	})
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	got := Protected(ws)
	for _, w := range []string{"ws/.githooks", "ws/inc.cfg", "ws/abs-hooks"} {
		if !slices.Contains(got, filepath.Join(dir, w)) {
			t.Errorf("missing %s in %v", w, got)
		}
	}
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(dir, "none"))
	if got := Protected(ws); slices.Contains(got, filepath.Join(ws, ".githooks")) {
		t.Errorf("control: without the global config the hooks path is still listed: %v", got)
	}
}

// TestDefaultProtectedFollowsNoLink is the red team's finding: a
// command that links .git/modules to / (or to any host directory) made
// the next Protected walk the host's filesystem, reading other
// repositories' configs and listing them. Nothing in the walk is
// followed through a link, and git directories outside the workspace
// (a pointer's or a link's target) have their own entries protected but
// are not walked. The controls are the same layouts without the link,
// which are walked.
func TestDefaultProtectedFollowsNoLink(t *testing.T) {
	t.Parallel()
	host := map[string]string{
		"host/.git/HEAD":              "ref: refs/heads/main\n",
		"host/.git/modules/hm/HEAD":   "x\n",
		"host/.git/modules/hm/config": "[core]\n",
	}
	tests := []struct {
		name       string
		files      map[string]string
		want, deny []string
	}{
		{
			name:  "modules is a link to the host",
			files: map[string]string{"ws/.git/HEAD": "x\n", "ws/.git/modules": "->../../host/.git/modules"},
			deny:  []string{"host/.git/modules/hm/hooks", "host/.git/modules/hm/config", "ws/.git/modules/hm/hooks"},
		},
		{
			name:  "modules is a link to /",
			files: map[string]string{"ws/.git/HEAD": "x\n", "ws/.git/modules": "->/"},
		},
		{
			name:  "a module is a link",
			files: map[string]string{"ws/.git/HEAD": "x\n", "ws/.git/modules/": "", "ws/.git/modules/hm": "->../../../host/.git/modules/hm"},
			deny:  []string{"host/.git/modules/hm/hooks", "ws/.git/modules/hm/hooks"},
		},
		{
			name:  "control: a real module",
			files: map[string]string{"ws/.git/HEAD": "x\n", "ws/.git/modules/hm/HEAD": "x\n"},
			want:  []string{"ws/.git/modules/hm/hooks", "ws/.git/modules/hm/config"},
		},
		{
			name:  "a pointer outside the workspace: its entries, not its modules",
			files: map[string]string{"ws/.git": "gitdir: ../host/.git\n"},
			want:  []string{"ws/.git", "host/.git/hooks", "host/.git/config"},
			deny:  []string{"host/.git/modules/hm/hooks"},
		},
		{
			name:  ".git is a link outside the workspace: its entries, not its modules",
			files: map[string]string{"ws/.git": "->../host/.git"},
			want:  []string{"host/.git/hooks", "host/.git/config"},
			deny:  []string{"host/.git/modules/hm/hooks"},
		},
		{
			name:  "a pointer inside the workspace through a link",
			files: map[string]string{"ws/.git": "gitdir: repo/.git\n", "ws/repo": "->../host"},
			deny:  []string{"host/.git/modules/hm/hooks", "ws/repo/.git/modules/hm/hooks"},
		},
		{
			name:  "control: a pointer inside the workspace",
			files: map[string]string{"ws/.git": "gitdir: repo/.git\n", "ws/repo/.git/HEAD": "x\n", "ws/repo/.git/modules/m/HEAD": "x\n"},
			want:  []string{"ws/repo/.git/hooks", "ws/repo/.git/modules/m/hooks"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			tree(t, dir, host)
			tree(t, dir, tt.files)
			g := scanProtected(filepath.Join(dir, "ws"))
			for _, w := range tt.want {
				if !slices.Contains(g.out, filepath.Join(dir, w)) {
					t.Errorf("missing %s in %v", w, g.out)
				}
			}
			for _, d := range tt.deny {
				if slices.Contains(g.out, filepath.Join(dir, d)) {
					t.Errorf("listed %s, reached through a link or outside the workspace: %v", d, g.out)
				}
			}
			if g.walked > 4 {
				t.Errorf("walked %d directories", g.walked)
			}
			for _, p := range g.out {
				if !strings.HasPrefix(p, dir+"/") && !slices.Contains(hostGitConfigs(), p) {
					t.Errorf("listed %s, outside the test's directory", p)
				}
			}
		})
	}
}

// TestDefaultProtectedWalkBound: a modules tree wider than the bound is
// walked up to MaxProtectedWalkDirs directories and no further.
func TestDefaultProtectedWalkBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	for i := range 70 {
		for j := range 70 {
			if err := os.MkdirAll(filepath.Join(ws, ".git/modules", fmt.Sprintf("a%d/b%d", i, j)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	g := scanProtected(ws)
	if g.walked != MaxProtectedWalkDirs {
		t.Errorf("walked %d directories of %d, want the bound %d", g.walked, 70*71, MaxProtectedWalkDirs)
	}
}
