package codemode

import (
	"io/fs"
	"path"
	"slices"
	"time"
)

// overlayFS is the prelude tree with one generated package added: the
// file name in directory dir holds src. It serves fs.ReadDir and
// fs.ReadFile, which describing a package reads with, and Open for the
// rest of base.
type overlayFS struct {
	base      fs.FS
	dir, name string
	src       []byte
}

func (o overlayFS) Open(name string) (fs.File, error) {
	if name == o.dir || name == path.Join(o.dir, o.name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return o.base.Open(name)
}

func (o overlayFS) ReadFile(name string) ([]byte, error) {
	if name == path.Join(o.dir, o.name) {
		return slices.Clone(o.src), nil
	}
	return fs.ReadFile(o.base, name)
}

func (o overlayFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == o.dir {
		return []fs.DirEntry{overlayEntry{o.name, int64(len(o.src))}}, nil
	}
	return fs.ReadDir(o.base, name)
}

// overlayEntry is the generated file's entry.
type overlayEntry struct {
	name string
	size int64
}

func (e overlayEntry) Name() string               { return e.name }
func (e overlayEntry) IsDir() bool                { return false }
func (e overlayEntry) Type() fs.FileMode          { return 0 }
func (e overlayEntry) Info() (fs.FileInfo, error) { return e, nil }
func (e overlayEntry) Size() int64                { return e.size }
func (e overlayEntry) Mode() fs.FileMode          { return 0o444 }
func (e overlayEntry) ModTime() time.Time         { return time.Time{} }
func (e overlayEntry) Sys() any                   { return nil }
