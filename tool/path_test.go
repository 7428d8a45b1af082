package tool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/sandbox"
)

// testWorkspace makes a workspace with a git layout, an outside directory
// and a blob store, and returns a Call over it.
func testWorkspace(t *testing.T) (*Call, string) {
	t.Helper()
	root := nonTmpDir(t)
	ws := filepath.Join(root, "ws")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{ws + "/.git/hooks", ws + "/.git/objects", ws + "/src", outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(ws+"/.git/config", "[core]\n")
	write(ws+"/src/a.txt", "alpha\n")
	write(outside+"/secret.txt", "secret\n")
	store, err := blob.Open(filepath.Join(root, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Call{
		Workspace: ws,
		Base:      sandbox.Policy{Protected: []string{ws + "/.git/hooks", ws + "/.git/config"}},
		Blobs:     store,
	}
	return c, outside
}

// nonTmpDir returns a fresh directory outside /tmp, which reads treat as
// jail-replaced, so refusals of "outside" paths are about the roots alone.
func nonTmpDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "loom-tool-test-")
	if err != nil {
		t.Fatalf("no /var/tmp to build a non-/tmp workspace in: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestPathDiscipline(t *testing.T) {
	c, outside := testWorkspace(t)
	ws := c.Workspace
	mustLink := func(target, link string) {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	mustLink(outside, "escape")             // a directory symlink out of the workspace
	mustLink(outside+"/secret.txt", "leak") // a file symlink out
	mustLink(".git/hooks", "hooks")         // a symlink onto a protected entry
	mustLink("src/../.git/config", "cfg")   // a relative link onto the other
	mustLink("loop2", "loop1")              // a link cycle
	mustLink("loop1", "loop2")              //
	mustLink("src", "srclink")              // a harmless internal link
	if err := os.MkdirAll(ws+"/.gitx", 0o755); err != nil {
		t.Fatal(err)
	}
	ref, err := c.Blobs.Put([]byte("spilled output"))
	if err != nil {
		t.Fatal(err)
	}
	blobPath := c.Blobs.Path(ref)

	cases := []struct {
		path      string
		read      Code // expected code, "" = allowed
		write     Code
		wantAfter string // expected resolved path suffix when allowed
	}{
		{"src/a.txt", "", "", "/ws/src/a.txt"},
		{"new_dir/deeper/file.txt", "", "", "/ws/new_dir/deeper/file.txt"},
		{"srclink/a.txt", "", "", "/ws/src/a.txt"},
		{"../outside/secret.txt", "outside_roots", "outside_roots", ""},
		{"src/../../outside/secret.txt", "outside_roots", "outside_roots", ""},
		{outside + "/secret.txt", "outside_roots", "outside_roots", ""},
		{"escape/secret.txt", "outside_roots", "outside_roots", ""},
		{"escape/new.txt", "outside_roots", "outside_roots", ""},
		{"leak", "outside_roots", "outside_roots", ""},
		{".git/hooks/pre-commit", "protected_path", "protected_path", ""},
		{".git/hooks", "protected_path", "protected_path", ""},
		{".git/config", "protected_path", "protected_path", ""},
		{"hooks/post-checkout", "protected_path", "protected_path", ""},
		{"cfg", "protected_path", "protected_path", ""},
		{".git/objects/ab", "", "", "/ws/.git/objects/ab"},
		{".gitx/hooks", "", "", "/ws/.gitx/hooks"},
		{"loop1", "too_many_links", "too_many_links", ""},
		{"/proc/self/environ", "jail_replaced", "outside_roots", ""},
		{"/dev/null", "jail_replaced", "outside_roots", ""},
		{blobPath, "", "protected_path", blobPath[len(blobPath)-20:]},
		{"", "invalid_path", "invalid_path", ""},
		{"a\x00b", "invalid_path", "invalid_path", ""},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			for _, op := range []struct {
				name string
				fn   func(string) (string, error)
				want Code
			}{{"read", c.ResolveRead, tc.read}, {"write", c.ResolveWrite, tc.write}} {
				got, err := op.fn(tc.path)
				if op.want == "" {
					if err != nil {
						t.Errorf("%s: unexpected refusal: %v", op.name, err)
					} else if !strings.HasSuffix(got, tc.wantAfter) {
						t.Errorf("%s: resolved to %s, want suffix %s", op.name, got, tc.wantAfter)
					}
					continue
				}
				var pe *PathError
				if !errors.As(err, &pe) || pe.Code != op.want {
					t.Errorf("%s: got (%q, %v), want code %s", op.name, got, err, op.want)
				}
			}
		})
	}
}

func TestRelativeProtectedEntryFailsClosed(t *testing.T) {
	c, _ := testWorkspace(t)
	c.Base.Protected = append(c.Base.Protected, ".git")
	for _, fn := range []func(string) (string, error){c.ResolveRead, c.ResolveWrite} {
		_, err := fn("src/a.txt")
		var pe *PathError
		if !errors.As(err, &pe) || pe.Code != "protection_misconfigured" || pe.Entry != ".git" {
			t.Fatalf("got %v, want protection_misconfigured naming .git", err)
		}
	}
}

func TestReadableRootsAndGrants(t *testing.T) {
	c, outside := testWorkspace(t)
	if _, err := c.ResolveRead(outside + "/secret.txt"); err == nil {
		t.Fatal("control: outside must be refused without a root")
	}
	c.Base.ReadableRoots = []string{outside}
	if _, err := c.ResolveRead(outside + "/secret.txt"); err != nil {
		t.Fatalf("readable root: %v", err)
	}
	if _, err := c.ResolveWrite(outside + "/secret.txt"); err == nil {
		t.Fatal("a readable root must not be writable")
	}
	c.Grants = []sandbox.Grant{{Kind: sandbox.GrantWritableRoot, Path: outside}}
	if _, err := c.ResolveWrite(outside + "/new.txt"); err != nil {
		t.Fatalf("granted writable root: %v", err)
	}
	// No grant lifts protection.
	c.Grants = append(c.Grants, sandbox.Grant{Kind: sandbox.GrantWritableRoot, Path: c.Workspace + "/.git"})
	if _, err := c.ResolveWrite(".git/hooks/x"); err == nil {
		t.Fatal("a grant lifted a protected entry")
	}
}

// TestSystemRootsAreNeverReadByTheFileTools: a base system root is the
// jail's alone. A path under it is refused for reading, naming the system
// root and the roots that would be accepted; the control is the same
// directory listed as a readable root, which reads.
func TestSystemRootsAreNeverReadByTheFileTools(t *testing.T) {
	c, outside := testWorkspace(t)
	c.Base.SystemRoots = []string{outside}
	_, err := c.ResolveRead(outside + "/secret.txt")
	var pe *PathError
	if !errors.As(err, &pe) || pe.Code != "outside_roots" || pe.SystemRoot != outside {
		t.Fatalf("read under a system root: %v, want outside_roots naming the system root", err)
	}
	for _, want := range []string{outside + " is a system root", "read only under " + c.Workspace, "permissions.readable_roots"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "code_mode") {
		t.Errorf("refusal %q names a tool this host may not have", err)
	}
	c.Base.ReadableRoots = []string{outside}
	if _, err := c.ResolveRead(outside + "/secret.txt"); err != nil {
		t.Fatalf("control: the same directory as a readable root: %v", err)
	}
}

// TestResolveShellDir: the one predicate bash's cwd and working_directory
// share accepts only existing directories under the workspace or a
// writable root, whatever the readable and system roots say.
func TestResolveShellDir(t *testing.T) {
	c, outside := testWorkspace(t)
	ws := c.Workspace
	extra := filepath.Join(filepath.Dir(ws), "extra")
	os.MkdirAll(extra+"/sub", 0o755)
	os.Symlink(outside, ws+"/out")
	os.Symlink("/etc", ws+"/etclink")
	os.Symlink(extra+"/sub", ws+"/extralink")
	c.Base.ReadableRoots = []string{outside, "/etc"}
	c.Base.SystemRoots = []string{"/etc", "/usr"}
	c.Base.WritableRoots = []string{ws, extra}
	for _, tc := range []struct {
		path string
		code Code
		want string
	}{
		{ws, "", ws},
		{"src", "", ws + "/src"},
		{"src/../.git/objects", "", ws + "/.git/objects"},
		{extra + "/sub", "", extra + "/sub"},
		{"extralink", "", extra + "/sub"},
		{"/etc", "outside_writable_roots", ""},
		{"etclink", "outside_writable_roots", ""},
		{"/usr", "outside_writable_roots", ""},
		{outside, "outside_writable_roots", ""},
		{"out", "outside_writable_roots", ""},
		{"missing", "not_a_directory", ""},
		{"src/a.txt", "not_a_directory", ""},
		{".git/hooks", "protected_path", ""},
		{"", "invalid_path", ""},
	} {
		got, err := c.ResolveShellDir(tc.path)
		if tc.code == "" {
			if err != nil || got != tc.want {
				t.Errorf("ResolveShellDir(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
			continue
		}
		var pe *PathError
		if !errors.As(err, &pe) || pe.Code != tc.code {
			t.Errorf("ResolveShellDir(%q) = %q, %v; want code %s", tc.path, got, err, tc.code)
			continue
		}
		if tc.code == "outside_writable_roots" && (!strings.Contains(err.Error(), ws) || !strings.Contains(err.Error(), extra)) {
			t.Errorf("refusal %q does not name the roots that would be accepted", err)
		}
	}
}

func TestLinkFollowBound(t *testing.T) {
	dir := t.TempDir()
	// A chain of exactly maxLinkFollows links resolves; one more does not.
	if err := os.WriteFile(dir+"/end", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	prev := "end"
	for i := 1; i <= maxLinkFollows+1; i++ {
		name := "l" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		if err := os.Symlink(prev, dir+"/"+name); err != nil {
			t.Fatal(err)
		}
		if i == maxLinkFollows {
			if _, err := resolveReal(dir + "/" + name); err != nil {
				t.Fatalf("%d links: %v", i, err)
			}
		}
		if i == maxLinkFollows+1 {
			var pe *PathError
			if _, err := resolveReal(dir + "/" + name); !errors.As(err, &pe) || pe.Code != "too_many_links" {
				t.Fatalf("%d links: %v", i, err)
			}
		}
		prev = name
	}
}

func protectedHooks(ws string) sandbox.Policy {
	return sandbox.Policy{Protected: []string{ws + "/.git/hooks", ws + "/.git/config"}}
}

// TestMissingComponentThenDotDot: a ".." after a component that does not
// exist climbs back into real directories, whose symlinks must still be
// followed; cleaning the rest lexically would hide a link out of the
// workspace or onto a protected entry behind the missing name.
func TestMissingComponentThenDotDot(t *testing.T) {
	c, outside := testWorkspace(t)
	ws := c.Workspace
	for link, target := range map[string]string{"escape": outside, "hooks": ".git/hooks", "srclink": "src"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		path      string
		want      Code // refusal code for read and write, "" = allowed
		wantAfter string
	}{
		{"nope/../escape/secret.txt", "outside_roots", ""},
		{"nope/deeper/../../escape/new.txt", "outside_roots", ""},
		{"src/a.txt/x/../../../escape/secret.txt", "outside_roots", ""}, // through a file (ENOTDIR)
		{"nope/../hooks/pre-commit", "protected_path", ""},
		{"nope/../srclink/a.txt", "", "/ws/src/a.txt"},
		{"nope/../new.txt", "", "/ws/new.txt"},
	}
	for _, tc := range cases {
		for _, op := range []struct {
			name string
			fn   func(string) (string, error)
		}{{"read", c.ResolveRead}, {"write", c.ResolveWrite}} {
			got, err := op.fn(tc.path)
			if tc.want == "" {
				if err != nil || !strings.HasSuffix(got, tc.wantAfter) {
					t.Errorf("%s %s: got (%q, %v), want suffix %s", op.name, tc.path, got, err, tc.wantAfter)
				}
				continue
			}
			var pe *PathError
			if !errors.As(err, &pe) || pe.Code != tc.want {
				t.Errorf("%s %s: got (%q, %v), want code %s", op.name, tc.path, got, err, tc.want)
			}
		}
	}
	// End to end: neither the outside file nor the hook is touched.
	r, err := NewRegistry(FileTools()...)
	if err != nil {
		t.Fatal(err)
	}
	if out := call(t, r, c, "fs_write", map[string]any{"path": "nope/../escape/pwned.txt", "content": "x"}); !out.IsError {
		t.Errorf("write through a missing component escaped: %s", out.Text)
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned.txt")); err == nil {
		t.Error("a file was written outside the workspace")
	}
	if out := call(t, r, c, "fs_write", map[string]any{"path": "nope/../hooks/pre-commit", "content": "#!/bin/sh\n"}); !out.IsError {
		t.Errorf("write onto a hook through a missing component: %s", out.Text)
	}
	if out := call(t, r, c, "fs_read", map[string]any{"path": "nope/../escape/secret.txt"}); !out.IsError {
		t.Errorf("read through a missing component escaped: %s", out.Text)
	}
}

// TestBlobRootRedirect: the blob store's root is fixed when the store
// opens. A command that replaces it (or a parent) with a symlink, as it can
// when the store lives in the workspace, must not turn the blob allowance
// into a read of wherever the link points.
func TestBlobRootRedirect(t *testing.T) {
	c, outside := testWorkspace(t)
	ws := c.Workspace
	store, err := blob.Open(filepath.Join(ws, ".loom", "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	c.Blobs = store
	ref, err := store.Put([]byte("spilled"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResolveRead(store.Path(ref)); err != nil {
		t.Fatalf("control: a blob must be readable: %v", err)
	}
	if err := os.Rename(store.Root(), filepath.Join(ws, ".loom", "moved")); err != nil {
		t.Fatal(err)
	}
	for target, probe := range map[string]struct {
		path string
		want Code
	}{
		outside:      {outside + "/secret.txt", "outside_roots"},
		ws + "/.git": {ws + "/.git/config", "protected_path"},
		"../.git":    {ws + "/.git/hooks/pre-commit", "protected_path"},
	} {
		os.Remove(store.Root())
		if err := os.Symlink(target, store.Root()); err != nil {
			t.Fatal(err)
		}
		got, err := c.ResolveRead(probe.path)
		var pe *PathError
		if !errors.As(err, &pe) || pe.Code != probe.want {
			t.Errorf("blob root linked to %s: read %s got (%q, %v), want %s", target, probe.path, got, err, probe.want)
		}
	}
}

func TestPathLengthBound(t *testing.T) {
	c, _ := testWorkspace(t)
	at := strings.Repeat("a/", maxPathBytes/2-1) + "bb"
	if len(at) != maxPathBytes {
		t.Fatalf("test path is %d bytes", len(at))
	}
	// At the bound the length is not what refuses it (the kernel may still
	// find the joined path too long); one byte past, it is.
	var pe *PathError
	if _, err := c.ResolveWrite(at); errors.As(err, &pe) && pe.Code == "path_too_long" {
		t.Fatalf("a path of exactly %d bytes refused for its length: %v", maxPathBytes, err)
	}
	if _, err := c.ResolveRead(at + "c"); !errors.As(err, &pe) || pe.Code != "path_too_long" {
		t.Fatalf("one byte past the bound: %v", err)
	}
}

// TestReadBlobStoreOnlyByRef: through the store's allowance only a blob
// itself is readable, by its exact path; the root, a shard or a staged
// file (where every session's output lies) is refused. Control: the
// blob's own path reads.
func TestReadBlobStoreOnlyByRef(t *testing.T) {
	t.Parallel()
	c, _ := testWorkspace(t)
	ref, err := c.Blobs.Put([]byte("SECRET_OF_ANOTHER_SESSION\n"))
	if err != nil {
		t.Fatal(err)
	}
	blobPath := c.Blobs.Path(ref)
	if got, err := c.ResolveRead(blobPath); err != nil || got != blobPath {
		t.Fatalf("ResolveRead(blob) = %q, %v; want the blob readable", got, err)
	}
	for _, p := range []string{c.Blobs.Root(), filepath.Dir(blobPath), c.Blobs.Root() + "/", filepath.Join(filepath.Dir(blobPath), "."+string(ref)+".tmp")} {
		_, err := c.ResolveRead(p)
		var pe *PathError
		if !errors.As(err, &pe) || pe.Code != "blob_store" {
			t.Errorf("ResolveRead(%q) = %v; want a blob_store refusal", p, err)
		}
	}
}

// TestReadableRootAboveJailReplaced: a readable root of "/" does not make
// the host's /proc or /dev readable (the jail would show its own), while
// a root inside /tmp stays readable. Control: without the rule, "/"
// would cover /proc/self/status.
func TestReadableRootAboveJailReplaced(t *testing.T) {
	t.Parallel()
	c, _ := testWorkspace(t)
	c.Base.ReadableRoots = []string{"/"}
	for _, p := range []string{"/proc/self/status", "/proc/self/environ", "/dev/null"} {
		_, err := c.ResolveRead(p)
		var pe *PathError
		if !errors.As(err, &pe) || pe.Code != "jail_replaced" {
			t.Errorf("ResolveRead(%q) under readable root / = %v; want jail_replaced", p, err)
		}
	}
	if _, err := c.ResolveRead("/etc/hostname"); err != nil {
		t.Errorf("control: /etc/hostname under readable root /: %v", err)
	}
	tmpRoot := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmpRoot, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Base.ReadableRoots = []string{tmpRoot}
	if _, err := c.ResolveRead(filepath.Join(tmpRoot, "f")); err != nil {
		t.Errorf("a readable root inside /tmp: %v", err)
	}
}
