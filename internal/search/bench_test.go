package search

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentloom/loom/internal/search/searchtest"
)

// benchTree writes the shared generated tree; one file in ten holds the
// needle.
func benchTree(b *testing.B) string {
	b.Helper()
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := searchtest.WriteTree(root); err != nil {
		b.Fatal(err)
	}
	return root
}

// BenchmarkSearch compares plain rg (run directly, output discarded), rg
// --json parsed by RipgrepCollector (unjailed), and the Go engine.
func BenchmarkSearch(b *testing.B) {
	searchtest.RequireRipgrep(b)
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
			if r := rgRunAs(b, root, o, OperandPath); r.Matches != searchtest.Files/10 {
				b.Fatalf("matches %d", r.Matches)
			}
		}
	})
	b.Run("go_engine", func(b *testing.B) {
		for b.Loop() {
			r, err := Go(context.Background(), root, o)
			if err != nil || r.Matches != searchtest.Files/10 {
				b.Fatalf("matches %d: %v", r.Matches, err)
			}
		}
	})
}
