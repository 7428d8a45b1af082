package tool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// MaxFileBytes bounds a file the harness reads (text or image) or writes.
const MaxFileBytes = 8 << 20

// errTooLarge reports a file past MaxFileBytes.
type errTooLarge struct{ size int64 }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("file is %d bytes; at most %d bytes (8 MiB) are read", e.size, MaxFileBytes)
}

// readRegular reads the regular file at path, refusing anything else and
// anything over MaxFileBytes.
func readRegular(path string) ([]byte, error) {
	f, err := openResolved(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory; use bash (ls) or grep to list it", path)
		}
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > MaxFileBytes {
		return nil, errTooLarge{fi.Size()}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, errTooLarge{int64(len(data))}
	}
	return data, nil
}

// writeWhole replaces the file at path with data: parents are created, the
// bytes are staged in a temporary file beside the target, synced and
// renamed into place, so a reader sees the old content or the new, never a
// part. An existing file keeps its permission bits.
func writeWhole(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Every step below goes through the directory as opened without
	// symlinks, so a link swapped in after resolution cannot redirect it.
	dir, release, err := pinDir(dir)
	if err != nil {
		return err
	}
	defer release()
	target := filepath.Join(dir, filepath.Base(path))
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(target); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s exists and is not a regular file", path)
		}
		mode = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".loom-*.tmp")
	if err != nil {
		return err
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, target); err != nil {
		return err
	}
	ok = true
	return nil
}

// imageMIME returns the MIME type of an image the providers accept,
// detected by file signature, or "".
func imageMIME(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "image/gif"
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WEBP")):
		return "image/webp"
	}
	return ""
}

// displayPath renders a resolved path for the model: relative to the
// workspace when under it, absolute otherwise.
func (c *Call) displayPath(resolved string) string {
	ws, err := resolveReal(c.Workspace)
	if err == nil && within(ws, resolved) {
		if rel, err := filepath.Rel(ws, resolved); err == nil {
			return rel
		}
	}
	return resolved
}

// exists reports whether anything is at path (without following a final symlink).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
