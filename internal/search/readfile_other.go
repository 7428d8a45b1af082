//go:build !unix

package search

import (
	"io"
	"os"
)

// readFile reads path into buf (reusing its storage), stopping past
// MaxFileBytes.
func readFile(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	b := buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil || len(b) > MaxFileBytes {
			return b, err
		}
	}
}
