package blob

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Filesystem layout and modes of a store.
const (
	// RootMode is the permission a missing store root is created with.
	RootMode = 0o755
	// BlobMode is the permission of every established blob: read-only for
	// everyone, so neither a tool nor a jailed command can rewrite a blob
	// in place under its address.
	BlobMode = 0o444
	// ShardLen is how many leading hex characters of a ref name the
	// directory a blob lives in (root/ab/abcdef...), keeping any one
	// directory to at most 256 shards of manageable size.
	ShardLen = 2
	// StagePrefix begins the name of every staged file in the store root;
	// the middle of the name is random and unique to one write. A staged
	// file is never a blob: only a rename establishes one.
	StagePrefix = "stage-"
	// StageSuffix ends the name of every staged file in the store root.
	StageSuffix = ".tmp"
)

// Store is a content-addressed blob store rooted at one directory. A blob
// lives at root/<first ShardLen hex>/<ref> and is established only by
// renaming a fully written, fsynced, read-only staged file into place, so
// nothing is ever reachable under an address but the whole content it
// names. Writing the same bytes twice stores them once.
//
// A Store holds no mutable state beyond its root; all its methods are safe
// for concurrent use, including by several processes sharing one root.
// The zero Store is not usable; call Open.
type Store struct {
	root string
}

// Open returns the store rooted at root, which must be an absolute path.
// A missing root is created with RootMode (parents included); an existing
// root must be a directory. The store keeps the root with symbolic links
// resolved, so Path and RefOf agree with a caller that resolves the paths
// it checks. Open neither lists nor sweeps the root.
func Open(root string) (*Store, error) {
	if !filepath.IsAbs(root) {
		return nil, newError(CodeInvalidRoot, "open", "", root, "the store root must be an absolute path", nil)
	}
	root = filepath.Clean(root)
	fi, err := os.Stat(root)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(root, RootMode); err != nil {
			return nil, ioError("open", "", root, err)
		}
		fi, err = os.Stat(root)
	}
	if err != nil {
		return nil, ioError("open", "", root, err)
	}
	if !fi.IsDir() {
		return nil, newError(CodeInvalidRoot, "open", "", root, "the store root is not a directory", nil)
	}
	resolved, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, ioError("open", "", root, err)
	}
	return &Store{root: resolved}, nil
}

// Root returns the store's absolute root, cleaned and with symbolic links
// resolved.
func (s *Store) Root() string { return s.root }

// Path returns the absolute file path at which the blob r is (or would be)
// stored. It returns "" when r is not a well-formed Ref, so a forged Ref
// can never resolve outside the store. Path does not touch the filesystem.
func (s *Store) Path(r Ref) string {
	if s == nil || s.root == "" || !r.Valid() {
		return ""
	}
	return filepath.Join(s.root, string(r[:ShardLen]), string(r))
}

// RefOf reports whether path names a blob of this store, lexically: after
// cleaning, it must be exactly Path(ref) for some well-formed ref. Staged
// files, shard directories and anything outside the root are not blobs.
// RefOf does not touch the filesystem; use Read to learn whether the blob
// exists and is intact.
func (s *Store) RefOf(path string) (Ref, bool) {
	if s == nil || s.root == "" {
		return "", false
	}
	path = filepath.Clean(path)
	r, err := ParseRef(filepath.Base(path))
	if err != nil || s.Path(r) != path {
		return "", false
	}
	return r, true
}

// Put stores data and returns its Ref. If a blob of that ref and size is
// already present, Put returns at once without writing. Otherwise it
// stages data in the root under a name unique to this call, fsyncs it,
// makes it read-only and renames it into place. Any number of concurrent
// Puts of identical bytes, in one process or several, leave exactly one
// blob and no staged file behind.
func (s *Store) Put(data []byte) (Ref, error) {
	if err := s.check("put"); err != nil {
		return "", err
	}
	r := Sum(data)
	if s.present(r, int64(len(data))) {
		return r, nil
	}
	f, err := s.stage()
	if err != nil {
		return "", ioError("put", r, s.root, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", ioError("put", r, f.Name(), err)
	}
	if err := s.establish("put", f, r, int64(len(data))); err != nil {
		return "", err
	}
	return r, nil
}

// Read returns the content of blob r. It refuses a malformed ref
// (CodeInvalidRef), reports a missing blob as CodeNotFound (matching
// fs.ErrNotExist), and verifies the bytes it read hash to r, reporting
// anything else (including a non-regular file) as CodeCorrupt, so nothing
// is ever returned under a name that is not its own. Read loads the whole
// blob into memory; a caller wanting a window reads Path(r) itself.
func (s *Store) Read(r Ref) ([]byte, error) {
	if err := s.check("read"); err != nil {
		return nil, err
	}
	if _, err := ParseRef(string(r)); err != nil {
		return nil, err
	}
	p := s.Path(r)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, newError(CodeNotFound, "read", r, "", "no blob is stored under this ref", err)
	}
	if err != nil {
		return nil, ioError("read", r, p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, newError(CodeCorrupt, "read", r, p, "the stored entry is not a regular file", nil)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, ioError("read", r, p, err)
	}
	if got := Sum(data); got != r {
		return nil, newError(CodeCorrupt, "read", r, p, "the stored content hashes to "+string(got), nil)
	}
	return data, nil
}

// Sweep removes staged files in the root whose modification time is more
// than olderThan ago (a negative olderThan counts as zero) and returns how
// many it removed. Staged files are what a crash between staging and
// rename leaves behind; nothing reads them, so removing them only reclaims
// space. Choose olderThan longer than any write takes: a write whose
// staged file is swept fails at its rename and establishes nothing.
// Errors on individual files are joined; Sweep carries on past them.
func (s *Store) Sweep(olderThan time.Duration) (int, error) {
	if err := s.check("sweep"); err != nil {
		return 0, err
	}
	cutoff := time.Now().Add(-max(olderThan, 0))
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return 0, ioError("sweep", "", s.root, err)
	}
	removed := 0
	var errs []error
	for _, e := range entries {
		if !isStageName(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // committed or swept concurrently
		}
		if err != nil {
			errs = append(errs, ioError("sweep", "", filepath.Join(s.root, e.Name()), err))
			continue
		}
		if fi.ModTime().After(cutoff) {
			continue
		}
		p := filepath.Join(s.root, e.Name())
		switch err := os.Remove(p); {
		case err == nil:
			removed++
		case errors.Is(err, fs.ErrNotExist):
		default:
			errs = append(errs, ioError("sweep", "", p, err))
		}
	}
	return removed, errors.Join(errs...)
}

func isStageName(name string) bool {
	return strings.HasPrefix(name, StagePrefix) && strings.HasSuffix(name, StageSuffix)
}

func (s *Store) check(op string) error {
	if s == nil || s.root == "" {
		return newError(CodeInvalidRoot, op, "", "", "the store was not opened with blob.Open", nil)
	}
	return nil
}

// present reports whether a regular file of the given size already sits at
// r's address. Only a rename puts a file there, so presence means the
// whole content is there.
func (s *Store) present(r Ref, size int64) bool {
	fi, err := os.Lstat(s.Path(r))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

// stage creates a fresh staged file in the root, on the same filesystem
// as every blob so the rename that establishes it is atomic.
func (s *Store) stage() (*os.File, error) {
	return os.CreateTemp(s.root, StagePrefix+"*"+StageSuffix)
}

// establish fsyncs and closes the staged file f, makes it read-only and
// renames it to r's address. When a blob of the same size is already
// there the staged file is removed instead. On every failure the staged
// file is removed too.
func (s *Store) establish(op string, f *os.File, r Ref, size int64) (err error) {
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err := f.Sync(); err != nil {
		f.Close()
		return ioError(op, r, tmp, err)
	}
	if err := f.Chmod(BlobMode); err != nil {
		f.Close()
		return ioError(op, r, tmp, err)
	}
	if err := f.Close(); err != nil {
		return ioError(op, r, tmp, err)
	}
	if s.present(r, size) {
		os.Remove(tmp)
		return nil
	}
	dst := s.Path(r)
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, RootMode); err != nil {
		return ioError(op, r, dir, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return ioError(op, r, dst, err)
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename into dir durable where the platform allows it.
// It is best effort: some filesystems refuse fsync on a directory, and
// the blob is already correct and readable either way.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
