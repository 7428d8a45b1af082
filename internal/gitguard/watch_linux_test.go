package gitguard

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// TestInotifyHubSyncNotesEveryQueuedChange: once sync returns true,
// every change made before it is noted in the watch (a settling command
// decides "quiet" from that count at once, with no wait for the reader
// goroutine). Each round changes the directory and checks the count
// right after sync, so a sync that returned before the queue was read
// fails here on nearly every round: with one P, the reader goroutine
// gets no chance to run between the change and the check unless sync
// itself waits for or does the reading.
func TestInotifyHubSyncNotesEveryQueuedChange(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	w, err := newGitWatch()
	if err != nil {
		t.Fatalf("inotify is required here: %v", err)
	}
	defer w.retire()
	dir := t.TempDir()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	w.add(".", d)
	const rounds = 200
	for i := range rounds {
		before, _ := w.count()
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if !syncWatch() {
			t.Fatal("sync could not tell the queue was read")
		}
		if after, ok := w.count(); !ok || after == before {
			t.Fatalf("round %d: the change made before sync was not noted (count %d -> %d, watch standing %v)", i, before, after, ok)
		}
	}
}
