//go:build !unix

package search

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
)

// Outside unix the walk holds an *os.Root per directory: nothing is
// opened outside the search root, and entries that are links when
// looked at are skipped, but a link swapped in between that look and the
// open is followed if it stays inside the root (os.Root refuses only
// links that leave it). No jail exists on these systems either; the grep
// tool says so.

type pinnedDir struct {
	root *os.Root
	path string
	refs atomic.Int32
}

func newPinnedDir(r *os.Root, path string) *pinnedDir {
	d := &pinnedDir{root: r, path: path}
	d.refs.Store(1)
	return d
}

func (d *pinnedDir) retain() { d.refs.Add(1) }

func (d *pinnedDir) release() {
	if d.refs.Add(-1) == 0 {
		d.root.Close()
	}
}

func (d *pinnedDir) sub(name string) (*pinnedDir, error) {
	fi, err := d.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: joinPath(d.path, name), Err: fs.ErrInvalid}
	}
	r, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	return newPinnedDir(r, joinPath(d.path, name)), nil
}

func (d *pinnedDir) list() ([]os.DirEntry, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

var errTooLarge = errors.New("file over the size bound")

func (d *pinnedDir) readAt(name string, buf []byte, limit int) ([]byte, error) {
	return d.read(name, buf, limit, 0)
}

func (d *pinnedDir) readLines(name string, buf []byte, limit, lines int) ([]byte, error) {
	return d.read(name, buf, limit, max(lines, 1))
}

func (d *pinnedDir) read(name string, buf []byte, limit, lines int) ([]byte, error) {
	if fi, err := d.root.Lstat(name); err != nil || !fi.Mode().IsRegular() {
		return buf[:0], fs.ErrInvalid
	}
	f, err := d.root.Open(name)
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return buf[:0], fs.ErrInvalid
	}
	if lines == 0 && fi.Size() > int64(limit) {
		return buf[:0], errTooLarge
	}
	b := buf[:0]
	seen := 0
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		if lines > 0 {
			n = min(n, limit-len(b))
			seen += bytes.Count(b[len(b):len(b)+n], []byte{'\n'})
		}
		b = b[:len(b)+n]
		switch {
		case lines > 0 && seen >= lines:
			return b, nil
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case lines > 0 && len(b) >= limit, lines == 0 && len(b) > limit:
			return b, errTooLarge
		}
	}
}

func openRoot(root string, above func(*pinnedDir)) (*pinnedDir, string, error) {
	fi, err := os.Lstat(root)
	if err != nil {
		return nil, "", err
	}
	switch {
	case fi.IsDir():
		var chain []string // root's ancestors, deepest first
		for p := filepath.Dir(root); p != root; p = filepath.Dir(p) {
			chain = append(chain, p)
			if filepath.Dir(p) == p {
				break
			}
		}
		for i := len(chain) - 1; i >= 0; i-- {
			if r, err := os.OpenRoot(chain[i]); err == nil {
				d := newPinnedDir(r, chain[i])
				above(d)
				d.release()
			}
		}
		r, err := os.OpenRoot(root)
		if err != nil {
			return nil, "", err
		}
		return newPinnedDir(r, root), "", nil
	case fi.Mode().IsRegular():
		r, err := os.OpenRoot(filepath.Dir(root))
		if err != nil {
			return nil, "", err
		}
		return newPinnedDir(r, filepath.Dir(root)), filepath.Base(root), nil
	}
	return nil, "", &fs.PathError{Op: "open", Path: root, Err: fs.ErrInvalid}
}
