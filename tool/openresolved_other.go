//go:build !linux

package tool

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Outside Linux the harness has no pinned, no-follow walk: these act on
// paths, checking for links and non-regular files first, so a link a
// command swaps in between the check and the act is followed. Outside
// Linux nothing confines commands either (see package broker).

// errPathChanged is wrapped when a symbolic link is met where the
// resolver had seen none.
var errPathChanged = errors.New("changed after it was resolved (a symbolic link is there now); it was not followed")

// errNotRegularFile is wrapped when a FIFO, device, socket or directory
// is met where a regular file was wanted.
var errNotRegularFile = errors.New("not a regular file")

func openRegular(path string) (*os.File, fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: errPathChanged}
	case fi.IsDir():
		return nil, fi, &fs.PathError{Op: "open", Path: path, Err: errIsDirectory}
	case !fi.Mode().IsRegular():
		return nil, fi, &fs.PathError{Op: "open", Path: path, Err: errNotRegularFile}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	return f, fi, nil
}

func isDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &fs.PathError{Op: "open", Path: path, Err: errors.New("not a directory")}
	}
	return nil
}

func mkdirAll(path string) ([]string, error) {
	var missing []string
	for p := path; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil || p == filepath.Dir(p) {
			break
		}
		missing = append([]string{p}, missing...)
	}
	var created []string
	for _, p := range missing {
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return created, err
		}
		created = append(created, p)
	}
	return created, nil
}

func writeWhole(path string, data []byte, parents bool) (writeResult, error) {
	var res writeResult
	if parents {
		created, err := mkdirAll(filepath.Dir(path))
		res.Dirs = created
		if err != nil {
			return res, err
		}
	}
	perm := fs.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return res, &fs.PathError{Op: "write", Path: path, Err: errNotRegularFile}
		}
		perm = fi.Mode().Perm()
	} else if errors.Is(err, fs.ErrNotExist) {
		res.Created = true
	} else {
		return res, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".loom-*.tmp")
	if err != nil {
		return res, err
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return res, err
	}
	res.Written = true
	return res, nil
}

func openDir(path string) (*os.File, error) {
	if err := isDir(path); err != nil {
		return nil, err
	}
	return os.Open(path)
}
