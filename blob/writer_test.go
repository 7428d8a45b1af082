package blob_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentloom/loom/blob"
)

func TestWriterCommitMatchesPut(t *testing.T) {
	s := openStore(t)
	data := bytes.Repeat([]byte("0123456789"), 10_000) // spans several write buffers
	w := s.Create()
	defer w.Abort()
	for _, chunk := range [][]byte{data[:1], data[1:50_000], data[50_000:]} {
		if n, err := w.Write(chunk); err != nil || n != len(chunk) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if w.Size() != int64(len(data)) {
		t.Fatalf("Size = %d, want %d", w.Size(), len(data))
	}
	r, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if r != blob.Sum(data) {
		t.Fatalf("Commit = %s, want %s", r, blob.Sum(data))
	}
	got, err := s.Read(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Read: %v", err)
	}
	if left := staged(t, s.Root()); len(left) != 0 {
		t.Fatalf("staged files left: %v", left)
	}
	// Commit of content already stored is idempotent and leaves one file.
	w2 := s.Create()
	w2.Write(data)
	if r2, err := w2.Commit(); err != nil || r2 != r {
		t.Fatalf("second Commit = %s, %v", r2, err)
	}
	if n := len(files(t, s.Root())); n != 1 {
		t.Fatalf("%d files in store, want 1", n)
	}
}

func TestWriterEmptyCommit(t *testing.T) {
	s := openStore(t)
	r, err := s.Create().Commit()
	if err != nil || r != blob.Sum(nil) {
		t.Fatalf("empty Commit = %s, %v", r, err)
	}
	if _, err := s.Read(r); err != nil {
		t.Fatal(err)
	}
}

func TestWriterClosedAfterCommitOrAbort(t *testing.T) {
	s := openStore(t)
	w := s.Create()
	w.Write([]byte("x"))
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err := w.Write([]byte("y"))
	wantCode(t, err, blob.CodeClosed)
	_, err = w.Commit()
	wantCode(t, err, blob.CodeClosed)
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort after Commit: %v", err)
	}

	a := s.Create()
	a.Write([]byte("aborted"))
	if err := a.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := a.Abort(); err != nil {
		t.Fatalf("second Abort: %v", err)
	}
	_, err = a.Commit()
	wantCode(t, err, blob.CodeClosed)
	if left := staged(t, s.Root()); len(left) != 0 {
		t.Fatalf("Abort left staged files: %v", left)
	}
	if _, err := s.Read(blob.Sum([]byte("aborted"))); blob.CodeOf(err) != blob.CodeNotFound {
		t.Fatalf("aborted content readable: %v", err)
	}
}

// TestCrashBeforeRename simulates a writer that dies between staging and
// rename: nothing is readable, the staged file is not a blob, and Sweep
// reclaims it.
func TestCrashBeforeRename(t *testing.T) {
	s := openStore(t)
	data := bytes.Repeat([]byte("partial output "), 10_000)
	w := s.Create()
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	// The process "dies" here: no Commit, no Abort.
	r := blob.Sum(data)
	if _, err := s.Read(r); blob.CodeOf(err) != blob.CodeNotFound {
		t.Fatalf("Read of an uncommitted blob: %v", err)
	}
	if _, err := os.Stat(s.Path(r)); !os.IsNotExist(err) {
		t.Fatalf("blob path exists before any rename: %v", err)
	}
	left := staged(t, s.Root())
	if len(left) != 1 {
		t.Fatalf("staged files %v, want exactly one", left)
	}
	tmp := filepath.Join(s.Root(), left[0])
	if ref, ok := s.RefOf(tmp); ok {
		t.Fatalf("RefOf(staged file) = %s, true", ref)
	}

	// A sweep with a generous age keeps a file a live writer may still use.
	if n, err := s.Sweep(time.Hour); err != nil || n != 0 {
		t.Fatalf("Sweep(1h) = %d, %v; want 0", n, err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	// Decoys that are not staged files survive any sweep.
	decoy := filepath.Join(s.Root(), "notes.tmp")
	if err := os.WriteFile(decoy, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(decoy, old, old)
	kept, err := s.Put([]byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(time.Hour); err != nil || n != 1 {
		t.Fatalf("Sweep(1h) = %d, %v; want 1", n, err)
	}
	if left := staged(t, s.Root()); len(left) != 1 || left[0] != "notes.tmp" {
		t.Fatalf("after Sweep: staged-looking files %v, want only the decoy", left)
	}
	if _, err := s.Read(kept); err != nil {
		t.Fatalf("Sweep disturbed a blob: %v", err)
	}
	// The dead writer's Commit now fails and establishes nothing.
	_, err = w.Commit()
	wantCode(t, err, blob.CodeIO)
	if _, err := s.Read(r); blob.CodeOf(err) != blob.CodeNotFound {
		t.Fatalf("Read after failed Commit: %v", err)
	}
}

func TestSweepNegativeAgeCountsAsZero(t *testing.T) {
	s := openStore(t)
	w := s.Create()
	w.Write([]byte("x"))
	// Modification times can equal "now" at coarse resolution; backdate.
	left := staged(t, s.Root())
	old := time.Now().Add(-time.Second)
	os.Chtimes(filepath.Join(s.Root(), left[0]), old, old)
	if n, err := s.Sweep(-time.Hour); err != nil || n != 1 {
		t.Fatalf("Sweep(-1h) = %d, %v; want 1", n, err)
	}
}
