//go:build unix

package lsp

import (
	"io/fs"
	"syscall"
)

// stampOf is fi's size, modification time and inode.
func stampOf(fi fs.FileInfo) stamp {
	s := stamp{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = uint64(st.Ino)
	}
	return s
}
