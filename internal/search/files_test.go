package search

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestFilesListsWhatASearchWouldRead: Files honours the glob, ignore
// files, hidden entries, protected subtrees and links as Go does, and
// its bound.
func TestFilesListsWhatASearchWouldRead(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "x")
	write("b.txt", "x")
	write("sub/c.go", "x")
	write("sub/ignored.go", "x")
	write("sub/.gitignore", "ignored.go\n")
	write(".hidden.go", "x")
	write("prot/d.go", "x")
	if err := os.Symlink(root+"/a.go", root+"/link.go"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, more, err := Files(ctx, root, Options{Glob: "*.go", Protected: []string{root + "/prot"}}, 100)
	want := []string{root + "/a.go", root + "/sub/c.go"}
	if err != nil || more || !slices.Equal(got, want) {
		t.Fatalf("Files = %v, %v, %v; want %v", got, more, err, want)
	}
	// Every file Files lists, a search for any line reads.
	res, err := Go(ctx, root, Options{Pattern: "x", Glob: "*.go", Protected: []string{root + "/prot"}})
	if err != nil || res.Files != len(want) {
		t.Fatalf("the search read %d files, Files listed %d (%v)", res.Files, len(want), err)
	}
	got, more, err = Files(ctx, root, Options{}, 2)
	if err != nil || !more || len(got) != 2 {
		t.Fatalf("bounded Files = %v, %v, %v", got, more, err)
	}
	if _, _, err := Files(ctx, root, Options{Glob: "["}, 10); err == nil {
		t.Fatal("a bad glob was accepted")
	}
}
