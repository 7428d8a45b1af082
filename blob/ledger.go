package blob

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// The ledger: a store's bookkeeping, in root/ledger, shared by every
// process that opens the root.
//
//   - ledger/usage records the bytes charged for every blob in the store
//     and, after an eviction, what it left ("<total> <mark>\n"). It is
//     also the store-wide lock: every Put, Commit and Read that starts to
//     hold a blob holds it shared (flock LOCK_SH), every write that
//     establishes a blob and every eviction exclusively (LOCK_EX), so no
//     eviction runs between a session's hold on a blob and its use.
//   - ledger/<26 base-32 characters>.lease is one open Store's lease: the
//     refs it holds (it stored or read them), one per line, appended as
//     it goes. Its Store keeps it locked shared until Close removes it.
//     A lease nobody holds locked belongs to a Store that ended without
//     Close (a crash); an eviction removes it and ignores its refs.
//
// Nothing in the ledger is a blob, and eviction never touches it but to
// remove stale leases.
const (
	ledgerDir   = "ledger"
	usageName   = "usage"
	leaseSuffix = ".lease"
	// leaseIDLen is the length of rand.Text's output.
	leaseIDLen = 26
	// maxUsageBytes bounds the usage record read back.
	maxUsageBytes = 64
)

// errLocked is lockFile's answer when another open file holds the lock.
var errLocked = errors.New("locked by another open file")

// errNotLedgerFile refuses a ledger entry that is not a regular file.
var errNotLedgerFile = errors.New("not a regular file")

// isLeaseName reports whether name is a lease's: leaseIDLen characters
// of rand.Text's base-32 alphabet, then leaseSuffix.
func isLeaseName(name string) bool {
	id, ok := bytes.CutSuffix([]byte(name), []byte(leaseSuffix))
	if !ok || len(id) != leaseIDLen {
		return false
	}
	for _, c := range id {
		if !('A' <= c && c <= 'Z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}

// openLedger creates and pins root/ledger, then reconciles the store:
// it removes stale leases and, when the usage record is missing (a new
// store, or one written before stores were bounded) or over the budget,
// counts the blobs and evicts. Reconciling is best effort (a lease it
// cannot read only postpones eviction); pinning the ledger and taking
// its lock are not.
func (s *Store) openLedger() error {
	if err := s.dir.Mkdir(ledgerDir, rootMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return ioError("open", "", s.ledgerPath(), err)
	}
	d, err := openDirNoFollow(s.dir, ledgerDir)
	switch {
	case errors.Is(err, errLink), errors.Is(err, errNotDir):
		return newError(CodeLinkRefused, "open", "", s.ledgerPath(), "the store's ledger is not a real directory of the store (a link, or replaced while it was opened); nothing was read or written through it", err)
	case err != nil:
		return ioError("open", "", s.ledgerPath(), err)
	}
	s.ledger = d
	lock, err := s.lock(true)
	if err != nil {
		return ioError("open", "", s.ledgerPath(), err)
	}
	defer lock.Close()
	if u, ok := readUsage(lock); ok && u.total <= s.opts.MaxBytes {
		s.liveHolds()
		return nil
	}
	s.evictLocked(lock)
	return nil
}

func (s *Store) ledgerPath() string { return s.stagedPath(ledgerDir) }

// openLedgerFile opens name in the ledger without following a link:
// with os.O_CREATE it first tries to create it (O_EXCL, which never
// follows), and an existing entry must be a regular file that is the
// very one opened.
func openLedgerFile(dir *os.Root, name string, flag int, perm fs.FileMode) (*os.File, error) {
	if flag&os.O_CREATE != 0 {
		f, err := dir.OpenFile(name, flag|os.O_EXCL, perm)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			return f, err
		}
		flag &^= os.O_CREATE
	}
	fi, err := dir.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errNotLedgerFile}
	}
	f, err := dir.OpenFile(name, flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	opened, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !os.SameFile(fi, opened) {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: errLink}
	}
	return f, nil
}

// lock takes the store-wide lock, shared or exclusive, and returns the
// open usage record holding it; closing that file releases it. Without
// a ledger it returns nil, nil.
func (s *Store) lock(exclusive bool) (*os.File, error) {
	if s.ledger == nil {
		return nil, nil
	}
	f, err := openLedgerFile(s.ledger, usageName, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f, exclusive, true); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// usage is the usage record: the bytes charged for every blob in the
// store, and the total the last eviction left.
type usage struct{ total, mark int64 }

// readUsage reads the usage record from f; ok is false when it is
// missing or malformed, and the caller then counts the blobs again.
func readUsage(f *os.File) (u usage, ok bool) {
	buf := make([]byte, maxUsageBytes)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return usage{}, false
	}
	line, found := bytes.CutSuffix(buf[:n], []byte("\n"))
	total, mark, two := bytes.Cut(line, []byte(" "))
	if !found || !two {
		return usage{}, false
	}
	t, err1 := strconv.ParseInt(string(total), 10, 64)
	m, err2 := strconv.ParseInt(string(mark), 10, 64)
	if err1 != nil || err2 != nil || t < 0 || m < 0 {
		return usage{}, false
	}
	return usage{t, m}, true
}

// writeUsage replaces the usage record in f.
func writeUsage(f *os.File, u usage) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(fmt.Appendf(nil, "%d %d\n", u.total, u.mark), 0)
	return err
}

// added records c more bytes charged after a blob was established under
// the exclusive lock f, and evicts when the store is over its budget and
// the last eviction is at least MaxBytes/8 of writes ago (so a store full
// of held blobs is not counted again at every write).
func (s *Store) added(f *os.File, c int64) error {
	u, ok := readUsage(f)
	if !ok {
		return s.evictLocked(f)
	}
	u.total += c
	if u.total > s.opts.MaxBytes && u.total >= u.mark+s.opts.MaxBytes/8 {
		return s.evictLocked(f)
	}
	return writeUsage(f, u)
}

// evictIfOver evicts when the usage record says the store is over its
// budget or cannot say; Close calls it, since what the session released
// may now be evicted.
func (s *Store) evictIfOver() error {
	f, err := s.lock(true)
	if err != nil || f == nil {
		return err
	}
	defer f.Close()
	if u, ok := readUsage(f); ok && u.total <= s.opts.MaxBytes {
		return nil
	}
	return s.evictLocked(f)
}

// evictLocked, under the exclusive lock f, removes stale leases, counts
// every blob, and when the total is over MaxBytes removes the least
// recently used blobs no live lease holds (oldest modification time
// first, ties by ref) until the total is at most 7/8 of MaxBytes. It
// then rewrites the usage record. It removes only regular files named
// by a well-formed ref in that ref's shard directory, each opened
// beneath the pinned root without following a link. When a lease cannot
// be read it evicts nothing: a blob it may hold is never guessed free.
func (s *Store) evictLocked(f *os.File) error {
	held, err := s.liveHolds()
	if err != nil {
		return err
	}
	blobs, errs := s.scanBlobs()
	var total int64
	for _, b := range blobs {
		total += charge(b.size)
	}
	if total > s.opts.MaxBytes {
		slices.SortFunc(blobs, func(a, b blobEntry) int {
			return cmp.Or(a.mtime.Compare(b.mtime), cmp.Compare(a.ref, b.ref))
		})
		shards := map[string]*os.Root{}
		for _, b := range blobs {
			if total <= s.opts.lowWater() {
				break
			}
			if held[b.ref] {
				continue
			}
			if err := s.removeBlob(shards, b); err != nil {
				errs = append(errs, ioError("evict", b.ref, s.Path(b.ref), err))
				continue
			}
			total -= charge(b.size)
		}
		for _, d := range shards {
			d.Close()
		}
	}
	if err := writeUsage(f, usage{total, total}); err != nil {
		errs = append(errs, ioError("evict", "", s.ledgerPath(), err))
	}
	return errors.Join(errs...)
}

// blobEntry is one blob an eviction found.
type blobEntry struct {
	ref   Ref
	size  int64
	mtime time.Time
}

// scanBlobs lists every blob of the store: regular files named by a
// well-formed ref, in that ref's shard, a real directory of the root.
// Anything else (a staged file, the ledger, a link, a stray name) is
// not a blob and is left alone.
func (s *Store) scanBlobs() ([]blobEntry, []error) {
	var out []blobEntry
	var errs []error
	names, err := readDirNames(s.dir)
	if err != nil {
		return nil, []error{ioError("evict", "", s.root, err)}
	}
	for _, name := range names {
		if !isShardName(name) {
			continue
		}
		shard, err := openDirNoFollow(s.dir, name)
		if err != nil {
			continue // a link or not a directory: never a shard
		}
		ents, err := readDirNames(shard)
		if err != nil {
			errs = append(errs, ioError("evict", "", s.stagedPath(name), err))
		}
		for _, e := range ents {
			r, err := ParseRef(e)
			if err != nil || string(r[:shardLen]) != name {
				continue
			}
			fi, err := shard.Lstat(e)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			out = append(out, blobEntry{ref: r, size: fi.Size(), mtime: fi.ModTime()})
		}
		shard.Close()
	}
	return out, errs
}

// removeBlob removes b, having confirmed once more that its shard is a
// real directory of the root and its entry a regular file; unlinkIn
// never follows a link nor removes a directory.
func (s *Store) removeBlob(shards map[string]*os.Root, b blobEntry) error {
	name := string(b.ref[:shardLen])
	shard, ok := shards[name]
	if !ok {
		var err error
		if shard, err = openDirNoFollow(s.dir, name); err != nil {
			return err
		}
		shards[name] = shard
	}
	fi, err := shard.Lstat(string(b.ref))
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "evict", Path: string(b.ref), Err: errNotLedgerFile}
	}
	return unlinkIn(shard, string(b.ref))
}

func isShardName(name string) bool {
	if len(name) != shardLen {
		return false
	}
	for i := range len(name) {
		if !isLowerHex(name[i]) {
			return false
		}
	}
	return true
}

// readDirNames lists the names in d.
func readDirNames(d *os.Root) ([]string, error) {
	f, err := d.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// liveHolds returns the refs every live lease holds, this Store's own
// included, removing each stale lease (one whose lock it can take) on
// the way. The caller holds the store lock exclusively, so no lease is
// created, nor a ref added, while it reads. A lease it cannot open,
// lock-test or read fails the call: its refs are unknown.
func (s *Store) liveHolds() (map[Ref]bool, error) {
	names, err := readDirNames(s.ledger)
	if err != nil {
		return nil, ioError("evict", "", s.ledgerPath(), err)
	}
	held := map[Ref]bool{}
	for _, name := range names {
		if !isLeaseName(name) {
			continue
		}
		f, err := openLedgerFile(s.ledger, name, os.O_RDONLY, 0)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, errNotLedgerFile), errors.Is(err, errLink):
			continue // gone, or not a lease this store made
		case err != nil:
			return nil, ioError("evict", "", s.stagedPath(ledgerDir+"/"+name), err)
		}
		switch err := lockFile(f, true, false); {
		case err == nil:
			// Stale: no open Store holds it. Remove it while locked.
			rmErr := s.ledger.Remove(name)
			f.Close()
			if rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
				return nil, ioError("evict", "", s.stagedPath(ledgerDir+"/"+name), rmErr)
			}
		case errors.Is(err, errLocked):
			err := readLease(f, held)
			f.Close()
			if err != nil {
				return nil, ioError("evict", "", s.stagedPath(ledgerDir+"/"+name), err)
			}
		default:
			f.Close()
			return nil, ioError("evict", "", s.stagedPath(ledgerDir+"/"+name), err)
		}
	}
	return held, nil
}

// readLease adds the well-formed refs of a lease to held; other lines
// (a write cut short by a crash) are skipped.
func readLease(f *os.File, held map[Ref]bool) error {
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if r, err := ParseRef(sc.Text()); err == nil {
			held[r] = true
		}
	}
	return sc.Err()
}

// claim reserves against the session's budget what holding r, charged
// c, adds to what the session already holds of it, and returns that
// amount (zero when the session already holds r at that charge). It
// first returns the reservation old (a stream's, which the claim
// replaces), so it is returned whether the claim succeeds or not. The
// new reservation is either consumed by hold or returned with release.
func (s *Store) claim(op string, r Ref, c, old int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved -= old
	need := max(c-s.held[r], 0)
	if err := s.reserveLocked(op, need); err != nil {
		return 0, err
	}
	return need, nil
}

// reserve reserves n bytes against the session's budget, for a stream
// whose ref is not yet known.
func (s *Store) reserve(op string, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reserveLocked(op, n)
}

func (s *Store) reserveLocked(op string, n int64) error {
	if n <= 0 {
		return nil
	}
	if held := s.used + s.reserved; held+n > s.opts.SessionBytes {
		return newError(CodeSpillBudget, op, "", "", fmt.Sprintf(
			"this session's blobs (stored, or being written) take %d bytes, and %d more would pass its budget of %d bytes "+
				"(blob.Options.SessionBytes), so the store did not keep them; produce less output "+
				"(filter it, or write it to a file in the workspace and read that in slices)",
			held, n, s.opts.SessionBytes), nil)
	}
	s.reserved += n
	return nil
}

// release returns an unused reservation of n bytes.
func (s *Store) release(n int64) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.reserved -= n
	s.mu.Unlock()
}

// holding reports whether the session holds r already.
func (s *Store) holding(r Ref) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.held[r]
	return ok
}

// hold records that the session holds r, charged c (zero for a read),
// consuming the reservation need that claim made for it; r is appended
// to the lease the first time. The caller holds the store lock, so no
// eviction runs between this and its use of r. On failure nothing is
// recorded and the reservation is still the caller's.
func (s *Store) hold(r Ref, c, need int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return fs.ErrClosed
	}
	prev, ok := s.held[r]
	if !ok && s.ledger != nil {
		if err := s.appendLease(r); err != nil {
			return err
		}
	}
	s.reserved -= need
	if c > prev || !ok {
		s.used += max(c-prev, 0)
		s.held[r] = max(c, prev)
	}
	return nil
}

// appendLease writes r to the session's lease, creating and locking the
// lease first if this is the session's first hold. s.mu and the store
// lock are held: no eviction can see the lease before it is locked.
func (s *Store) appendLease(r Ref) error {
	if s.lease == nil {
		name := rand.Text() + leaseSuffix
		f, err := s.ledger.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		if err := lockFile(f, false, false); err != nil {
			f.Close()
			s.ledger.Remove(name)
			return err
		}
		s.lease, s.leaseName = f, name
	}
	_, err := s.lease.Write([]byte(string(r) + "\n"))
	return err
}

// releaseLease removes the session's lease, then unlocks it by closing.
func (s *Store) releaseLease() error {
	s.mu.Lock()
	f, name := s.lease, s.leaseName
	s.lease = nil
	s.mu.Unlock()
	if f == nil {
		return nil
	}
	err := s.ledger.Remove(name)
	f.Close()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return ioError("close", "", s.stagedPath(ledgerDir+"/"+name), err)
	}
	return nil
}
