package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	"github.com/agentloom/loom/sandbox"
)

// The file API below is what a harness-side caller other than the file
// tools (code mode's fs capabilities) uses to reach workspace files: the
// same path discipline, protected-path and git-control refusals, pinned
// no-follow opens, stage-and-rename writes and git guard as fs_read and
// fs_write, with failures as *FileError values carrying the code and the
// sentence those tools would answer.

// FileError is a refused or failed call of the file API. Code is the
// code fs_read or fs_write answers for the same cause; Message is their
// sentence, bounded as theirs is.
type FileError struct {
	Code    Code
	Message string
}

func (e *FileError) Error() string { return e.Message }

// ErrorCode returns e.Code as a string (see CodedError).
func (e *FileError) ErrorCode() string { return string(e.Code) }

// fileError turns a failing Outcome of the file tools into a *FileError.
func fileError(o Outcome) error { return &FileError{Code: o.Code, Message: o.Text} }

// FileContent is a regular file the file API read.
type FileContent struct {
	// Path is the file as the file tools show it: relative to the
	// workspace when under it.
	Path    string
	Content []byte
}

// ReadFile reads the regular file at path (relative to the workspace, or
// absolute under a readable root) as fs_read would, at most MaxFileBytes.
func (c *Call) ReadFile(path string) (FileContent, error) {
	resolved, err := c.ResolveRead(path)
	if err != nil {
		return FileContent{}, fileError(pathFailure(err))
	}
	data, err := readRegular(resolved)
	if err != nil {
		return FileContent{}, fileError(readFailure(path, err))
	}
	return FileContent{Path: c.displayPath(resolved), Content: data}, nil
}

// FileWritten says what WriteFile did.
type FileWritten struct {
	Path    string
	Bytes   int
	Created bool
	// GitNeutralised lists the git control files the write's guard
	// neutralised, as fs_write reports them.
	GitNeutralised []sandbox.Neutralisation

	resolved string // the absolute path written, for DiagnoseWritten
}

// WriteFile replaces (or creates, with missing parents) the file at path
// under a writable root with content, as fs_write would: staged and
// renamed into place, never under a git control directory, guarded
// afterwards. At most MaxFileBytes.
func (c *Call) WriteFile(path string, content []byte) (FileWritten, error) {
	if len(content) > MaxFileBytes {
		return FileWritten{}, &FileError{Code: CodeFileTooLarge, Message: fmt.Sprintf("content is %d bytes; at most %d bytes (%d MiB) are written", len(content), MaxFileBytes, MaxFileBytes>>20)}
	}
	resolved, err := c.ResolveWrite(path)
	if err != nil {
		return FileWritten{}, fileError(pathFailure(err))
	}
	if o, refused := refuseGitControl(c, path, resolved); refused {
		return FileWritten{}, fileError(o)
	}
	res, err := writeWhole(resolved, content, true)
	if err != nil {
		return FileWritten{}, fileError(writeFailure(c, path, res, err))
	}
	shown := c.displayPath(resolved)
	guarded, err := guardGitWrite(c, resolved)
	if err != nil {
		return FileWritten{}, fileError(gitGuardFailure(c, shown, guarded, err))
	}
	return FileWritten{Path: shown, Bytes: len(content), Created: res.Created, GitNeutralised: guarded, resolved: resolved}, nil
}

// DiagnoseWritten asks d about content, which WriteFile just wrote as w,
// and renders the answer as fs_write appends it (within DiagnosticsWait,
// errors first, at most MaxDiagnosticsShown with their anchors). It is ""
// when d is nil or w did not come from WriteFile.
func (c *Call) DiagnoseWritten(ctx context.Context, d Diagnostics, w FileWritten, content []byte) string {
	if d == nil || w.resolved == "" {
		return ""
	}
	var b strings.Builder
	writeDiagnostics(&b, c, diagnose(ctx, d, []ChangedFile{{Path: w.resolved, Content: content}}), map[string][]byte{w.resolved: content})
	return b.String()
}

// DirEntry is one entry of a listed directory. Kind is "file", "dir",
// "link" or "other"; Size is a regular file's size, else 0. A link is
// reported as a link and never followed.
type DirEntry struct {
	Name string
	Kind string
	Size int64
}

// ListDir lists the directory at path (under a readable root) by name,
// at most max entries (max ≤ 0 or past 1000, maxListEntries, means
// 1000); more reports whether entries were left out. The
// directory is opened without following links.
func (c *Call) ListDir(path string, max int) (entries []DirEntry, more bool, err error) {
	if max <= 0 || max > maxListEntries {
		max = maxListEntries
	}
	resolved, err := c.ResolveRead(path)
	if err != nil {
		return nil, false, fileError(pathFailure(err))
	}
	d, err := openDir(resolved)
	if err != nil {
		return nil, false, fileError(readFailure(path, err))
	}
	defer d.Close()
	for {
		batch, err := d.ReadDir(256)
		for _, e := range batch {
			entries = append(entries, dirEntry(e))
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, fileError(readFailure(path, err))
		}
		if len(entries) > maxListScanEntries {
			more = true
			break
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	if len(entries) > max {
		entries, more = entries[:max], true
	}
	return entries, more, nil
}

// maxListEntries bounds the entries one ListDir answers.
const maxListEntries = 1000

// maxListScanEntries bounds the entries ListDir reads from one directory
// before it stops, so a directory of millions costs a bounded scan; the
// answer then says entries were left out.
const maxListScanEntries = 10 * maxListEntries

func dirEntry(e fs.DirEntry) DirEntry {
	t := e.Type()
	switch {
	case t.IsRegular():
		var size int64
		if fi, err := e.Info(); err == nil {
			size = fi.Size()
		}
		return DirEntry{Name: e.Name(), Kind: "file", Size: size}
	case t.IsDir():
		return DirEntry{Name: e.Name(), Kind: "dir"}
	case t&fs.ModeSymlink != 0:
		return DirEntry{Name: e.Name(), Kind: "link"}
	}
	return DirEntry{Name: e.Name(), Kind: "other"}
}
