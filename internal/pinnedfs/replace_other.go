//go:build !unix

package pinnedfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// replaceIn is WriteWhole's last step where there is no renameat: the
// same staged replace through the os.Root d.
func replaceIn(d *os.Root, base string, data []byte, perm fs.FileMode) error {
	name := base
	if fi, err := d.Lstat(base); err == nil {
		if !fi.Mode().IsRegular() {
			return &fs.PathError{Op: "write", Path: name, Err: ErrNotRegular}
		}
		perm = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := stage(d, base, data, perm)
	if err != nil {
		return err
	}
	if err := d.Rename(tmp, base); err != nil {
		d.Remove(tmp)
		return err
	}
	return syncDir(d)
}

// stage writes data to a fresh temporary file in d and returns its name.
func stage(d *os.Root, base string, data []byte, perm fs.FileMode) (string, error) {
	var nonce [8]byte
	rand.Read(nonce[:])
	tmp := "." + base[:min(len(base), maxStagedStem)] + ".loom-" + hex.EncodeToString(nonce[:]) + ".tmp"
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			d.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return "", err
	}
	if err := f.Chmod(perm); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	ok = true
	return tmp, nil
}

// syncDir makes a rename in d durable.
func syncDir(d *os.Root) error {
	f, err := d.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
