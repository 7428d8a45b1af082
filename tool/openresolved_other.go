//go:build !linux

package tool

import "os"

// openResolved opens a resolved path. Outside Linux there is no openat2,
// so a symlink swapped in after resolution is followed.
func openResolved(path string, flag int) (*os.File, error) {
	return os.OpenFile(path, flag, 0)
}

// pinDir returns dir itself outside Linux.
func pinDir(dir string) (string, func(), error) {
	return dir, func() {}, nil
}
