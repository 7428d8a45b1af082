package gitguard

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/agentloom/loom/internal/errno"
	"golang.org/x/sys/unix"
)

// quarantineAside renames path (which must have no symlink in any
// component, so a command cannot redirect the rename elsewhere) to a
// sibling named path + QuarantineSuffix + a timestamp, and returns the
// new path.
func quarantineAside(path string) (string, error) {
	dir, name := filepath.Split(filepath.Clean(path))
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return "", fmt.Errorf("open %s without following links: %s", dir, errno.Name(err))
	}
	defer unix.Close(fd)
	aside, err := renameAsideFd(fd, name)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return filepath.Join(dir, aside), nil
}

// renameAside renames name in the directory dir beneath root to a fresh
// sibling, name + QuarantineSuffix + a timestamp, never replacing
// anything, and returns the new name. When the directory is not writable
// (a command ran chmod 555 on it; a root host would not notice) the
// broker, which owns it as the jail did, adds u+w for the rename and puts
// the mode back.
func renameAside(root *os.Root, dir, name string) (string, error) {
	return renameAsideInto(root, dir, name, root, dir)
}

// renameAsideInto is renameAside, the new name made in the directory
// into beneath intoRoot rather than beside name.
func renameAsideInto(root *os.Root, dir, name string, intoRoot *os.Root, into string) (string, error) {
	d, err := root.OpenFile(dirName(dir), os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer d.Close()
	if intoRoot == root && into == dir {
		return renameAsideFds(int(d.Fd()), int(d.Fd()), name)
	}
	t, err := intoRoot.OpenFile(dirName(into), os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer t.Close()
	return renameAsideFds(int(d.Fd()), int(t.Fd()), name)
}

// renameAsideFd is renameAside in the directory open as fd (which must
// be a real descriptor, not O_PATH, so fchmod works on it).
func renameAsideFd(fd int, name string) (string, error) {
	return renameAsideFds(fd, fd, name)
}

// renameAsideFds renames name in the directory open as from to a fresh
// name in the one open as to (real descriptors both, not O_PATH, so
// fchmod works on them).
func renameAsideFds(from, to int, name string) (string, error) {
	aside := fmt.Sprintf("%s%s-%d", name, QuarantineSuffix, time.Now().UnixNano())
	err := unix.Renameat2(from, name, to, aside, unix.RENAME_NOREPLACE)
	if err == unix.EACCES || err == unix.EPERM {
		var restore []func()
		for _, fd := range slices.Compact([]int{from, to}) {
			var st unix.Stat_t
			if serr := unix.Fstat(fd, &st); serr != nil {
				return "", fmt.Errorf("rename: %s; fstat: %s", errno.Name(err), errno.Name(serr))
			}
			if cerr := unix.Fchmod(fd, st.Mode&0o7777|0o700); cerr != nil {
				return "", fmt.Errorf("rename: %s; making the directory writable: %s", errno.Name(err), errno.Name(cerr))
			}
			mode := st.Mode & 0o7777
			restore = append(restore, func() { unix.Fchmod(fd, mode) })
		}
		err = unix.Renameat2(from, name, to, aside, unix.RENAME_NOREPLACE)
		for _, r := range restore {
			r()
		}
	}
	if err != nil {
		return "", fmt.Errorf("rename: %s: %w", errno.Name(err), err)
	}
	return aside, nil
}

// fingerprintOf identifies the version of a file fi describes.
func fingerprintOf(fi fs.FileInfo) gitFingerprint {
	fp := gitFingerprint{size: fi.Size(), mode: fi.Mode()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		fp.dev, fp.ino, fp.ctime = uint64(st.Dev), st.Ino, st.Ctim.Nano()
	}
	return fp
}

// openChildDir opens the directory name (one component) in parent,
// without following a link, and only if it is a directory (O_DIRECTORY
// refuses a FIFO before opening it, so nothing blocks).
func openChildDir(parent *os.File, name string) (*os.File, error) {
	fd, err := unix.Openat(int(parent.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// ownedByMe reports whether fi's owner is the broker's effective user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
