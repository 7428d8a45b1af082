// Package searchtest generates the source-like trees the grep benchmarks
// of package search and package tool search, so both measure the same
// thing.
package searchtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Shape of a generated tree.
const (
	// Files is how many files WriteTree writes.
	Files = 3000
	// Dirs is how many top-level directories they spread over.
	Dirs = 60
	// Lines is how many lines each file has.
	Lines = 60
	// Needle appears once in every tenth file, so a search for it finds
	// Files/10 matches.
	Needle = "needleXYZ"
)

// WriteTree writes the generated tree under root.
func WriteTree(root string) error {
	words := []string{"alpha", "beta", "gamma", "delta", "func", "return", "value", "index", "error", "context", "buffer", "stream"}
	for i := 0; i < Files; i++ {
		dir := filepath.Join(root, fmt.Sprintf("pkg%02d", i%Dirs), fmt.Sprintf("sub%d", i%7))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		var sb strings.Builder
		for l := 0; l < Lines; l++ {
			for w := 0; w < 8; w++ {
				sb.WriteString(words[(i*31+l*7+w*13)%len(words)])
				sb.WriteByte(' ')
			}
			if i%10 == 0 && l == Lines/2 {
				sb.WriteString(Needle)
			}
			sb.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.go", i)), []byte(sb.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
