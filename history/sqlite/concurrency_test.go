package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentloom/loom/history"
)

// TestConcurrentWritersAndReaders runs writers, note writers and readers
// at once on one store and on a second handle of the same file (as a
// second process would), under -race, and checks every write landed.
func TestConcurrentWritersAndReaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	a, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	const writers, batches, perBatch, readers, notes = 4, 10, 50, 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, 128)
	for w := range writers {
		wg.Go(func() {
			s := a
			if w%2 == 1 {
				s = b
			}
			for i := range batches {
				es := make([]history.Entry, perBatch)
				for j := range es {
					es[j] = entry(fmt.Sprintf("w%d", w), fmt.Sprintf("%d-%d", i, j), fmt.Sprintf("shared words writer%d batch%d", w, i))
				}
				if _, err := s.IndexBatch(ctx, es); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range notes {
			if _, err := a.Remember(ctx, numberedNote(i)); err != nil {
				errs <- err
				return
			}
		}
	})
	for r := range readers {
		wg.Go(func() {
			s := a
			if r%2 == 1 {
				s = b
			}
			for range 20 {
				if _, err := s.Search(ctx, history.Query{Text: "shared words", Limit: 5}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Recent(ctx, "w0", 5); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	hits, err := a.Search(ctx, history.Query{Text: "shared", Limit: history.MaxLimit})
	if err != nil || len(hits) != history.MaxLimit {
		t.Fatalf("hits %d err %v", len(hits), err)
	}
	var n int
	if err := a.readers.QueryRow(`SELECT count(*) FROM entries WHERE kind = 'message'`).Scan(&n); err != nil || n != writers*batches*perBatch {
		t.Errorf("entries = %d (%v), want %d", n, err, writers*batches*perBatch)
	}
	if got, err := b.Notes(ctx); err != nil || got != notes {
		t.Errorf("notes = %d (%v), want %d", got, err, notes)
	}
}
