package tool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/sandbox"
)

// MaxFileBytes bounds a file the harness reads (text or image) or writes.
const MaxFileBytes = 8 << 20

// errTooLarge reports a file past MaxFileBytes.
type errTooLarge struct{ size int64 }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("file is %d bytes; at most %d bytes (%d MiB) are read", e.size, MaxFileBytes, MaxFileBytes>>20)
}

// errIsDirectory is wrapped when a read meets a directory.
var errIsDirectory = errors.New("is a directory; use bash (ls) or grep to list it")

// writeResult says what a writeWhole changed, whether or not it failed:
// the directories it created, whether the file was renamed into place
// (and was new), and a failure to sync the directory after the rename.
type writeResult struct {
	Dirs    []string
	Created bool
	Written bool
	SyncErr error
}

// changed renders what a failed write nevertheless changed, or says
// nothing was.
func (r writeResult) changed(c *Call) string {
	if len(r.Dirs) == 0 {
		return "nothing was changed"
	}
	shown := make([]string, len(r.Dirs))
	for i, d := range r.Dirs {
		shown[i] = c.displayPath(d)
	}
	return "the file was not written, but these directories were created on the way: " + strings.Join(shown, ", ")
}

// readRegular reads the regular file at the resolved path (never
// following a link, never blocking), refusing anything else and anything
// over MaxFileBytes.
func readRegular(path string) ([]byte, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
	if err == nil && sandbox.Covers(ws, resolved) {
		if rel, err := filepath.Rel(ws, resolved); err == nil {
			return rel
		}
	}
	return resolved
}
