//go:build !unix

package lsp

import "io/fs"

// stampOf is fi's size and modification time.
func stampOf(fi fs.FileInfo) stamp { return stamp{size: fi.Size(), mtime: fi.ModTime()} }
