package blob_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentloom/loom/blob"
	"golang.org/x/sys/unix"
)

// raceIterations is how many writes each link race makes against the
// pinned store.
const raceIterations = 2000

// controlIterations bounds the naive control's writes; it stops at its
// first write through the link.
const controlIterations = 20000

// swapper runs swap in a loop on its own goroutine until the returned
// stop is called; stop waits for the loop to end.
func swapper(swap func()) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !done.Load() {
			swap()
		}
	})
	return func() {
		done.Store(true)
		wg.Wait()
	}
}

// shardPayloads returns n distinct payloads whose refs all fall in the
// shard "ab", so every write races the one swapped shard directory.
func shardPayloads(n int) [][]byte {
	out := make([][]byte, 0, n)
	seq := 0
	for len(out) < n {
		out = append(out, nextShardPayload(&seq))
	}
	return out
}

// nextShardPayload returns the next payload after *seq whose ref falls in
// the shard "ab", advancing *seq past it.
func nextShardPayload(seq *int) []byte {
	for {
		p := fmt.Appendf(nil, "payload %d\n", *seq)
		*seq++
		if blob.Sum(p)[:blob.ShardLenForTest] == "ab" {
			return p
		}
	}
}

// naivePut is what a store that joins path strings does: create the shard
// by path, write the blob by path. It is the control: the races below
// show it writes through a link swapped in.
func naivePut(root string, data []byte) {
	r := blob.Sum(data)
	dir := filepath.Join(root, string(r[:blob.ShardLenForTest]))
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, string(r)), data, 0o444)
}

// entries counts what is in dir.
func entries(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	return len(ents)
}

// linkRace is one attack: a directory of the store swapped, in a tight
// loop, for a link to target while writes run.
type linkRace struct {
	name string
	// setup builds the store directory in dir and returns the store's
	// root path, the directory targeted by the link, and the swap.
	setup func(t *testing.T, dir string) (root, target string, swap func())
}

var linkRaces = []linkRace{
	{
		// The store root itself is exchanged with a link to another
		// directory.
		name: "root swapped for a link",
		setup: func(t *testing.T, dir string) (string, string, func()) {
			root, target := filepath.Join(dir, "blobs"), filepath.Join(dir, "target")
			mkdirs(t, root, target)
			return root, target, exchanger(t, root, target)
		},
	},
	{
		// The shard directory is exchanged with a link out of the store.
		name: "shard swapped for a link out of the store",
		setup: func(t *testing.T, dir string) (string, string, func()) {
			root, target := filepath.Join(dir, "blobs"), filepath.Join(dir, "target")
			mkdirs(t, filepath.Join(root, "ab"), target)
			return root, target, exchanger(t, filepath.Join(root, "ab"), target)
		},
	},
	{
		// The shard directory is exchanged with a link to another
		// directory inside the store, which os.Root alone would follow.
		name: "shard swapped for a link within the store",
		setup: func(t *testing.T, dir string) (string, string, func()) {
			root := filepath.Join(dir, "blobs")
			target := filepath.Join(root, "zz")
			mkdirs(t, filepath.Join(root, "ab"), target)
			return root, target, exchanger(t, filepath.Join(root, "ab"), target)
		},
	},
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// exchanger returns a swap that atomically exchanges the directory dir
// with a link to target (renameat2 RENAME_EXCHANGE) and back, so dir is
// never missing and is a link about half the time. The link lives beside
// dir while it is not in dir's place and points to target relatively.
func exchanger(t *testing.T, dir, target string) func() {
	t.Helper()
	link := filepath.Join(filepath.Dir(dir), "swap-link")
	// A relative link, so that one to a directory inside the store is
	// one os.Root would follow (it refuses absolute links outright).
	rel, err := filepath.Rel(filepath.Dir(dir), target)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, link); err != nil {
		t.Fatal(err)
	}
	exchange := func() {
		unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
	}
	return func() {
		exchange()
		exchange()
	}
}

// TestPutRacingLinks: while a store directory is swapped for a link in a
// tight loop, Puts and Writer commits never write into the link's target,
// and every blob they report stored reads back whole once the race ends.
// The control runs the same race against naivePut and requires it to
// write into the target, showing the race is real.
func TestPutRacingLinks(t *testing.T) {
	for _, lr := range linkRaces {
		t.Run(lr.name, func(t *testing.T) {
			t.Parallel()
			root, target, swap := lr.setup(t, t.TempDir())
			s, err := blob.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			payloads := shardPayloads(raceIterations)
			stored := make(map[blob.Ref][]byte)
			stop := swapper(swap)
			for i, p := range payloads {
				var r blob.Ref
				var err error
				if i%2 == 0 {
					r, err = s.Put(p)
				} else {
					w := s.Create()
					w.Write(p)
					r, err = w.Commit()
				}
				if err == nil {
					stored[r] = p
				}
			}
			stop()
			if n := entries(t, target); n != 0 {
				t.Fatalf("%d entries written into the link's target", n)
			}
			if len(stored) == 0 {
				t.Fatal("no write succeeded during the race: the test proves nothing")
			}
			if lr.name == linkRaces[0].name {
				for r, p := range stored {
					if got, err := s.Read(r); err != nil || string(got) != string(p) {
						t.Fatalf("blob %s after the race: %q, %v", r, got, err)
					}
				}
			}
			t.Logf("%d of %d writes stored during the race", len(stored), len(payloads))
		})
		t.Run(lr.name+"/naive control", func(t *testing.T) {
			t.Parallel()
			root, target, swap := lr.setup(t, t.TempDir())
			stop := swapper(swap)
			defer stop()
			seq := 0
			for i := range controlIterations {
				naivePut(root, nextShardPayload(&seq))
				if i%64 == 0 && entries(t, target) > 0 {
					return
				}
			}
			stop()
			if entries(t, target) == 0 {
				t.Fatalf("the naive writer never wrote through the link in %d tries: the race does not exercise links", controlIterations)
			}
		})
	}
}
