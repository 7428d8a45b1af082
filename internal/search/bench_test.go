package search

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	benchFiles = 3000
	benchDirs  = 60
	benchLines = 60
)

// benchTree writes benchFiles generated source-like files; one in ten
// holds the needle.
func benchTree(b *testing.B) string {
	b.Helper()
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	words := []string{"alpha", "beta", "gamma", "delta", "func", "return", "value", "index", "error", "context", "buffer", "stream"}
	for i := 0; i < benchFiles; i++ {
		dir := filepath.Join(root, fmt.Sprintf("pkg%02d", i%benchDirs), fmt.Sprintf("sub%d", i%7))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		var sb strings.Builder
		for l := 0; l < benchLines; l++ {
			for w := 0; w < 8; w++ {
				sb.WriteString(words[(i*31+l*7+w*13)%len(words)])
				sb.WriteByte(' ')
			}
			if i%10 == 0 && l == benchLines/2 {
				sb.WriteString("needleXYZ")
			}
			sb.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.go", i)), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

// BenchmarkSearch compares plain rg (run directly, output discarded), rg
// --json parsed by RipgrepCollector (unjailed), and the Go engine.
func BenchmarkSearch(b *testing.B) {
	if _, err := exec.LookPath("rg"); err != nil {
		b.Fatal("ripgrep (rg) is not on PATH")
	}
	root := benchTree(b)
	o := Options{Pattern: "needle[A-Z]+"}
	b.Run("plain_rg", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("rg", "-n", o.Pattern, root)
			cmd.Stdout = io.Discard
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rg_json_collected", func(b *testing.B) {
		for b.Loop() {
			if r := rgRun(b, root, o); r.Matches != benchFiles/10 {
				b.Fatalf("matches %d", r.Matches)
			}
		}
	})
	b.Run("go_engine", func(b *testing.B) {
		for b.Loop() {
			r, err := Go(context.Background(), root, o)
			if err != nil || r.Matches != benchFiles/10 {
				b.Fatalf("matches %d: %v", r.Matches, err)
			}
		}
	})
}
