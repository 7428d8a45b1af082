package tool

import (
	"os"
	"path/filepath"
	"testing"
)

// pinWorld is a session whose roots a "command" (the test) swaps for
// links between calls, as a jailed command that may write above a root
// can: the workspace holds a scratch root, and a secret lies outside
// every root.
type pinWorld struct {
	t                          *testing.T
	dir, ws, scratch, outside  string
	hostLink                   string
	template                   *Call
	reg                        *Registry
	secretPath, secretContents string
}

func newPinWorld(t *testing.T) *pinWorld {
	t.Helper()
	w := &pinWorld{t: t, dir: t.TempDir()}
	w.ws = filepath.Join(w.dir, "ws")
	w.scratch = filepath.Join(w.ws, ".scratch")
	w.outside = filepath.Join(w.dir, "outside")
	for _, d := range []string{w.scratch, w.outside, filepath.Join(w.dir, "real")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.secretPath, w.secretContents = filepath.Join(w.outside, "secret.txt"), "TOPSECRET\n"
	os.WriteFile(w.secretPath, []byte(w.secretContents), 0o600)
	os.WriteFile(filepath.Join(w.ws, "a.txt"), []byte("in the workspace\n"), 0o644)
	// A readable root the host names through a link from the start.
	w.hostLink = filepath.Join(w.dir, "hostlink")
	os.Symlink(filepath.Join(w.dir, "real"), w.hostLink)
	os.WriteFile(filepath.Join(w.dir, "real", "r.txt"), []byte("readable\n"), 0o644)
	w.template = &Call{Workspace: w.ws, Strand: "main"}
	w.template.Base.WritableRoots = []string{w.scratch}
	w.template.Base.ReadableRoots = []string{w.hostLink}
	reg, err := NewRegistry(FileTools()...)
	if err != nil {
		t.Fatal(err)
	}
	w.reg = reg
	return w
}

// swap replaces the directory at p with a link to target, as `mv p
// p.old && ln -s target p` in a command would.
func (w *pinWorld) swap(p, target string) {
	w.t.Helper()
	if err := os.Rename(p, p+".old"); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		w.t.Fatal(err)
	}
}

func (w *pinWorld) call(c *Call, name string, args map[string]any) Outcome {
	w.t.Helper()
	return call(w.t, w.reg, c, name, args)
}

// TestRootPinsRefuseASwappedRoot: once a session has used its roots, a
// root a command swapped for a link (the scratch root inside the
// workspace, the workspace itself) is refused as root_changed, and
// nothing outside every root is read or written through it.
func TestRootPinsRefuseASwappedRoot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		swap func(w *pinWorld)
		read string // a path the model would send to read the secret
	}{
		{"scratch to /", func(w *pinWorld) { w.swap(w.scratch, "/") }, ""},
		{"scratch to outside", func(w *pinWorld) { w.swap(w.scratch, w.outside) }, ".scratch/secret.txt"},
		{"workspace to outside", func(w *pinWorld) { w.swap(w.ws, w.outside) }, "secret.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newPinWorld(t)
			if o := w.call(w.template.At("op", "s0", 0), "fs_read", map[string]any{"path": "a.txt"}); o.IsError {
				t.Fatalf("first read: %s", o.Text)
			}
			tc.swap(w)
			c := w.template.At("op", "s1", 0)
			reads := []string{w.secretPath}
			if tc.read != "" {
				reads = append(reads, tc.read)
			}
			for _, p := range reads {
				o := w.call(c, "fs_read", map[string]any{"path": p})
				if !o.IsError {
					t.Fatalf("read %s through the swapped root: %.200s", p, o.Text)
				}
				if p == tc.read && o.Code != CodeRootChanged {
					t.Errorf("read %s: code %s, want %s: %.300s", p, o.Code, CodeRootChanged, o.Text)
				}
			}
			target := filepath.Join(w.outside, "written")
			for _, p := range []string{target, ".scratch/written", "written"} {
				w.call(c, "fs_write", map[string]any{"path": p, "content": "x"})
			}
			if _, err := os.Lstat(target); err == nil {
				t.Fatal("a file was written outside every root")
			}
			if o := w.call(c, "fs_read", map[string]any{"path": filepath.Join(w.hostLink, "r.txt")}); o.IsError {
				t.Errorf("the host's own linked root stopped working: %s", o.Text)
			}
		})
	}
}

// TestRootPinsControl: the same swap against Calls built by hand, which
// share no pins, does reach the secret — what the pins prevent.
func TestRootPinsControl(t *testing.T) {
	t.Parallel()
	w := newPinWorld(t)
	first := *w.template
	if o := w.call(&first, "fs_read", map[string]any{"path": "a.txt"}); o.IsError {
		t.Fatal(o.Text)
	}
	w.swap(w.scratch, w.outside)
	later := *w.template
	o := w.call(&later, "fs_read", map[string]any{"path": ".scratch/secret.txt"})
	if o.IsError {
		t.Fatalf("the control could not read through the swapped root, so the test above proves nothing: %s", o.Text)
	}
}

// TestRootPinsAdmitWhatTheHostMade: a root absent when the session
// began and then made as a directory is used; one made as a link is not;
// pins are shared by every At of a template and by no other template.
func TestRootPinsAdmitWhatTheHostMade(t *testing.T) {
	t.Parallel()
	w := newPinWorld(t)
	later := filepath.Join(w.dir, "later")
	linked := filepath.Join(w.dir, "linked")
	w.template.Base.WritableRoots = append(w.template.Base.WritableRoots, later, linked)
	w.template.At("op", "s0", 0)
	os.Mkdir(later, 0o755)
	os.Symlink(w.outside, linked)
	c := w.template.At("op", "s1", 0)
	if o := w.call(c, "fs_write", map[string]any{"path": filepath.Join(later, "f"), "content": "x"}); o.IsError {
		t.Errorf("a root made after the session began: %s", o.Text)
	}
	if o := w.call(c, "fs_write", map[string]any{"path": filepath.Join(linked, "f"), "content": "x"}); !o.IsError || o.Code != CodeRootChanged {
		t.Errorf("a root made as a link: %s %s", o.Code, o.Text)
	}
	if _, err := os.Lstat(filepath.Join(w.outside, "f")); err == nil {
		t.Error("written through the link")
	}
	other := *w.template
	other.pins = nil
	if o := w.call(other.At("op2", "s0", 0), "fs_read", map[string]any{"path": filepath.Join(linked, "secret.txt")}); o.IsError {
		t.Errorf("another template pinned the link as it now is, yet was refused: %s", o.Text)
	}
}
