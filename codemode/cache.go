package codemode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// defaultMaxCacheBytes bounds the kept binaries of a cache directory when
// BuilderOptions.MaxCacheBytes is zero: 512 MiB (a tiny program's binary
// is about 1.5 MiB). The archives and the go command's build cache are
// not counted: they are needed by every build.
const defaultMaxCacheBytes = 512 << 20

// evictionGrace spares a kept binary built or used this recently from
// eviction, since another process may be about to run it: a burst of
// builds may exceed the bound for that long, but never past
// maxCacheOvershoot times it.
const evictionGrace = time.Minute

// maxCacheOvershoot bounds how far past MaxCacheBytes the kept binaries
// may grow while evictionGrace spares recent ones: past this multiple the
// grace yields too, and only the binary just built is spared.
const maxCacheOvershoot = 2

// lockPollInterval is how often a builder waiting for the cache
// directory's cross-process lock tries it again.
const lockPollInterval = 25 * time.Millisecond

// maxEditsFileBytes bounds the edits.json read back for a kept binary.
const maxEditsFileBytes = 64 << 10

// Names inside a cache directory.
const (
	cacheLockName   = "lock"       // the cross-process lock file of warm-ups
	evictLockName   = "evict.lock" // the cross-process lock file of evictions
	cacheArchives   = "archives"   // archives/<archive key>/: one published archive entry
	cacheBinaries   = "bin"        // bin/<binary key>/{main,edits.json}: kept binaries
	cacheScratch    = "tmp"        // tmp/<kind>-<rand>/ beside tmp/<kind>-<rand>.lock: build roots and stages
	cacheGoCache    = "gocache"    // the go command's private GOCACHE
	cacheHome       = "home"       // the go command's private HOME
	binaryName      = "main"       // a kept binary's file name
	editsName       = "edits.json"
	scratchLockExt  = ".lock"
	scratchAttempts = 16
)

// cache is one cache directory's layout and locks.
type cache struct {
	dir string
}

func (c *cache) path(elem ...string) string {
	return filepath.Join(append([]string{c.dir}, elem...)...)
}

// defaultCacheDir is os.UserCacheDir()/loom/codemode.
func defaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "loom", "codemode"), nil
}

// openCache makes dir's layout (owner-only) and sweeps the scratch
// entries no live builder holds.
func openCache(dir string) (*cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &cache{dir: filepath.Clean(abs)}
	for _, d := range []string{c.dir, c.path(cacheArchives), c.path(cacheBinaries), c.path(cacheScratch), c.path(cacheGoCache), c.path(cacheHome)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	c.sweep()
	return c, nil
}

// lock takes the cache directory's cross-process lock, waiting for it
// within ctx, and returns its release.
func (c *cache) lock(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(c.path(cacheLockName), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	t := time.NewTicker(lockPollInterval)
	defer t.Stop()
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		if ok {
			return func() { unlock(f); f.Close() }, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// tryLockEvict takes the cross-process eviction lock if it is free at
// once. (Evictions have a lock of their own so that a long warm-up never
// holds one back.)
func (c *cache) tryLockEvict() (func(), bool) {
	f, err := os.OpenFile(c.path(evictLockName), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false
	}
	if ok, err := tryLock(f); err != nil || !ok {
		f.Close()
		return nil, false
	}
	return func() { unlock(f); f.Close() }, true
}

// scratch is a directory under tmp/ that its creator holds by a lock on
// the file beside it, so a sweep in any process removes it only once its
// holder is gone.
type scratch struct {
	dir  string
	lock *os.File
}

// newScratch makes tmp/<kind>-<random>/, holding its lock file first so
// that no sweep ever sees the directory unheld.
func (c *cache) newScratch(kind string) (*scratch, error) {
	for range scratchAttempts {
		var r [8]byte
		if _, err := rand.Read(r[:]); err != nil {
			return nil, err
		}
		name := kind + "-" + hex.EncodeToString(r[:])
		lockPath := c.path(cacheScratch, name+scratchLockExt)
		f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_EXCL|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		// A sweep may take the new file before we do and unlink it: then
		// try another name.
		ok, err := tryLock(f)
		if err != nil || !ok || !stillNamed(f, lockPath) {
			f.Close()
			continue
		}
		dir := c.path(cacheScratch, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			os.Remove(lockPath)
			f.Close()
			return nil, err
		}
		return &scratch{dir: dir, lock: f}, nil
	}
	return nil, fmt.Errorf("no free scratch name after %d attempts", scratchAttempts)
}

// remove deletes the scratch directory, then its lock file.
func (s *scratch) remove() {
	if s == nil {
		return
	}
	os.RemoveAll(s.dir)
	os.Remove(s.dir + scratchLockExt)
	unlock(s.lock)
	s.lock.Close()
}

// stillNamed reports whether path still names f's file.
func stillNamed(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}

// sweep removes every scratch entry whose lock no process holds (its
// creator died before removing it) and every directory without a lock
// file; entries held by a live builder stay. It reports how many
// directories it removed.
func (c *cache) sweep() int {
	ents, err := os.ReadDir(c.path(cacheScratch))
	if err != nil {
		return 0
	}
	removed := 0
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	for _, e := range ents {
		name := e.Name()
		if stem, ok := strings.CutSuffix(name, scratchLockExt); ok {
			lockPath := c.path(cacheScratch, name)
			f, err := os.OpenFile(lockPath, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			if ok, err := tryLock(f); err == nil && ok && stillNamed(f, lockPath) {
				if names[stem] {
					os.RemoveAll(c.path(cacheScratch, stem))
					removed++
				}
				os.Remove(lockPath)
				unlock(f)
			}
			f.Close()
			continue
		}
		if !names[name+scratchLockExt] {
			// A directory is made only after its lock file, and removed
			// before it: one without a lock file is stale.
			if _, err := os.Lstat(c.path(cacheScratch, name+scratchLockExt)); errors.Is(err, fs.ErrNotExist) {
				os.RemoveAll(c.path(cacheScratch, name))
				removed++
			}
		}
	}
	return removed
}

// keptBinary returns the kept binary for key and its edits, touching it
// so eviction counts it as used, or ok false when none is kept.
func (c *cache) keptBinary(key string) (path string, edits []Repair, ok bool) {
	dir := c.path(cacheBinaries, key)
	path = filepath.Join(dir, binaryName)
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return "", nil, false
	}
	f, err := os.OpenFile(filepath.Join(dir, editsName), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	var buf [maxEditsFileBytes]byte
	n, _ := f.Read(buf[:])
	if err := json.Unmarshal(buf[:n], &edits); err != nil {
		return "", nil, false
	}
	now := time.Now()
	os.Chtimes(path, now, now)
	return path, edits, true
}

// publishBinary moves the binary at built (a regular file, checked by
// the caller) into bin/<key>/ with its edits, atomically: a stage
// directory renamed into place. When another builder published key
// first, its binary is kept and built is dropped. It returns the kept
// binary's path.
func (c *cache) publishBinary(key, built string, edits []Repair) (string, error) {
	stage, err := c.newScratch("pub")
	if err != nil {
		return "", err
	}
	defer stage.remove()
	if edits == nil {
		edits = []Repair{}
	}
	data, err := json.Marshal(edits)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(stage.dir, editsName), data, 0o600); err != nil {
		return "", err
	}
	if err := os.Rename(built, filepath.Join(stage.dir, binaryName)); err != nil {
		return "", err
	}
	final := c.path(cacheBinaries, key)
	if err := os.Rename(stage.dir, final); err != nil && !isExist(err) {
		return "", err
	}
	// The stage lock file stays until remove; its directory is now final.
	return filepath.Join(final, binaryName), nil
}

// isExist reports a rename refused because the target exists.
func isExist(err error) bool {
	return errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}

// keptEntry is one kept binary as eviction sees it.
type keptEntry struct {
	key   string
	bytes int64
	used  time.Time
}

// keptBinaries lists bin/'s entries with their sizes and last use.
func (c *cache) keptBinaries() []keptEntry {
	ents, err := os.ReadDir(c.path(cacheBinaries))
	if err != nil {
		return nil
	}
	var out []keptEntry
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		k := keptEntry{key: e.Name()}
		dir := c.path(cacheBinaries, e.Name())
		files, _ := os.ReadDir(dir)
		for _, f := range files {
			if fi, err := f.Info(); err == nil {
				k.bytes += fi.Size()
				if f.Name() == binaryName {
					k.used = fi.ModTime()
				}
			}
		}
		out = append(out, k)
	}
	return out
}

// evict removes kept binaries, least recently used first, until they
// total at most max bytes, sparing keep and every binary used within
// evictionGrace while they total at most maxCacheOvershoot×max. It runs only when it takes the cross-process eviction
// lock at once (another builder evicting does the same work). A binary leaves
// by a rename out of bin/ first, so a reader never sees half of one.
// It returns the keys it removed.
func (c *cache) evict(max int64, keep string, now time.Time) []string {
	release, ok := c.tryLockEvict()
	if !ok {
		return nil
	}
	defer release()
	kept := c.keptBinaries()
	var total int64
	for _, k := range kept {
		total += k.bytes
	}
	if total <= max {
		return nil
	}
	sort.Slice(kept, func(i, j int) bool {
		if !kept[i].used.Equal(kept[j].used) {
			return kept[i].used.Before(kept[j].used)
		}
		return kept[i].key < kept[j].key
	})
	var removed []string
	gone := map[string]bool{}
	for _, graced := range []bool{true, false} {
		for _, k := range kept {
			if total <= max || !graced && total <= maxCacheOvershoot*max {
				break
			}
			if gone[k.key] || k.key == keep || graced && now.Sub(k.used) < evictionGrace {
				continue
			}
			if !c.removeKept(k.key) {
				return removed
			}
			gone[k.key] = true
			total -= k.bytes
			removed = append(removed, k.key)
		}
	}
	return removed
}

// removeKept renames the kept binary key out of bin/ and removes it,
// reporting whether it could stage the removal.
func (c *cache) removeKept(key string) bool {
	gone, err := c.newScratch("evict")
	if err != nil {
		return false
	}
	defer gone.remove()
	return os.Rename(c.path(cacheBinaries, key), filepath.Join(gone.dir, "entry")) == nil
}

// tryLock takes an exclusive flock on f without waiting.
func tryLock(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return false, nil
	}
	return false, err
}

// unlock releases f's flock.
func unlock(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }
