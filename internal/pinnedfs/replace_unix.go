//go:build unix

package pinnedfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Replaced says what ReplaceAt did besides replacing the file.
type Replaced struct {
	// Created is true when no file of that name existed before.
	Created bool
	// SyncErr is set when the file was replaced but the directory could
	// not be synced, so a crash now could lose the rename.
	SyncErr error
}

// ReplaceAt replaces base, an entry of the directory open as dirfd, with
// data: the bytes are staged in a fresh file beside it (created
// exclusively, never through a link), synced, renamed over base, and the
// directory is synced. A reader sees the old content or the new, never a
// part. An existing base must be a regular file and keeps its permission
// bits; a new one gets perm. base is never followed: a link there is
// refused with an error wrapping ErrLink, anything else that is not a
// regular file with ErrNotRegular, and on every error nothing is left
// behind and nothing was replaced.
func ReplaceAt(dirfd int, base string, data []byte, perm fs.FileMode) (Replaced, error) {
	var res Replaced
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return res, &fs.PathError{Op: "write", Path: base, Err: ErrLink}
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return res, &fs.PathError{Op: "write", Path: base, Err: ErrNotRegular}
	case err == nil:
		perm = fs.FileMode(st.Mode & 0o777)
	case errors.Is(err, unix.ENOENT):
		res.Created = true
	default:
		return res, &fs.PathError{Op: "write", Path: base, Err: err}
	}
	tmp, err := stageAt(dirfd, base, data, perm)
	if err != nil {
		return res, &fs.PathError{Op: "write", Path: base, Err: err}
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, base); err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return res, &fs.PathError{Op: "rename", Path: base, Err: err}
	}
	res.SyncErr = syncDirAt(dirfd)
	return res, nil
}

// stageAt writes data to a fresh file in dirfd and returns its name; on
// failure nothing is left behind.
func stageAt(dirfd int, base string, data []byte, perm fs.FileMode) (string, error) {
	var nonce [8]byte
	rand.Read(nonce[:])
	tmp := "." + base[:min(len(base), maxStagedStem)] + ".loom-" + hex.EncodeToString(nonce[:]) + ".tmp"
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), tmp)
	err = func() error {
		if _, err := f.Write(data); err != nil {
			return err
		}
		if err := f.Chmod(perm); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return "", fmt.Errorf("stage: %w", err)
	}
	return tmp, nil
}

// syncDirAt makes a rename in dirfd durable. Filesystems that cannot sync
// a directory (EINVAL) have nothing to make durable.
func syncDirAt(dirfd int) error {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return nil
}

// replaceIn is WriteWhole's last step: ReplaceAt in the directory d.
func replaceIn(d *os.Root, base string, data []byte, perm fs.FileMode) error {
	f, err := d.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := ReplaceAt(int(f.Fd()), base, data, perm)
	if err != nil {
		return err
	}
	return res.SyncErr
}
