package pinnedfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// ErrNotRegular is returned (wrapped in a *fs.PathError) when a name
// does not name a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrLink is returned (wrapped in a *fs.PathError) when the name a write
// would replace is a symbolic link, which is never followed.
var ErrLink = errors.New("a symbolic link, not followed")

// maxStagedStem bounds how much of a target's name its staged file's
// name repeats, so the staged name stays within NAME_MAX.
const maxStagedStem = 200

// TooLargeError reports a file past the caller's bound.
type TooLargeError struct {
	Name  string
	Size  int64 // bytes seen (at least Limit+1 when the size was not known ahead)
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes; the bound is %d", e.Name, e.Size, e.Limit)
}

// OpenRegular opens name beneath root for reading. It never blocks (a
// FIFO is refused, not waited on) and returns an error wrapping
// ErrNotRegular unless name is a regular file. Non-blocking mode means
// nothing to a regular file's reads, so the file reads as usual.
func OpenRegular(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	return f, fi, nil
}

// ReadRegular reads the whole regular file name beneath root, refusing
// one larger than limit bytes with a *TooLargeError (checked before
// reading and again while reading, since the file may grow).
func ReadRegular(root *os.Root, name string, limit int64) ([]byte, error) {
	f, fi, err := OpenRegular(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, &TooLargeError{Name: name, Size: fi.Size(), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Name: name, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// WriteWhole replaces the file name beneath root with data. Missing
// parent directories are created (mode 0755) beneath root. An existing
// target must be a regular file and keeps its permission bits; a new one
// gets perm. A reader sees the old content or the new, never a part.
func WriteWhole(root *os.Root, name string, data []byte, perm fs.FileMode) error {
	dir, base := path.Split(path.Clean(name))
	if dir = path.Clean(dir); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	d, err := root.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return replaceIn(d, base, data, perm)
}
