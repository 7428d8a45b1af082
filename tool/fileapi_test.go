package tool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func fileCode(err error) Code {
	var fe *FileError
	if errors.As(err, &fe) {
		return fe.Code
	}
	return ""
}

// TestFileAPIKeepsTheFileToolsRefusals: the file API refuses what fs_read
// and fs_write refuse, under the same codes.
func TestFileAPIKeepsTheFileToolsRefusals(t *testing.T) {
	t.Parallel()
	c, root := testWorkspace(t)
	outside := filepath.Join(root, "outside")
	if err := os.Symlink(outside+"/secret.txt", c.Workspace+"/src/link.txt"); err != nil {
		t.Fatal(err)
	}
	reads := []struct {
		path string
		want Code
	}{
		{"src/a.txt", ""},
		{"missing.txt", CodeNotFound},
		{outside + "/secret.txt", CodeOutsideRoots},
		{"src/link.txt", CodeOutsideRoots},
		{".git/config", CodeProtectedPath},
		{"src", CodeIsADirectory},
	}
	for _, r := range reads {
		got, err := c.ReadFile(r.path)
		if fileCode(err) != r.want || (err == nil) != (r.want == "") {
			t.Errorf("ReadFile(%q) = %q, %v; want code %q", r.path, got.Content, err, r.want)
		}
		if err == nil && (got.Path != "src/a.txt" || string(got.Content) != "alpha\n") {
			t.Errorf("ReadFile(%q) = %+v", r.path, got)
		}
	}
	writes := []struct {
		path string
		want Code
	}{
		{"new/dir/b.txt", ""},
		{outside + "/x.txt", CodeOutsideRoots},
		{".git/hooks/pre-commit", CodeProtectedPath},
		{"sub/.git/config", CodeGitControlPath},
	}
	for _, w := range writes {
		got, err := c.WriteFile(w.path, []byte("beta\n"))
		if fileCode(err) != w.want || (err == nil) != (w.want == "") {
			t.Errorf("WriteFile(%q) = %+v, %v; want code %q", w.path, got, err, w.want)
		}
	}
	if data, err := os.ReadFile(c.Workspace + "/new/dir/b.txt"); err != nil || string(data) != "beta\n" {
		t.Errorf("the write did not land: %q, %v", data, err)
	}
	if _, err := os.Stat(outside + "/x.txt"); err == nil {
		t.Error("a refused write outside the roots landed")
	}
	if _, err := c.WriteFile("big", make([]byte, MaxFileBytes+1)); fileCode(err) != CodeFileTooLarge {
		t.Errorf("a write past MaxFileBytes: %v", err)
	}
}

// TestListDirSortsBoundsAndNeverFollows: entries come sorted by name with
// their kinds, a link is a link, and the bound is announced.
func TestListDirSortsBoundsAndNeverFollows(t *testing.T) {
	t.Parallel()
	c, root := testWorkspace(t)
	if err := os.Symlink(root+"/outside", c.Workspace+"/src/out"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := os.WriteFile(fmt.Sprintf("%s/src/f%d", c.Workspace, i), []byte("xy"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, more, err := c.ListDir("src", 0)
	if err != nil || more || len(entries) != 7 {
		t.Fatalf("ListDir = %+v, %v, %v", entries, more, err)
	}
	if e := entries[0]; e != (DirEntry{Name: "a.txt", Kind: "file", Size: 6}) {
		t.Errorf("first entry %+v", e)
	}
	if e := entries[6]; e != (DirEntry{Name: "out", Kind: "link"}) {
		t.Errorf("the link was not listed as a link: %+v", e)
	}
	if entries, more, err := c.ListDir("src", 2); err != nil || !more || len(entries) != 2 || entries[1].Name != "f0" {
		t.Errorf("bounded ListDir = %+v, %v, %v", entries, more, err)
	}
	if _, _, err := c.ListDir("src/out", 0); fileCode(err) != CodeOutsideRoots {
		t.Errorf("listing through a link outside: %v", err)
	}
	if _, _, err := c.ListDir(root+"/outside", 0); fileCode(err) != CodeOutsideRoots {
		t.Errorf("listing outside: %v", err)
	}
}

// TestGlobAndGrepAnswerAsGrepDoes: the programmatic search keeps grep's
// rules (ignored and hidden files skipped, links not followed, roots
// checked) and bounds.
func TestGlobAndGrepAnswerAsGrepDoes(t *testing.T) {
	t.Parallel()
	c, root := testWorkspace(t)
	ws := c.Workspace
	for p, s := range map[string]string{"src/b.go": "func alpha() {}\n", "src/.h.go": "alpha\n", "src/ign.go": "alpha\n", ".gitignore": "ign.go\n"} {
		if err := os.WriteFile(ws+"/"+p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(root+"/outside", ws+"/src/out"); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	paths, more, err := c.Glob(ctx, "", "*.go", 0)
	if err != nil || more || len(paths) != 1 || paths[0] != "src/b.go" {
		t.Fatalf("Glob = %v, %v, %v", paths, more, err)
	}
	if _, _, err := c.Glob(ctx, "", "[", 0); fileCode(err) != CodeInvalidGlob {
		t.Errorf("bad glob: %v", err)
	}
	if _, _, err := c.Glob(ctx, root+"/outside", "", 0); fileCode(err) != CodeOutsideRoots {
		t.Errorf("glob outside: %v", err)
	}
	ms, more, err := c.Grep(ctx, GrepQuery{Pattern: "ALPHA", CaseInsensitive: true})
	if err != nil || more || len(ms) != 2 || ms[0] != (GrepMatch{Path: "src/a.txt", Line: 1, Text: "alpha"}) || ms[1].Path != "src/b.go" {
		t.Fatalf("Grep = %+v, %v, %v", ms, more, err)
	}
	if ms, more, err := c.Grep(ctx, GrepQuery{Pattern: "alpha", MaxMatches: 1}); err != nil || !more || len(ms) != 1 {
		t.Errorf("bounded Grep = %+v, %v, %v", ms, more, err)
	}
	if _, _, err := c.Grep(ctx, GrepQuery{Pattern: "("}); fileCode(err) != CodeInvalidPattern {
		t.Errorf("bad pattern: %v", err)
	}
	if _, _, err := c.Grep(ctx, GrepQuery{Pattern: "x", Path: "nope"}); fileCode(err) != CodeNotFound {
		t.Errorf("missing root: %v", err)
	}
}
