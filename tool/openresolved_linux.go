//go:build linux

package tool

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/internal/pinnedfs"
	"golang.org/x/sys/unix"
)

// This file is how the harness touches a path the resolver returned. A
// resolved path holds no symlink, so every operation here reaches it by
// walking it one component at a time from "/", each component opened
// with O_NOFOLLOW relative to the descriptor of the one before (a pinned
// directory), and acts on the last one through that descriptor. A link,
// a FIFO or a file a command swaps in after resolution is met as itself
// and refused: it is never followed and never blocks. Directories are
// created the same way (mkdirat on the pinned parent, then opened
// O_NOFOLLOW), never by path.

// errPathChanged is wrapped in the *fs.PathError of an operation that met
// a symbolic link where the resolver had seen none: something replaced a
// component after the path was resolved, and nothing was followed.
var errPathChanged = errors.New("changed after it was resolved (a symbolic link is there now); it was not followed")

// errNotRegularFile is wrapped in the *fs.PathError of a read or write
// that met a FIFO, device, socket or directory where a regular file was
// wanted.
var errNotRegularFile = errors.New("not a regular file")

// errNotDirectory is wrapped when a component that must be a directory
// is a file of another kind.
var errNotDirectory = errors.New("not a directory")

const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// walkDir opens the resolved absolute directory dir without following
// any link and returns its descriptor. With create, missing components
// are made (mode 0755) through their pinned parent and returned in
// created, outermost first.
func walkDir(dir string, create bool) (fd int, created []string, err error) {
	if !filepath.IsAbs(dir) {
		return -1, nil, &fs.PathError{Op: "open", Path: dir, Err: errors.New("not absolute")}
	}
	fd, err = unix.Open("/", dirFlags, 0)
	if err != nil {
		return -1, nil, &fs.PathError{Op: "open", Path: "/", Err: err}
	}
	cur := "/"
	for _, comp := range strings.Split(dir, "/") {
		if comp == "" {
			continue
		}
		next := filepath.Join(cur, comp)
		if comp == "." || comp == ".." {
			unix.Close(fd)
			return -1, created, &fs.PathError{Op: "open", Path: next, Err: errors.New("a resolved path holds no . or .. component")}
		}
		nfd, err := unix.Openat(fd, comp, dirFlags, 0)
		if errors.Is(err, unix.ENOENT) && create {
			switch merr := unix.Mkdirat(fd, comp, 0o755); {
			case merr == nil:
				created = append(created, next)
			case !errors.Is(merr, unix.EEXIST):
				unix.Close(fd)
				return -1, created, &fs.PathError{Op: "mkdir", Path: next, Err: merr}
			}
			nfd, err = unix.Openat(fd, comp, dirFlags, 0)
		}
		if err != nil {
			err = explainAt(fd, comp, err, errNotDirectory)
			unix.Close(fd)
			return -1, created, &fs.PathError{Op: "open", Path: next, Err: err}
		}
		unix.Close(fd)
		fd, cur = nfd, next
	}
	return fd, created, nil
}

// explainAt turns the errno of a no-follow open of name in dirfd into
// what is there: errPathChanged for a link, wrongKind for a file of
// another kind, else err itself. It only looks (fstatat without
// following).
func explainAt(dirfd int, name string, err, wrongKind error) error {
	if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ENXIO) {
		return err
	}
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return errPathChanged
	}
	return wrongKind
}

// splitResolved splits a resolved absolute path into its directory and
// final name; the root itself has no final name.
func splitResolved(path string) (dir, base string, err error) {
	path = filepath.Clean(path)
	if !filepath.IsAbs(path) || path == "/" {
		return "", "", &fs.PathError{Op: "open", Path: path, Err: errors.New("not a file path")}
	}
	return filepath.Dir(path), filepath.Base(path), nil
}

// openRegular opens the resolved path for reading: no link followed, the
// open never blocks (O_NONBLOCK), and anything but a regular file is
// closed again and refused with errNotRegularFile (a directory says so).
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	dir, base, err := splitResolved(path)
	if err != nil {
		return nil, nil, err
	}
	dfd, _, err := walkDir(dir, false)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, base, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: explainAt(dfd, base, err, errNotRegularFile)}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		if fi.IsDir() {
			return nil, fi, &fs.PathError{Op: "open", Path: path, Err: errIsDirectory}
		}
		return nil, fi, &fs.PathError{Op: "open", Path: path, Err: errNotRegularFile}
	}
	return f, fi, nil
}

// isDir reports, without following any link, whether the resolved path
// is an existing directory; the error says what is there instead.
func isDir(path string) error {
	fd, _, err := walkDir(path, false)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// mkdirAll makes the resolved directory path and its missing parents
// through pinned parents, returning the directories it created.
func mkdirAll(path string) ([]string, error) {
	fd, created, err := walkDir(path, true)
	if err != nil {
		return created, err
	}
	unix.Close(fd)
	return created, nil
}

// writeWhole replaces the file at the resolved path with data: the bytes
// are staged in a fresh file in the target's pinned directory, synced and
// renamed over the target, so a reader sees the old content or the new,
// never a part. With parents, missing directories are created (and
// reported in the result, written or not). An existing target must be a
// regular file and keeps its permission bits (setuid, setgid and sticky
// dropped); a new one gets 0644.
func writeWhole(path string, data []byte, parents bool) (writeResult, error) {
	var res writeResult
	dir, base, err := splitResolved(path)
	if err != nil {
		return res, err
	}
	dfd, created, err := walkDir(dir, parents)
	res.Dirs = created
	if err != nil {
		return res, err
	}
	defer unix.Close(dfd)
	r, err := pinnedfs.ReplaceAt(dfd, base, data, 0o644)
	res.Created, res.SyncErr = r.Created, r.SyncErr
	switch {
	case errors.Is(err, pinnedfs.ErrLink):
		return res, &fs.PathError{Op: "write", Path: path, Err: errPathChanged}
	case errors.Is(err, pinnedfs.ErrNotRegular):
		return res, &fs.PathError{Op: "write", Path: path, Err: errNotRegularFile}
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = path
		}
		return res, err
	}
	res.Written = true
	return res, nil
}

// openDir opens the resolved directory path through pinned parents,
// never following a link.
func openDir(path string) (*os.File, error) {
	pfd, _, err := walkDir(path, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	fd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
