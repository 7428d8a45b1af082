package blob

import (
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloom/loom/internal/pinnedfs"
)

// Filesystem layout and modes of a store.
const (
	// rootMode is the permission a missing store root is created with.
	rootMode = 0o755
	// blobMode is the permission of every established blob: read-only for
	// everyone, so neither a tool nor a jailed command can rewrite a blob
	// in place under its address.
	blobMode = 0o444
	// shardLen is how many leading hex characters of a ref name the
	// directory a blob lives in (root/ab/abcdef...), keeping any one
	// directory to at most 256 shards of manageable size.
	shardLen = 2
	// stagePrefix begins the name of every staged file in the store root;
	// the middle of the name is random and unique to one write. A staged
	// file is never a blob: only a rename establishes one.
	stagePrefix = "stage-"
	// stageSuffix ends the name of every staged file in the store root.
	stageSuffix = ".tmp"
)

// DefaultRoot returns where a host keeps its store unless it has reason
// to choose otherwise: the user's cache directory (os.UserCacheDir, e.g.
// ~/.cache on Linux) joined with "loom/blobs". It is outside every
// workspace, so no jailed command can replace the store or its ancestors
// with links. It fails when the system names no cache directory (on
// Linux, neither $XDG_CACHE_HOME nor $HOME is set); the caller then picks
// a root itself.
func DefaultRoot() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", newError(CodeInvalidRoot, "open", "", "", "the system names no user cache directory for the default store root; choose one", err)
	}
	return filepath.Join(dir, "loom", "blobs"), nil
}

// Store is a content-addressed blob store rooted at one directory, and
// one session's view of it. A blob lives at root/<first shardLen hex>/<ref>
// and is established only by renaming a fully written, fsynced,
// read-only staged file into place, so nothing is ever reachable under an
// address but the whole content it names. Writing the same bytes twice
// stores them once.
//
// The store holds its root open as a pinned directory (an *os.Root) from
// Open on: every stage, write, rename, read, sweep and eviction goes
// through that descriptor, one name at a time, never through a path
// string joined and reopened. A shard directory is used only after it is
// confirmed to be a real directory inside the root, not a symbolic link,
// and to be the very directory that was checked (see CodeLinkRefused). So
// replacing the root or any directory under it with a link, even while a
// write runs, cannot make the store read or write anywhere else.
//
// The store is bounded (see Options). One opened Store is one session: it
// holds every blob it stores or reads until Close, in a lease file under
// the root that it keeps locked, so no eviction by any process sharing
// the root removes a blob a live session holds; and what it stores is
// charged against its own budget, past which a write is refused with
// CodeSpillBudget. Where the platform has no flock (Windows, AIX) the
// store keeps no ledger and never evicts; the session budget holds.
//
// All its methods are safe for concurrent use, including by several
// processes sharing one root. The zero Store is not usable; call Open.
type Store struct {
	dir    *os.Root // the pinned root; nil for the zero Store
	root   string   // its absolute path, ancestors resolved, for Path and RefOf
	ledger *os.Root // the pinned root/ledger; nil without flock
	opts   Options  // defaults applied
	now    func() time.Time
	closed atomic.Bool
	// testHookBeforeHold, when set by a test, runs while Put holds the
	// store lock, between finding a blob present and holding it.
	testHookBeforeHold func()

	mu        sync.Mutex
	lease     *os.File      // this session's lease, once it holds a blob
	leaseName string        // its name in the ledger
	held      map[Ref]int64 // refs held, each with what it is charged
	used      int64         // the charges in held
	reserved  int64         // charges claimed by writes not yet established
}

// Open returns the store rooted at root, which must be an absolute path
// other than "/". Missing ancestors are created with rootMode and, being
// the host's own path, are resolved as the system resolves them; the root
// itself is created with rootMode if missing and must then be a real
// directory: a root that is a symbolic link is refused with
// CodeInvalidRoot rather than followed, and so is one swapped for another
// directory while Open pins it. The store keeps the pinned directory
// until Close, and reports its path with ancestors' links resolved, so
// Path and RefOf agree with a caller that resolves the paths it checks.
// Open creates the store's ledger (root/ledger) if missing, removes
// leases no live Store holds, and when the store has no usage record
// (new, or written before stores were bounded) or is over its budget,
// counts its blobs and evicts.
//
// Keep the root outside every tree a jailed command can write (the
// workspace above all): the default place is DefaultRoot. Inside such a
// tree a command could still replace an ancestor with a link before the
// next Open, which Open would follow.
func Open(root string) (*Store, error) {
	return OpenWith(root, Options{})
}

// OpenWith is Open with the store's bounds: Options{} is the default,
// DefaultMaxBytes for the store and DefaultSessionBytes for this
// session.
func OpenWith(root string, opts Options) (*Store, error) {
	if !filepath.IsAbs(root) {
		return nil, newError(CodeInvalidRoot, "open", "", root, "the store root must be an absolute path", nil)
	}
	root = filepath.Clean(root)
	parent, base := filepath.Split(root)
	if base == "" {
		return nil, newError(CodeInvalidRoot, "open", "", root, "the store root must not be the file system root", nil)
	}
	if err := os.MkdirAll(parent, rootMode); err != nil {
		return nil, ioError("open", "", root, err)
	}
	resolved, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return nil, ioError("open", "", root, err)
	}
	up, err := os.OpenRoot(resolved)
	if err != nil {
		return nil, ioError("open", "", root, err)
	}
	defer up.Close()
	if err := up.Mkdir(base, rootMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, ioError("open", "", root, err)
	}
	dir, err := openDirNoFollow(up, base)
	switch {
	case errors.Is(err, errLink):
		return nil, newError(CodeInvalidRoot, "open", "", root, "the store root is a symbolic link or was replaced while it was opened; a store root is never followed through a link", err)
	case errors.Is(err, errNotDir):
		return nil, newError(CodeInvalidRoot, "open", "", root, "the store root is not a directory", err)
	case err != nil:
		return nil, ioError("open", "", root, err)
	}
	s := &Store{dir: dir, root: filepath.Join(resolved, base), opts: opts.withDefaults(), now: time.Now, held: map[Ref]int64{}}
	if ledgerSupported {
		if err := s.openLedger(); err != nil {
			s.closeDirs()
			return nil, err
		}
	}
	return s, nil
}

// Close ends the session: it removes the session's lease, so the blobs
// it held may be evicted (and evicts at once when the store is over its
// budget), then releases the pinned root. Every later operation fails
// with CodeIO; Path and RefOf keep working, as they never touch the file
// system. Close is safe to call more than once.
func (s *Store) Close() error {
	if s == nil || s.dir == nil || s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock() // wait for a hold in progress; later ones see closed
	s.mu.Unlock()
	var errs []error
	if s.ledger != nil {
		errs = append(errs, s.releaseLease())
		s.evictIfOver() // best effort: the next write or Open evicts too
	}
	errs = append(errs, s.closeDirs())
	return errors.Join(errs...)
}

// closeDirs releases the pinned ledger and root.
func (s *Store) closeDirs() error {
	if s.ledger != nil {
		s.ledger.Close()
	}
	if err := s.dir.Close(); err != nil && !errors.Is(err, fs.ErrClosed) {
		return ioError("close", "", s.root, err)
	}
	return nil
}

// Root returns the store's absolute root, cleaned and with its ancestors'
// symbolic links resolved (the root itself is never a link).
func (s *Store) Root() string {
	if s == nil {
		return ""
	}
	return s.root
}

// Path returns the absolute file path at which the blob r is (or would be)
// stored. It returns "" when r is not a well-formed Ref, so a forged Ref
// can never resolve outside the store. Path does not touch the filesystem.
func (s *Store) Path(r Ref) string {
	if s == nil || s.root == "" || !r.Valid() {
		return ""
	}
	return filepath.Join(s.root, string(r[:shardLen]), string(r))
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

// Put stores data and returns its Ref, and the session holds the blob
// until Close (no eviction removes it meanwhile). If a blob of that ref
// and size is already present, Put returns at once without writing,
// marking it recently used. Otherwise it stages data in the root under a
// name unique to this call, fsyncs it, makes it read-only and renames it
// into place. Any number of concurrent Puts of identical bytes, in one
// process or several, leave exactly one blob and no staged file behind.
//
// The blob is charged (its size in whole BlockBytes) against the
// session's budget unless the session holds it already; past the budget
// Put stores nothing and fails with CodeSpillBudget. A Put that takes
// the store past Options.MaxBytes evicts before it returns; eviction is
// best effort, and its failure is not the Put's.
func (s *Store) Put(data []byte) (Ref, error) {
	if err := s.check("put"); err != nil {
		return "", err
	}
	r, size := Sum(data), int64(len(data))
	need, err := s.claim("put", r, charge(size), 0)
	if err != nil {
		return "", err
	}
	if ok, err := s.holdIfPresent(r, size, need); err != nil || ok {
		if err != nil {
			s.release(need)
			return "", ioError("put", r, s.Path(r), err)
		}
		return r, nil
	}
	f, name, err := s.stage()
	if err != nil {
		s.release(need)
		return "", ioError("put", r, s.root, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		s.dir.Remove(name)
		s.release(need)
		return "", ioError("put", r, s.stagedPath(name), err)
	}
	if err := s.establish("put", f, name, r, size, need); err != nil {
		return "", err
	}
	return r, nil
}

// holdIfPresent holds r and marks it recently used if a blob of that
// size is present, consuming the reservation need; it reports false,
// keeping the reservation, when it is not. A blob the session holds
// already cannot be evicted, so it is checked without the store lock.
func (s *Store) holdIfPresent(r Ref, size, need int64) (bool, error) {
	if need == 0 && s.holding(r) {
		return s.present(r, size), nil
	}
	lock, err := s.lock(false)
	if err != nil {
		return false, err
	}
	defer closeLock(lock)
	if !s.present(r, size) {
		return false, nil
	}
	if s.testHookBeforeHold != nil {
		s.testHookBeforeHold()
	}
	if err := s.hold(r, charge(size), need); err != nil {
		return false, err
	}
	return true, nil
}

// closeLock releases the store lock held by the usage record f.
func closeLock(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// Read returns the content of blob r, and the session holds it until
// Close, marked recently used. It refuses a malformed ref
// (CodeInvalidRef), reports a missing blob (never stored, or evicted) as
// CodeNotFound (matching fs.ErrNotExist), and verifies the bytes it read
// hash to r, reporting anything else (including a non-regular file) as
// CodeCorrupt, so nothing is ever returned under a name that is not its
// own. Read loads the whole blob into memory; a caller wanting a window
// reads Path(r) itself. A read is never charged against the session's
// budget.
func (s *Store) Read(r Ref) ([]byte, error) {
	if err := s.check("read"); err != nil {
		return nil, err
	}
	if _, err := ParseRef(string(r)); err != nil {
		return nil, err
	}
	f, err := s.openHeld(r)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	touchFile(f, s.now())
	p := s.Path(r)
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, ioError("read", r, p, err)
	}
	if got := Sum(data); got != r {
		return nil, newError(CodeCorrupt, "read", r, p, "the stored content hashes to "+string(got), nil)
	}
	return data, nil
}

// openHeld opens blob r for reading and holds it, under the store lock
// unless the session holds it already, so no eviction comes between.
func (s *Store) openHeld(r Ref) (*os.File, error) {
	p := s.Path(r)
	if !s.holding(r) {
		lock, err := s.lock(false)
		if err != nil {
			return nil, ioError("read", r, p, err)
		}
		defer closeLock(lock)
	}
	shard, err := s.openShard(r, false)
	if err != nil {
		return nil, s.shardError("read", r, err)
	}
	defer shard.Close()
	fi, err := shard.Lstat(string(r))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, newError(CodeNotFound, "read", r, "", notFoundReason, err)
	}
	if err != nil {
		return nil, ioError("read", r, p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, newError(CodeCorrupt, "read", r, p, "the stored entry is not a regular file", nil)
	}
	f, opened, err := pinnedfs.OpenRegular(shard, string(r))
	if errors.Is(err, pinnedfs.ErrNotRegular) {
		return nil, newError(CodeCorrupt, "read", r, p, "the stored entry is not a regular file", err)
	}
	if err != nil {
		return nil, ioError("read", r, p, err)
	}
	if !os.SameFile(fi, opened) {
		f.Close()
		return nil, newError(CodeLinkRefused, "read", r, p, "the stored entry was replaced while it was opened", nil)
	}
	if err := s.hold(r, 0, 0); err != nil {
		f.Close()
		return nil, ioError("read", r, p, err)
	}
	return f, nil
}

// notFoundReason is what a missing blob's error says.
const notFoundReason = "no blob is stored under this ref (never stored, or evicted once no open session held it and the store was over its budget)"

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
	d, err := s.dir.Open(".")
	if err != nil {
		return 0, ioError("sweep", "", s.root, err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return 0, ioError("sweep", "", s.root, err)
	}
	removed := 0
	var errs []error
	for _, e := range entries {
		if !isStageName(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		fi, err := s.dir.Lstat(e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue // committed or swept concurrently
		}
		if err != nil {
			errs = append(errs, ioError("sweep", "", s.stagedPath(e.Name()), err))
			continue
		}
		if !fi.Mode().IsRegular() || fi.ModTime().After(cutoff) {
			continue
		}
		switch err := s.dir.Remove(e.Name()); {
		case err == nil:
			removed++
		case errors.Is(err, fs.ErrNotExist):
		default:
			errs = append(errs, ioError("sweep", "", s.stagedPath(e.Name()), err))
		}
	}
	return removed, errors.Join(errs...)
}

func isStageName(name string) bool {
	return strings.HasPrefix(name, stagePrefix) && strings.HasSuffix(name, stageSuffix)
}

func (s *Store) check(op string) error {
	if s == nil || s.dir == nil {
		return newError(CodeInvalidRoot, op, "", "", "the store was not opened with blob.Open", nil)
	}
	if s.closed.Load() {
		return newError(CodeIO, op, "", s.root, "the store is closed; open it again", fs.ErrClosed)
	}
	return nil
}

// stagedPath is the absolute path of the staged file name, for messages.
func (s *Store) stagedPath(name string) string { return filepath.Join(s.root, name) }

// present reports whether a regular file of the given size already sits at
// r's address, in a shard directory that is not a link. Only a rename puts
// a file there, so presence means the whole content is there. When it is
// there, present marks it recently used: it sets the blob's modification
// time to now through a descriptor opened beneath the pinned shard, once
// confirmed the very file found. Marking is best effort: recency only
// orders eviction.
func (s *Store) present(r Ref, size int64) bool {
	shard, err := s.openShard(r, false)
	if err != nil {
		return false
	}
	defer shard.Close()
	fi, err := shard.Lstat(string(r))
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return false
	}
	if s.ledger != nil {
		if f, opened, err := pinnedfs.OpenRegular(shard, string(r)); err == nil {
			if os.SameFile(fi, opened) {
				touchFile(f, s.now())
			}
			f.Close()
		}
	}
	return true
}

// stage creates a fresh staged file in the root, on the same filesystem
// as every blob so the rename that establishes it is atomic, and returns
// it with its name in the root. O_CREATE|O_EXCL never follows a link, so
// a name planted in the root cannot redirect the write.
func (s *Store) stage() (*os.File, string, error) {
	for range stageAttempts {
		name := stagePrefix + rand.Text() + stageSuffix
		f, err := s.dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", fs.ErrExist
}

// stageAttempts bounds how many fresh random names stage tries; with 26
// random base-32 characters a collision is already vanishingly rare.
const stageAttempts = 4

// openShard opens r's shard directory beneath the pinned root, creating
// it (mode rootMode) when create is set. It refuses with errLink a shard
// that is a symbolic link or was swapped while it was opened.
func (s *Store) openShard(r Ref, create bool) (*os.Root, error) {
	name := string(r[:shardLen])
	if create {
		if err := s.dir.Mkdir(name, rootMode); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return openDirNoFollow(s.dir, name)
}

// shardError turns a failure to open r's shard into the package's error.
func (s *Store) shardError(op string, r Ref, err error) error {
	dir := filepath.Join(s.root, string(r[:shardLen]))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return newError(CodeNotFound, op, r, "", notFoundReason, err)
	case errors.Is(err, errLink), errors.Is(err, errNotDir):
		return newError(CodeLinkRefused, op, r, dir, "the shard directory is not a real directory of the store (a link, or replaced while it was opened); nothing was read or written through it", err)
	}
	return ioError(op, r, dir, err)
}

// errLink and errNotDir are the causes openDirNoFollow refuses with.
var (
	errLink   = errors.New("a symbolic link, or replaced while it was opened")
	errNotDir = errors.New("not a directory")
)

// openDirNoFollow opens the directory name directly beneath parent as a
// pinned root without following a link: it looks at the entry itself
// first, opens it, and confirms the opened directory is that same entry,
// so a link in its place (or swapped in between) is refused with errLink.
func openDirNoFollow(parent *os.Root, name string) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errLink
	}
	if !fi.IsDir() {
		return nil, errNotDir
	}
	d, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	opened, err := d.Stat(".")
	if err != nil {
		d.Close()
		return nil, err
	}
	if !os.SameFile(fi, opened) {
		d.Close()
		return nil, errLink
	}
	return d, nil
}

// establish fsyncs and closes the staged file f (named name in the root),
// makes it read-only, marks it recently used and, under the store's
// exclusive lock, holds r and renames the file to r's address, then
// records the charge and evicts if the store is over its budget. When a
// blob of the same size is already there the staged file is removed
// instead. On every failure the staged file is removed too. establish
// consumes the reservation need: charged to r's hold on success,
// returned on failure.
func (s *Store) establish(op string, f *os.File, name string, r Ref, size, need int64) (err error) {
	tmp := s.stagedPath(name)
	defer func() {
		if err != nil {
			s.dir.Remove(name)
			s.release(need)
		}
	}()
	if err := f.Sync(); err != nil {
		f.Close()
		return ioError(op, r, tmp, err)
	}
	if err := f.Chmod(blobMode); err != nil {
		f.Close()
		return ioError(op, r, tmp, err)
	}
	if s.ledger != nil {
		if err := touchFile(f, s.now()); err != nil {
			f.Close()
			return ioError(op, r, tmp, err)
		}
	}
	if err := f.Close(); err != nil {
		return ioError(op, r, tmp, err)
	}
	lock, err := s.lock(true)
	if err != nil {
		return ioError(op, r, tmp, err)
	}
	defer func() { closeLock(lock) }()
	if s.present(r, size) {
		if err := s.hold(r, charge(size), need); err != nil {
			return ioError(op, r, s.Path(r), err)
		}
		s.dir.Remove(name)
		return nil
	}
	shard, err := s.openShard(r, true)
	if err != nil {
		return s.shardError(op, r, err)
	}
	defer shard.Close()
	if err := s.hold(r, charge(size), need); err != nil {
		return ioError(op, r, s.Path(r), err)
	}
	if err := renameInto(s.dir, name, shard, string(r[:shardLen]), string(r)); err != nil {
		// The hold stays: r may yet be stored by another write, and a
		// hold on a missing blob costs nothing but its charge.
		need = 0
		return ioError(op, r, s.Path(r), err)
	}
	if lock != nil {
		s.added(lock, charge(size)) // best effort, as documented on Put
		closeLock(lock)
		lock = nil
	}
	syncDir(shard)
	return nil
}

// syncDir makes a rename into d durable where the platform allows it.
// It is best effort: some filesystems refuse fsync on a directory, and
// the blob is already correct and readable either way.
func syncDir(d *os.Root) {
	f, err := d.Open(".")
	if err != nil {
		return
	}
	f.Sync()
	f.Close()
}
