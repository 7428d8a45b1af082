//go:build linux

package tool

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openResolved opens a path the resolver returned without following any
// symlink on the way. A resolved path holds none, so a link met here was
// swapped in after resolution: the open fails (ELOOP) instead of leaving
// the roots. O_NONBLOCK keeps a FIFO from blocking the open; callers
// refuse anything but a regular file. Kernels without openat2 (before
// 5.6) fall back to a plain open, and the race stays open there.
func openResolved(path string, flag int) (*os.File, error) {
	how := &unix.OpenHow{Flags: uint64(flag | unix.O_CLOEXEC | unix.O_NONBLOCK), Resolve: unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, how)
	if errors.Is(err, unix.ENOSYS) {
		return os.OpenFile(path, flag|unix.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// pinDir opens the resolved directory dir without following symlinks and
// returns a name for it that later path operations cannot be redirected
// from (/proc/self/fd/N), and a release func. Without openat2 or /proc it
// returns dir itself.
func pinDir(dir string) (string, func(), error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, how)
	if errors.Is(err, unix.ENOSYS) {
		return dir, func() {}, nil
	}
	if err != nil {
		return "", nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	pinned := "/proc/self/fd/" + strconv.Itoa(fd)
	if _, err := os.Stat(pinned); err != nil {
		unix.Close(fd)
		return dir, func() {}, nil
	}
	return pinned, func() { unix.Close(fd) }, nil
}
