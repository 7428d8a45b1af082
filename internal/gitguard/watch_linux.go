package gitguard

import (
	"encoding/binary"
	"fmt"
	"os"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/agentloom/loom/internal/errno"
	"golang.org/x/sys/unix"
)

// gitWatchMask is what the watcher asks inotify for on every directory
// of a writable root: entries created, removed, renamed, written and
// closed, or changed in mode or link count.
const gitWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// MaxDirtyDirs bounds how many changed directories the watcher keeps
// for one writable root between sweeps; past it the root is swept whole,
// as after an inotify queue overflow.
const MaxDirtyDirs = 1 << 16

// inotifyReadBytes sizes the buffer the hub reads events into: many
// events per read(2), and at least one of the largest (a header and a
// NAME_MAX name).
const inotifyReadBytes = 64 << 10

// inotifyHub is the process's one inotify instance (instances are few
// per user: 128 by default), shared by every broker's writable roots.
// inotify marks inodes, so it sees what a jailed command does through
// its own mount namespace and any path.
//
// Events are read by whoever holds readMu: the hub's reader goroutine
// as they arrive, or sync, which drains the queue itself. The kernel
// queues an event before the call that caused it returns, so once the
// queue reads empty under readMu every change made before is noted.
type inotifyHub struct {
	once sync.Once
	f    *os.File
	fd   int
	err  error

	ready atomic.Bool // the reader runs: sync may drain

	readMu  sync.Mutex
	buf     []byte
	readErr error // why reading stopped; set under readMu

	mu    sync.Mutex
	subs  map[int32][]watchSub
	roots map[*gitWatch]bool
}

type watchSub struct {
	w   *gitWatch
	rel string
}

var hub inotifyHub

func (h *inotifyHub) start() error {
	h.once.Do(func() {
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			h.err = fmt.Errorf("inotify_init1: %s", errno.Name(err))
			return
		}
		h.fd, h.f = fd, os.NewFile(uintptr(fd), "inotify")
		h.subs, h.roots = map[int32][]watchSub{}, map[*gitWatch]bool{}
		h.buf = make([]byte, inotifyReadBytes)
		rc, err := h.f.SyscallConn()
		if err != nil {
			h.err = fmt.Errorf("inotify: %v", err)
			return
		}
		h.ready.Store(true)
		go h.read(rc)
	})
	return h.err
}

// read drains the queue each time the descriptor becomes readable, until
// reading fails.
func (h *inotifyHub) read(rc syscall.RawConn) {
	for {
		var failed bool
		err := rc.Read(func(uintptr) bool {
			failed = !h.drain()
			return failed // else wait for more
		})
		if err != nil || failed {
			h.readMu.Lock()
			if h.readErr == nil {
				h.readErr = fmt.Errorf("inotify read: %v", err)
				h.fail(h.readErr)
			}
			h.readMu.Unlock()
			return
		}
	}
}

// drain reads and delivers every event queued, until the queue is empty,
// and reports whether it reached that point (false: reading failed, and
// every root was told).
func (h *inotifyHub) drain() bool {
	h.readMu.Lock()
	defer h.readMu.Unlock()
	if h.readErr != nil {
		return false
	}
	for {
		n, err := unix.Read(h.fd, h.buf)
		switch {
		case err == unix.EAGAIN:
			return true
		case err == unix.EINTR:
			continue
		case err != nil || n <= 0:
			if err == nil {
				err = fmt.Errorf("read returned %d", n)
			}
			h.readErr = fmt.Errorf("inotify read: %s", errno.Name(err))
			h.fail(h.readErr)
			return false
		}
		h.deliver(h.buf[:n])
	}
}

// fail tells every root that watching stopped.
func (h *inotifyHub) fail(err error) {
	h.mu.Lock()
	for w := range h.roots {
		w.broken(err)
	}
	h.mu.Unlock()
}

// deliver hands the events in buf to the writable roots watching each
// directory.
func (h *inotifyHub) deliver(buf []byte) {
	n := len(buf)
	h.mu.Lock()
	defer h.mu.Unlock()
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		wd := int32(binary.NativeEndian.Uint32(buf[off:]))
		mask := binary.NativeEndian.Uint32(buf[off+4:])
		nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
		name := buf[off+unix.SizeofInotifyEvent : min(n, off+unix.SizeofInotifyEvent+nameLen)]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		off += unix.SizeofInotifyEvent + nameLen
		if mask&unix.IN_Q_OVERFLOW != 0 {
			for w := range h.roots {
				w.overflowed()
			}
			continue
		}
		for _, s := range h.subs[wd] {
			s.w.note(s.rel, string(name), mask)
		}
		if mask&unix.IN_IGNORED != 0 {
			for _, s := range h.subs[wd] {
				s.w.forget(s.rel, wd)
			}
			delete(h.subs, wd)
		}
	}
}

// sync returns once every change the kernel queued before the call has
// been noted, so the dirty sets are complete: it drains the queue
// itself (waiting only for a read the reader goroutine has in hand).
// False when that cannot be told (no inotify, or reading failed: then
// the caller sweeps whole).
func (h *inotifyHub) sync() bool {
	if !h.ready.Load() {
		return false
	}
	return h.drain()
}

// gitWatch collects, for one writable root, the directories in which
// something changed since the last sweep took them.
type gitWatch struct {
	kick chan struct{} // signalled (without blocking) after new changes

	mu      sync.Mutex
	events  uint64 // every change noted, ever: a command that saw none changed nothing
	watched map[string]int32
	dirty   map[string]bool
	fresh   map[string]bool // new directories, to be walked whole
	// ignore holds protected paths (relative): read-only in the jail, so
	// a write or attribute event on one is the jail's own bind machinery
	// or the host, never a command.
	ignore   map[string]bool
	retired  bool // no more changes delivered; kick is closed
	overflow bool
	err      error // why watching stopped; a full sweep stands in
}

// newGitWatch returns a watcher, or an error saying why inotify is not
// available (the guard then sweeps whole at every settle).
func newGitWatch() (*gitWatch, error) {
	if err := hub.start(); err != nil {
		return nil, err
	}
	w := &gitWatch{kick: make(chan struct{}, 1), watched: map[string]int32{},
		dirty: map[string]bool{}, fresh: map[string]bool{}, ignore: map[string]bool{}}
	hub.mu.Lock()
	hub.roots[w] = true
	hub.mu.Unlock()
	return w, nil
}

// add watches the directory rel, open as f (so the watch lands on the
// inode the sweep just pinned, whatever a command does to the path).
func (w *gitWatch) add(rel string, f *os.File) {
	// Asked every time, even for a name watched already: the directory
	// watched under rel may have moved away (into a git store no walk
	// re-opens it from) and another been made in its place, which the
	// kernel tells by the descriptor it answers.
	wd, err := unix.InotifyAddWatch(hub.fd, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), gitWatchMask)
	if err != nil {
		w.broken(fmt.Errorf("inotify_add_watch %s: %s", rel, errno.Name(err)))
		return
	}
	w.mu.Lock()
	old, had := w.watched[rel]
	w.mu.Unlock()
	if had && old == int32(wd) {
		return
	}
	hub.mu.Lock()
	if had {
		// rel names another directory now: the one that moved away no
		// longer reports under rel.
		hub.subs[old] = slices.DeleteFunc(hub.subs[old], func(s watchSub) bool { return s.w == w && s.rel == rel })
	}
	subs := hub.subs[int32(wd)]
	replaced := false
	for i := range subs {
		if subs[i].w == w { // the same directory under a new name: it moved
			w.mu.Lock()
			delete(w.watched, subs[i].rel)
			w.mu.Unlock()
			subs[i].rel, replaced = rel, true
		}
	}
	if !replaced {
		subs = append(subs, watchSub{w: w, rel: rel})
	}
	hub.subs[int32(wd)] = subs
	hub.mu.Unlock()
	w.mu.Lock()
	w.watched[rel] = int32(wd)
	w.mu.Unlock()
}

func (w *gitWatch) note(rel, name string, mask uint32) {
	w.mu.Lock()
	if mask&^(unix.IN_CLOSE_WRITE|unix.IN_MODIFY|unix.IN_ATTRIB) == 0 && w.ignore[path.Join(rel, name)] {
		w.mu.Unlock()
		return
	}
	w.events++
	if len(w.dirty)+len(w.fresh) >= MaxDirtyDirs {
		w.overflow = true
	} else {
		w.dirty[rel] = true
		if name != "" && mask&unix.IN_ISDIR != 0 && mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
			w.fresh[path.Join(rel, name)] = true
		}
	}
	w.mu.Unlock()
	w.signal()
}

func (w *gitWatch) forget(rel string, wd int32) {
	w.mu.Lock()
	if w.watched[rel] == wd {
		delete(w.watched, rel)
	}
	w.mu.Unlock()
}

func (w *gitWatch) overflowed() {
	w.mu.Lock()
	w.events++
	w.overflow = true
	w.mu.Unlock()
	w.signal()
}

func (w *gitWatch) broken(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.signal()
}

func (w *gitWatch) signal() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.retired {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// take hands over the changes collected so far: directories to check,
// new ones to walk, and whether a whole sweep is needed instead (the
// queue overflowed, watching failed, or, when synced, the watcher could
// not confirm it had read everything queued).
func (w *gitWatch) take(synced bool) (dirty, fresh []string, whole bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for d := range w.dirty {
		dirty = append(dirty, d)
	}
	for d := range w.fresh {
		fresh = append(fresh, d)
	}
	whole = w.overflow || w.err != nil || !synced
	w.dirty, w.fresh, w.overflow = map[string]bool{}, map[string]bool{}, false
	return dirty, fresh, whole
}

// retire stops delivering changes to w (its root was replaced).
func (w *gitWatch) retire() {
	hub.mu.Lock()
	delete(hub.roots, w)
	for wd, subs := range hub.subs {
		kept := subs[:0]
		for _, s := range subs {
			if s.w != w {
				kept = append(kept, s)
			}
		}
		if len(kept) == 0 {
			delete(hub.subs, wd)
			unix.InotifyRmWatch(hub.fd, uint32(wd))
		} else {
			hub.subs[wd] = kept
		}
	}
	hub.mu.Unlock()
	w.mu.Lock()
	w.retired = true
	close(w.kick)
	w.mu.Unlock()
}

// protect tells the watch which paths are protected for every running
// command (see ignore), replacing what it was told before.
func (w *gitWatch) protect(rels map[string]bool) {
	w.mu.Lock()
	w.ignore = rels
	w.mu.Unlock()
}

// count returns how many changes were noted so far, and whether the
// watch still stands (no overflow pending, no failure).
func (w *gitWatch) count() (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events, !w.overflow && w.err == nil
}

// stopped reports why watching stopped, or nil.
func (w *gitWatch) stopped() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// syncWatch is hub.sync: every change queued so far has been noted.
func syncWatch() bool { return hub.sync() }
