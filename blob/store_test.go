package blob_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentloom/loom/blob"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		root string
		code blob.Code
	}{
		{"relative", "blobs", blob.CodeInvalidRoot},
		{"empty", "", blob.CodeInvalidRoot},
		{"a file", file, blob.CodeInvalidRoot},
		{"under a file", filepath.Join(file, "blobs"), blob.CodeIO},
		{"missing nested", filepath.Join(dir, "a", "b", "c"), ""},
		{"existing, uncleaned", dir + "/./x/../", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := blob.Open(tt.root)
			if tt.code != "" {
				if s != nil {
					t.Fatalf("Open(%q) returned a store", tt.root)
				}
				wantCode(t, err, tt.code)
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tt.root, err)
			}
			want, err := filepath.EvalSymlinks(filepath.Clean(tt.root))
			if err != nil || s.Root() != want {
				t.Fatalf("Root() = %q, want %q (%v)", s.Root(), want, err)
			}
			fi, err := os.Stat(s.Root())
			if err != nil || !fi.IsDir() {
				t.Fatalf("root not created: %v", err)
			}
		})
	}
}

// TestOpenRefusesSymlinkedRoot: a root that is a link is refused, never
// followed; a link among the root's ancestors (the host's own path) is
// resolved, and Root reports the resolved path.
func TestOpenRefusesSymlinkedRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"link", "dangling"} {
		s, err := blob.Open(filepath.Join(dir, name))
		if s != nil {
			t.Fatalf("Open(%s) returned a store", name)
		}
		wantCode(t, err, blob.CodeInvalidRoot)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open created the dangling link's target: %v", err)
	}
	if ents, _ := os.ReadDir(real); len(ents) != 0 {
		t.Fatalf("Open wrote through the link: %v", ents)
	}

	s, err := blob.Open(filepath.Join(dir, "link", "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want, _ := filepath.EvalSymlinks(real)
	want = filepath.Join(want, "blobs")
	if s.Root() != want {
		t.Fatalf("Root() = %q, want the resolved %q", s.Root(), want)
	}
	r, err := s.Put([]byte("under a linked ancestor"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.RefOf(filepath.Join(want, string(r[:2]), string(r))); !ok || got != r {
		t.Fatalf("RefOf(resolved path) = %q, %v", got, ok)
	}
}

// TestClosedStoreRefuses: after Close every operation fails in band and
// nothing panics.
func TestClosedStoreRefuses(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	r, err := s.Put([]byte("before close"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = s.Put([]byte("after close"))
	wantCode(t, err, blob.CodeIO)
	_, err = s.Read(r)
	wantCode(t, err, blob.CodeIO)
	_, err = s.Sweep(0)
	wantCode(t, err, blob.CodeIO)
	if s.Path(r) == "" {
		t.Fatal("Path stopped working after Close")
	}
}

// TestReadRefusesLinkedShard: a shard directory replaced by a link, even
// to a directory holding the right bytes, is refused, not followed.
func TestReadRefusesLinkedShard(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	data := []byte("lives in its shard")
	r, err := s.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	shard := filepath.Dir(s.Path(r))
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(shard, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, shard); err != nil {
		t.Fatal(err)
	}
	_, err = s.Read(r)
	wantCode(t, err, blob.CodeLinkRefused)
	_, err = s.Put(append([]byte(nil), data...))
	wantCode(t, err, blob.CodeLinkRefused)
}

func TestOpenCreatesRootWithRootMode(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	if _, err := blob.Open(root); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		t.Fatal(err)
	}
	// The umask may only remove bits.
	if perm := fi.Mode().Perm(); perm&^blob.RootModeForTest != 0 || perm&0o700 != 0o700 {
		t.Fatalf("root mode %v, want at most %v and owner rwx", perm, fs.FileMode(blob.RootModeForTest))
	}
}

func TestZeroStoreRefuses(t *testing.T) {
	var s blob.Store
	_, err := s.Put([]byte("x"))
	wantCode(t, err, blob.CodeInvalidRoot)
	_, err = s.Read(blob.Sum([]byte("x")))
	wantCode(t, err, blob.CodeInvalidRoot)
	_, err = s.Sweep(0)
	wantCode(t, err, blob.CodeInvalidRoot)
	_, err = s.Create().Write([]byte("x"))
	wantCode(t, err, blob.CodeInvalidRoot)
	if p := s.Path(blob.Sum(nil)); p != "" {
		t.Fatalf("zero store Path = %q", p)
	}
}

func TestPutRead(t *testing.T) {
	s := openStore(t)
	data := []byte("hello, blob\n")
	r, err := s.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := blob.Sum(data); r != want {
		t.Fatalf("Put = %s, want %s", r, want)
	}
	if want := filepath.Join(s.Root(), string(r[:2]), string(r)); s.Path(r) != want {
		t.Fatalf("Path = %s, want %s", s.Path(r), want)
	}
	got, err := s.Read(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Read = %q, %v", got, err)
	}
	fi, err := os.Stat(s.Path(r))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != blob.BlobModeForTest {
		t.Fatalf("blob mode %v, want %v", fi.Mode().Perm(), fs.FileMode(blob.BlobModeForTest))
	}
	// Same bytes again: same ref, still one file.
	r2, err := s.Put(bytes.Clone(data))
	if err != nil || r2 != r {
		t.Fatalf("second Put = %s, %v", r2, err)
	}
	if diff := cmp.Diff([]string{filepath.Join(string(r[:2]), string(r))}, files(t, s.Root())); diff != "" {
		t.Fatalf("store contents (-want +got):\n%s", diff)
	}
}

func TestPutEmpty(t *testing.T) {
	s := openStore(t)
	r, err := s.Put(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(r)
	if err != nil || len(got) != 0 {
		t.Fatalf("Read(empty) = %q, %v", got, err)
	}
}

func TestReadRefusals(t *testing.T) {
	s := openStore(t)
	missing := blob.Sum([]byte("never stored"))
	_, err := s.Read(missing)
	wantCode(t, err, blob.CodeNotFound)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("not-found error %v does not match fs.ErrNotExist", err)
	}

	_, err = s.Read(blob.Ref("../../etc/passwd"))
	wantCode(t, err, blob.CodeInvalidRef)
	if p := s.Path(blob.Ref("../../etc/passwd")); p != "" {
		t.Fatalf("Path of a malformed ref = %q, want \"\"", p)
	}

	// A file under a name it does not hash to is never returned.
	liar := blob.Sum([]byte("claimed"))
	if err := os.MkdirAll(filepath.Dir(s.Path(liar)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(liar), []byte("actual"), 0o444); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(liar)
	wantCode(t, err, blob.CodeCorrupt)
	if got != nil {
		t.Fatalf("corrupt Read returned %q", got)
	}

	// Neither is something that is not a regular file.
	dirRef := blob.Sum([]byte("a directory"))
	if err := os.MkdirAll(s.Path(dirRef), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = s.Read(dirRef)
	wantCode(t, err, blob.CodeCorrupt)
}

func TestPutRepairsWrongSizedEntry(t *testing.T) {
	s := openStore(t)
	data := []byte("the real content")
	r := blob.Sum(data)
	if err := os.MkdirAll(filepath.Dir(s.Path(r)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(r), []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(data); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Read after repair = %q, %v", got, err)
	}
}

func TestRefOf(t *testing.T) {
	s := openStore(t)
	r := blob.Sum([]byte("x"))
	tests := []struct {
		name string
		path string
		ok   bool
	}{
		{"blob path", s.Path(r), true},
		{"uncleaned blob path", s.Root() + "/./" + string(r[:2]) + "//" + string(r), true},
		{"wrong shard", filepath.Join(s.Root(), "00", string(r)), r[:2] == "00"},
		{"unsharded", filepath.Join(s.Root(), string(r)), false},
		{"staged file", filepath.Join(s.Root(), blob.StagePrefixForTest+"123"+blob.StageSuffixForTest), false},
		{"staged file named like a ref", filepath.Join(s.Root(), string(r[:2]), string(r)+blob.StageSuffixForTest), false},
		{"shard dir", filepath.Join(s.Root(), string(r[:2])), false},
		{"root", s.Root(), false},
		{"other root", filepath.Join("/elsewhere", string(r[:2]), string(r)), false},
		{"relative", filepath.Join(string(r[:2]), string(r)), false},
		{"uppercase", filepath.Join(s.Root(), string(r[:2]), string(bytes.ToUpper([]byte(r)))), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := s.RefOf(tt.path)
			if ok != tt.ok || (ok && got != r) {
				t.Fatalf("RefOf(%q) = %q, %v; want ok=%v", tt.path, got, ok, tt.ok)
			}
		})
	}
}

// TestPutReadProperty: whatever bytes go in come back under their SHA-256.
func TestPutReadProperty(t *testing.T) {
	s := openStore(t)
	rapid.Check(t, func(t *rapid.T) {
		data := rapid.SliceOfN(rapid.Byte(), 0, 4096).Draw(t, "data")
		r, err := s.Put(data)
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		sum := sha256.Sum256(data)
		if want := blob.Sum(data); r != want || string(r) != hexOf(sum[:]) {
			t.Fatalf("ref %s, want sha256 %x", r, sum)
		}
		got, err := s.Read(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Read = %x, %v; want %x", got, err, data)
		}
		if back, ok := s.RefOf(s.Path(r)); !ok || back != r {
			t.Fatalf("RefOf(Path(r)) = %s, %v", back, ok)
		}
	})
	if left := staged(t, s.Root()); len(left) != 0 {
		t.Fatalf("staged files left behind: %v", left)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestConcurrentPutIdentical: racing first writes of the same bytes leave
// one blob with the right content and no staged file.
func TestConcurrentPutIdentical(t *testing.T) {
	const writers = 16
	s := openStore(t)
	data := bytes.Repeat([]byte("concurrent identical bytes\n"), 8<<10)
	want := blob.Sum(data)
	start := make(chan struct{})
	refs := make([]blob.Ref, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				refs[i], errs[i] = s.Put(data)
				return
			}
			w := s.Create()
			defer w.Abort()
			for chunk := range slices.Chunk(data, 10000) {
				if _, err := w.Write(chunk); err != nil {
					errs[i] = err
					return
				}
			}
			refs[i], errs[i] = w.Commit()
		})
	}
	close(start)
	wg.Wait()
	for i := range writers {
		if errs[i] != nil || refs[i] != want {
			t.Fatalf("writer %d: %s, %v", i, refs[i], errs[i])
		}
	}
	if diff := cmp.Diff([]string{filepath.Join(string(want[:2]), string(want))}, files(t, s.Root())); diff != "" {
		t.Fatalf("store contents (-want +got):\n%s", diff)
	}
	got, err := s.Read(want)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Read: %v (len %d, want %d)", err, len(got), len(data))
	}
}

// TestPutAfterRootSwappedForLink is the deterministic form of the root
// race: once the store is open, its root is moved aside and a link to
// another directory put in its place. The pinned store keeps writing
// into its own directory (now moved); a write by path (the control)
// lands in the link's target.
func TestPutAfterRootSwappedForLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, moved, target := filepath.Join(dir, "blobs"), filepath.Join(dir, "moved"), filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := blob.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Rename(root, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, root); err != nil {
		t.Fatal(err)
	}
	data := []byte("* * * * * root /tmp/payload\n")
	r, err := s.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	w := s.Create()
	w.Write([]byte("streamed"))
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := len(files(t, target)); n != 0 {
		t.Fatalf("%d files written through the swapped-in link", n)
	}
	if got, err := os.ReadFile(filepath.Join(moved, string(r[:2]), string(r))); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the blob is not in the store's own directory: %q, %v", got, err)
	}
	// Control: the same write by path goes where the link points.
	p := filepath.Join(root, string(r[:2]), string(r))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o444); err != nil {
		t.Fatal(err)
	}
	if n := len(files(t, target)); n != 1 {
		t.Fatalf("control: a write by path put %d files in the target, want 1", n)
	}
}
