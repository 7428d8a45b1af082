package pinnedfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func openRoot(t *testing.T) (string, *os.Root) {
	t.Helper()
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return dir, r
}

func TestReadRegular(t *testing.T) {
	t.Parallel()
	dir, root := openRoot(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o600)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644)
	os.Symlink("a.txt", filepath.Join(dir, "inner"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "escape"))
	os.Symlink("../"+filepath.Base(outside)+"/secret", filepath.Join(dir, "dotdot"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		limit   int64
		want    string
		wantErr func(error) bool
	}{
		{name: "a.txt", limit: 5, want: "hello"},
		{name: "inner", limit: 5, want: "hello"},
		{name: "a.txt", limit: 4, wantErr: func(err error) bool { var e *TooLargeError; return errors.As(err, &e) && e.Limit == 4 }},
		{name: "escape", limit: 100, wantErr: func(err error) bool { return err != nil }},
		{name: "dotdot", limit: 100, wantErr: func(err error) bool { return err != nil }},
		{name: "../" + filepath.Base(outside) + "/secret", limit: 100, wantErr: func(err error) bool { return err != nil }},
		{name: "fifo", limit: 100, wantErr: func(err error) bool { return errors.Is(err, ErrNotRegular) }},
		{name: "sub", limit: 100, wantErr: func(err error) bool { return errors.Is(err, ErrNotRegular) }},
		{name: "missing", limit: 100, wantErr: func(err error) bool { return errors.Is(err, os.ErrNotExist) }},
	} {
		got, err := ReadRegular(root, tc.name, tc.limit)
		if tc.wantErr != nil {
			if !tc.wantErr(err) {
				t.Errorf("ReadRegular(%q) = %q, %v; want the listed error", tc.name, got, err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("ReadRegular(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestWriteWhole(t *testing.T) {
	t.Parallel()
	dir, root := openRoot(t)
	outside := t.TempDir()
	if err := WriteWhole(root, "new/deep/f.txt", []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new/deep/f.txt")); string(b) != "one" {
		t.Fatalf("content %q", b)
	}
	os.Chmod(filepath.Join(dir, "new/deep/f.txt"), 0o600)
	if err := WriteWhole(root, "new/deep/f.txt", []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "new/deep/f.txt"))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("existing file's mode became %v, want 0600 kept", fi.Mode().Perm())
	}
	// A parent that is a link out of the root: nothing is created outside.
	os.Symlink(outside, filepath.Join(dir, "out"))
	if err := WriteWhole(root, "out/x/f.txt", []byte("x"), 0o644); err == nil {
		t.Error("write through a link out of the root succeeded")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("created %d entries outside the root", len(ents))
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteWhole(root, "fifo", []byte("x"), 0o644); !errors.Is(err, ErrNotRegular) {
		t.Errorf("write over a FIFO: %v, want ErrNotRegular", err)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "new/deep"))
	if len(ents) != 1 {
		t.Errorf("staging files left behind: %v", ents)
	}
}

// TestWriteWholeRacingLink swaps a parent between a directory and a link
// out of the root while writes run: nothing may land outside.
func TestWriteWholeRacingLink(t *testing.T) {
	t.Parallel()
	dir, root := openRoot(t)
	outside := t.TempDir()
	p := filepath.Join(dir, "p")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.RemoveAll(p)
			os.Mkdir(p, 0o755)
			os.RemoveAll(p)
			os.Symlink(outside, p)
		}
	}()
	for range 2000 {
		WriteWhole(root, "p/q/f.txt", []byte("x"), 0o644)
	}
	close(stop)
	<-done
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("a racing link let %d entries be created outside the root", len(ents))
	}
}

// TestReplaceAt: a new file gets perm and is reported created; an
// existing one keeps its bits; a link or a FIFO at the name is refused
// and left as it was, with no staged file behind.
func TestReplaceAt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fd := int(d.Fd())
	res, err := ReplaceAt(fd, "f", []byte("one"), 0o640)
	if err != nil || !res.Created || res.SyncErr != nil {
		t.Fatalf("new file: %+v %v", res, err)
	}
	res, err = ReplaceAt(fd, "f", []byte("two"), 0o600)
	if fi, _ := os.Stat(filepath.Join(dir, "f")); err != nil || res.Created || fi.Mode().Perm() != 0o640 {
		t.Fatalf("existing file: %+v %v %v", res, err, fi.Mode())
	}
	os.WriteFile(filepath.Join(dir, "target"), []byte("kept"), 0o644)
	os.Symlink("target", filepath.Join(dir, "link"))
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	for name, want := range map[string]error{"link": ErrLink, "fifo": ErrNotRegular} {
		if _, err := ReplaceAt(fd, name, []byte("x"), 0o644); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "target")); string(got) != "kept" {
		t.Errorf("the link's target was written: %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		t.Errorf("staged files left behind: %v", entries)
	}
}
