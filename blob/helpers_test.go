package blob_test

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
)

// openStore opens a store in a fresh temporary directory.
func openStore(t testing.TB) *blob.Store {
	t.Helper()
	s, err := blob.Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// ledgerDir is where a store keeps its bookkeeping (usage record and
// leases) under its root; nothing in it is a blob.
const ledgerDir = "ledger"

// files lists every regular file under root, relative to it, but for
// the store's ledger.
func files(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ledgerDir && filepath.Dir(p) == root {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return out
}

// staged returns the staged (temporary) files under root.
func staged(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	for _, f := range files(t, root) {
		if strings.HasSuffix(f, blob.StageSuffixForTest) {
			out = append(out, f)
		}
	}
	return out
}

// wantCode fails t unless err carries code.
func wantCode(t testing.TB, err error, code blob.Code) {
	t.Helper()
	if got := blob.CodeOf(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}
