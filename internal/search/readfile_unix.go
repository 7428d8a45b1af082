//go:build unix

package search

import (
	"errors"
	"syscall"
)

// readFile reads path into buf (reusing its storage) with plain system
// calls: open, read until end of file, close. Regular files gain nothing
// from the runtime poller, and skipping it (and a stat) matters when a
// search opens thousands of files. It stops reading past MaxFileBytes.
func readFile(path string, buf []byte) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return buf, err
	}
	defer syscall.Close(fd)
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return buf, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) > MaxFileBytes {
			return buf, nil
		}
	}
}
