package codemode

import (
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"io/fs"
	"path"
	"sort"
	"sync"
)

// preludeFiles is the cap/... tree programs import. The go tool ignores
// a directory whose name starts with "_", so the tree builds only as the
// module "cap" a builder lays out; it holds no go.mod (embed refuses a
// nested module).
//
//go:embed all:_prelude
var preludeFiles embed.FS

// preludeRoot is the embedded tree's directory.
const preludeRoot = "_prelude"

// preludeModule is the module path of the prelude tree: a program
// imports "cap/fs", and a package's path is preludeModule + "/" + its
// directory.
const preludeModule = "cap"

// embeddedPrelude returns the prelude tree, rooted so that its paths read
// "fs/fs.go", "internal/wire/codec.go": the module "cap", every .go file
// of every package, nothing else.
func embeddedPrelude() fs.FS {
	sub, err := fs.Sub(preludeFiles, preludeRoot)
	if err != nil { // unreachable: preludeRoot is a literal valid path
		return preludeFiles
	}
	return sub
}

// preludeIndex is the tree's package list and digest, computed once.
var preludeIndex = sync.OnceValues(func() ([]string, string) { return indexTree(embeddedPrelude()) })

// indexTree returns the import paths of the packages in tree (every
// directory holding a .go file, under preludeModule), sorted, and the
// hex SHA-256 over its files: for each file in path order, its path, a
// NUL, its length as 8 big-endian bytes and its content.
func indexTree(tree fs.FS) ([]string, string) {
	var files []string
	pkgs := map[string]bool{}
	// The embedded tree cannot fail to walk; an error leaves the lists
	// short, which TestPreludeDigest and TestPreludePackages catch.
	fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
			if path.Ext(p) == ".go" {
				pkgs[path.Join(preludeModule, path.Dir(p))] = true
			}
		}
		return nil
	})
	sort.Strings(files)
	h := sha256.New()
	for _, p := range files {
		b, _ := fs.ReadFile(tree, p)
		h.Write(append([]byte(p), 0))
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	list := make([]string, 0, len(pkgs))
	for p := range pkgs {
		list = append(list, p)
	}
	sort.Strings(list)
	return list, hex.EncodeToString(h.Sum(nil))
}

// embeddedPreludePackages returns the import path of every package in the
// prelude, sorted, the internal ones included (a builder compiles them
// all; the vetter admits only the seam's). A fresh slice each call.
func embeddedPreludePackages() []string {
	list, _ := preludeIndex()
	return append([]string(nil), list...)
}
