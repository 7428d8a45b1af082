//go:build unix

package search

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Every open the Go engine makes is relative to a directory descriptor it
// already holds, refuses a symbolic link as its last component (the only
// component it names: entries come from the directory itself, never
// with a slash), and never waits: O_NONBLOCK makes the open of a FIFO
// return at once (it is then refused by fstat), O_NOCTTY keeps a
// terminal from becoming the host's controlling one.
const (
	dirOpenFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fileOpenFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
)

// pinnedDir is an open directory the walk lists and opens entries of.
// It is closed when its last reference goes: the walker holds one while
// it lists the directory, and each queued file holds one until a reader
// has read it.
type pinnedDir struct {
	fd   int
	path string // absolute; the names below it are its entries
	refs atomic.Int32
}

func newPinnedDir(fd int, path string) *pinnedDir {
	d := &pinnedDir{fd: fd, path: path}
	d.refs.Store(1)
	return d
}

func (d *pinnedDir) retain() { d.refs.Add(1) }

func (d *pinnedDir) release() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.fd)
	}
}

// openat is unix.Openat retried on EINTR.
func openat(dir int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// sub opens the directory entry name of d (one reference, held by the
// caller). A link, or anything but a directory, is refused.
func (d *pinnedDir) sub(name string) (*pinnedDir, error) {
	fd, err := openat(d.fd, name, dirOpenFlags)
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: joinPath(d.path, name), Err: err}
	}
	return newPinnedDir(fd, joinPath(d.path, name)), nil
}

// list returns d's entries sorted by name. Their types are hints from
// the directory itself; every open checks what it really opened.
func (d *pinnedDir) list() ([]os.DirEntry, error) {
	fd, err := unix.Dup(d.fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// errTooLarge is readAt's refusal of a file over its limit.
var errTooLarge = errors.New("file over the size bound")

// readAt reads the regular file name in d into buf (reusing its
// storage), up to the size fstat gave when it was opened (to its end
// when that size is 0, as for files that do not know theirs). A link, a FIFO, a device, a socket or a directory is refused
// with fs.ErrInvalid before a byte is read; a file over limit bytes (by
// fstat, or while reading, since it may grow) with errTooLarge.
func (d *pinnedDir) readAt(name string, buf []byte, limit int) ([]byte, error) {
	return d.read(name, buf, limit, 0)
}

// readLines reads the first lines lines of the regular file name in d
// into buf, as readAt opens and checks it: it stops once buf holds that
// many newlines, at the end of the file, or after limit bytes (a longer
// file is not refused: what was read is returned with errTooLarge).
func (d *pinnedDir) readLines(name string, buf []byte, limit, lines int) ([]byte, error) {
	return d.read(name, buf, limit, max(lines, 1))
}

// read is readAt when lines is 0, readLines otherwise.
func (d *pinnedDir) read(name string, buf []byte, limit, lines int) ([]byte, error) {
	fd, err := openat(d.fd, name, fileOpenFlags)
	if err != nil {
		return buf[:0], err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return buf[:0], err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return buf[:0], fs.ErrInvalid
	}
	if lines == 0 && st.Size > int64(limit) {
		return buf[:0], errTooLarge
	}
	buf = buf[:0]
	if lines == 0 && st.Size > 0 {
		// Room for the whole file as fstat saw it, in one allocation
		// rather than growth by copying.
		buf = slices.Grow(buf, int(st.Size))
	}
	seen := 0 // newlines read, when counting lines
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return buf, err
		}
		if n == 0 {
			return buf, nil
		}
		if lines > 0 {
			n = min(n, limit-len(buf))
			seen += bytes.Count(buf[len(buf):len(buf)+n], []byte{'\n'})
			buf = buf[:len(buf)+n]
			if seen >= lines {
				return buf, nil
			}
			if len(buf) >= limit {
				return buf, errTooLarge
			}
			continue
		}
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return buf, errTooLarge
		}
		if st.Size > 0 && len(buf) >= int(st.Size) {
			// What fstat saw is read: the file as it was when opened
			// (saving the read that would find its end).
			return buf, nil
		}
	}
}

// openRoot opens the clean absolute path root one component at a time
// from "/", following no link: root must be the resolved form the
// caller authorized, and a component swapped for a link since fails the
// open (ELOOP or ENOTDIR), so the walk starts exactly where it was
// authorized or not at all. Each directory opened on the way is handed to
// above (which must not keep it) before the next is opened. A directory
// root is returned as dir with file ""; a regular file as its directory
// and its name; anything else fails wrapping fs.ErrInvalid.
func openRoot(root string, above func(*pinnedDir)) (dir *pinnedDir, file string, err error) {
	fd, err := openat(unix.AT_FDCWD, "/", dirOpenFlags)
	if err != nil {
		return nil, "", &fs.PathError{Op: "open", Path: "/", Err: err}
	}
	d := newPinnedDir(fd, "/")
	parts := strings.Split(strings.TrimPrefix(root, "/"), "/")
	if root == "/" {
		parts = nil
	}
	for i, name := range parts {
		last := i == len(parts)-1
		if !last {
			above(d)
			next, err := d.sub(name)
			d.release()
			if err != nil {
				return nil, "", err
			}
			d = next
			continue
		}
		// The last component may be a file: open it without O_DIRECTORY
		// and look at what was opened.
		fd, err := openat(d.fd, name, fileOpenFlags)
		if err != nil {
			d.release()
			return nil, "", &fs.PathError{Op: "openat", Path: root, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			d.release()
			return nil, "", &fs.PathError{Op: "fstat", Path: root, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			above(d)
			d.release()
			return newPinnedDir(fd, root), "", nil
		case unix.S_IFREG:
			unix.Close(fd)
			return d, name, nil
		default:
			unix.Close(fd)
			d.release()
			return nil, "", &fs.PathError{Op: "open", Path: root, Err: fs.ErrInvalid}
		}
	}
	return d, "", nil
}
