//go:build unix && !aix

package blob_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// fakeClock is an injected clock: every call is one second after the
// last, so every touch has its own time and no test sleeps.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(time.Second)
	return c.t
}

// session opens a store at root with opts and the clock, closed at the
// end of the test.
func session(t testing.TB, root string, opts blob.Options, clock *fakeClock) *blob.Store {
	t.Helper()
	s, err := blob.OpenWith(root, opts)
	if err != nil {
		t.Fatalf("OpenWith: %v", err)
	}
	if clock != nil {
		blob.SetClockForTest(s, clock.now)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// present reports which of refs are stored under root.
func present(t testing.TB, root string, refs []blob.Ref) []bool {
	t.Helper()
	out := make([]bool, len(refs))
	for i, r := range refs {
		_, err := os.Lstat(filepath.Join(root, string(r[:2]), string(r)))
		out[i] = err == nil
	}
	return out
}

// leases lists the lease files under root.
func leases(t testing.TB, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, ledgerDir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".lease") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestEvictionIsLeastRecentlyUsed: eight one-block blobs fill a store of
// eight blocks; a ninth takes it past, and the eviction removes the least
// recently stored or read blobs no session holds until the store is at
// 7/8 of its budget: two blobs. A read or a re-put by another session
// makes a blob recent. The first row is the control: with no use since
// they were stored, the two oldest go.
func TestEvictionIsLeastRecentlyUsed(t *testing.T) {
	const blk = int(blob.BlockBytes)
	opts := blob.Options{MaxBytes: 8 * blob.BlockBytes}
	tests := []struct {
		name    string
		use     func(t *testing.T, s *blob.Store, data [][]byte)
		evicted []int
	}{
		{"no use since stored", func(*testing.T, *blob.Store, [][]byte) {}, []int{0, 1}},
		{"the oldest read", func(t *testing.T, s *blob.Store, data [][]byte) {
			if _, err := s.Read(blob.Sum(data[0])); err != nil {
				t.Fatal(err)
			}
		}, []int{1, 2}},
		{"the second stored again", func(t *testing.T, s *blob.Store, data [][]byte) {
			if _, err := s.Put(data[1]); err != nil {
				t.Fatal(err)
			}
		}, []int{0, 2}},
		{"the three oldest used, newest first", func(t *testing.T, s *blob.Store, data [][]byte) {
			for _, i := range []int{2, 1, 0} {
				if _, err := s.Read(blob.Sum(data[i])); err != nil {
					t.Fatal(err)
				}
			}
		}, []int{3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "blobs")
			clock := newFakeClock()
			var data [][]byte
			var refs []blob.Ref
			w := session(t, root, opts, clock)
			for i := range 9 {
				data = append(data, sized(blk, uint64(i)+1))
				refs = append(refs, blob.Sum(data[i]))
			}
			for _, d := range data[:8] {
				if _, err := w.Put(d); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil { // releases all eight; at the bound, nothing goes
				t.Fatal(err)
			}
			if got := present(t, root, refs[:8]); slices.Contains(got, false) {
				t.Fatalf("evicted at the bound: %v", got)
			}
			u := session(t, root, opts, clock)
			tt.use(t, u, data)
			if err := u.Close(); err != nil {
				t.Fatal(err)
			}
			p := session(t, root, opts, clock)
			if _, err := p.Put(data[8]); err != nil {
				t.Fatal(err)
			}
			want := make([]bool, 9)
			for i := range want {
				want[i] = !slices.Contains(tt.evicted, i)
			}
			if diff := cmp.Diff(want, present(t, root, refs)); diff != "" {
				t.Fatalf("present after the ninth put (-want +got):\n%s", diff)
			}
			for _, i := range tt.evicted {
				_, err := p.Read(refs[i])
				wantCode(t, err, blob.CodeNotFound)
			}
		})
	}
}

// TestStoreBudgetAtTheBound: a store may hold exactly MaxBytes; one more
// block evicts.
func TestStoreBudgetAtTheBound(t *testing.T) {
	tests := []struct {
		name    string
		sizes   []int
		evicted bool
	}{
		{"at the bound", []int{3 * int(blob.BlockBytes), int(blob.BlockBytes)}, false},
		{"a byte past", []int{3 * int(blob.BlockBytes), int(blob.BlockBytes) + 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "blobs")
			opts := blob.Options{MaxBytes: 4 * blob.BlockBytes}
			clock := newFakeClock()
			first := sized(tt.sizes[0], 1)
			w := session(t, root, opts, clock)
			if _, err := w.Put(first); err != nil {
				t.Fatal(err)
			}
			w.Close()
			p := session(t, root, opts, clock)
			if _, err := p.Put(sized(tt.sizes[1], 2)); err != nil {
				t.Fatal(err)
			}
			if got := !present(t, root, []blob.Ref{blob.Sum(first)})[0]; got != tt.evicted {
				t.Fatalf("first blob evicted = %v, want %v", got, tt.evicted)
			}
		})
	}
}

// TestHeldBlobIsNeverEvicted: a blob a live session holds in this
// process (a second Store, its own lease locked on its own descriptor)
// survives any eviction, while the unheld blob older than it goes; once
// that session closes, the next eviction may take it. The unheld blob is
// the control: the eviction does run and does remove the oldest blob.
func TestHeldBlobIsNeverEvicted(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	opts := blob.Options{MaxBytes: 4 * blob.BlockBytes}
	clock := newFakeClock()
	holder := session(t, root, opts, clock)
	held := sized(int(blob.BlockBytes), 1)
	rh, err := holder.Put(held)
	if err != nil {
		t.Fatal(err)
	}
	w := session(t, root, opts, clock)
	unheld := sized(int(blob.BlockBytes), 2)
	ru, err := w.Put(unheld)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	p := session(t, root, opts, clock)
	if _, err := p.Put(sized(3*int(blob.BlockBytes), 3)); err != nil {
		t.Fatal(err)
	}
	if got := present(t, root, []blob.Ref{rh, ru}); !got[0] || got[1] {
		t.Fatalf("held, unheld present = %v, want [true false]", got)
	}
	if got, err := holder.Read(rh); err != nil || !bytes.Equal(got, held) {
		t.Fatalf("held blob unreadable: %v", err)
	}
	if err := blob.EvictForTest(p); err != nil {
		t.Fatal(err)
	}
	if !present(t, root, []blob.Ref{rh})[0] {
		t.Fatal("a held blob was evicted by an explicit eviction")
	}
	holder.Close()
	if _, err := p.Put(sized(int(blob.BlockBytes), 4)); err != nil { // over the budget again
		t.Fatal(err)
	}
	if present(t, root, []blob.Ref{rh})[0] {
		t.Fatal("a released blob, the oldest, survived an eviction over the budget")
	}
}

// holderEnv names the store root a helper process holds a blob in.
const holderEnv = "LOOM_BLOB_TEST_HOLDER_ROOT"

// TestLeaseHolderProcess is not a test of its own: run by
// startHolder as a child process, it stores one blob, prints its ref,
// and holds it until its standard input closes.
func TestLeaseHolderProcess(t *testing.T) {
	root := os.Getenv(holderEnv)
	if root == "" {
		t.Skip("helper process for TestHeldAcrossProcesses")
	}
	s, err := blob.Open(root)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	r, err := s.Put([]byte("held by another process"))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println(r)
	io.Copy(io.Discard, os.Stdin)
	s.Close()
	os.Exit(0)
}

// startHolder starts a child process holding a blob in root, and returns
// it with the ref and the pipe whose closing ends it.
func startHolder(t *testing.T, root string) (*exec.Cmd, blob.Ref, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaseHolderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), holderEnv+"="+root)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("holder: %q, %v", line, err)
	}
	r, err := blob.ParseRef(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("holder said %q", line)
	}
	return cmd, r, stdin
}

// TestHeldAcrossProcesses: a blob a live session in another process
// holds survives evictions here, although it is the least recently used;
// when that process dies without closing its store, its lease is stale,
// and the next eviction removes the lease and then may evict the blob.
// When the process closes its store, its lease goes with it. The
// evictions of the unheld filler are the control: eviction ran each time.
func TestHeldAcrossProcesses(t *testing.T) {
	for _, ending := range []string{"killed", "closed"} {
		t.Run(ending, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "blobs")
			cmd, rh, stdin := startHolder(t, root)
			if len(leases(t, root)) != 1 {
				t.Fatalf("leases while the holder runs: %v", leases(t, root))
			}
			opts := blob.Options{MaxBytes: 4 * blob.BlockBytes}
			clock := newFakeClock() // from 2030: the holder's blob is older
			w := session(t, root, opts, clock)
			filler := sized(2*int(blob.BlockBytes), 1)
			rf, err := w.Put(filler)
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			p := session(t, root, opts, clock)
			if _, err := p.Put(sized(3*int(blob.BlockBytes), 2)); err != nil {
				t.Fatal(err)
			}
			if got := present(t, root, []blob.Ref{rh, rf}); !got[0] || got[1] {
				t.Fatalf("held, filler present = %v, want [true false]", got)
			}
			switch ending {
			case "killed":
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				if len(leases(t, root)) != 2 { // the dead holder's and p's
					t.Fatalf("leases after the kill: %v", leases(t, root))
				}
			case "closed":
				stdin.Close()
				if err := cmd.Wait(); err != nil {
					t.Fatalf("holder: %v", err)
				}
				if len(leases(t, root)) != 1 { // p's
					t.Fatalf("leases after a clean exit: %v", leases(t, root))
				}
			}
			if _, err := p.Put(sized(int(blob.BlockBytes), 3)); err != nil { // over the budget again
				t.Fatal(err)
			}
			if present(t, root, []blob.Ref{rh})[0] {
				t.Fatal("the released blob, the oldest, survived an eviction over the budget")
			}
			if got := leases(t, root); len(got) != 1 {
				t.Fatalf("stale lease not removed: %v", got)
			}
		})
	}
}

// TestStaleLeaseAtOpen: a lease nobody holds locked (left by a crash) is
// removed when the store is next opened, and the refs it names are no
// longer protected; entries of the ledger that are not leases (a link
// named like one, other names) are left alone.
func TestStaleLeaseAtOpen(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	opts := blob.Options{MaxBytes: 2 * blob.BlockBytes}
	clock := newFakeClock()
	w := session(t, root, opts, clock)
	old := sized(int(blob.BlockBytes), 1)
	r, err := w.Put(old)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	ledger := filepath.Join(root, ledgerDir)
	stale := filepath.Join(ledger, "AAAAAAAAAAAAAAAAAAAAAAAAAA.lease")
	if err := os.WriteFile(stale, []byte(string(r)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte(string(r)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(ledger, "BBBBBBBBBBBBBBBBBBBBBBBBBB.lease")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(ledger, "notes.txt")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := session(t, root, opts, clock)
	if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale lease kept at Open: %v", err)
	}
	for _, keep := range []string{link, other, outside} {
		if _, err := os.Lstat(keep); err != nil {
			t.Fatalf("%s removed: %v", keep, err)
		}
	}
	if _, err := p.Put(sized(2*int(blob.BlockBytes), 2)); err != nil {
		t.Fatal(err)
	}
	if present(t, root, []blob.Ref{r})[0] {
		t.Fatal("a blob named only by a stale lease, or by a link, survived an eviction")
	}
}

// TestEvictionRemovesOnlyBlobs: eviction removes only regular files
// named by a well-formed ref in that ref's shard. A file named by a ref
// in the wrong shard, a stray name, a directory and a link named like a
// blob, a staged file, and a shard that is a link to a directory outside
// the store all survive, and nothing outside the root is touched. The
// control shows the planted shard link would lead a path-joining evictor
// to the outside file.
func TestEvictionRemovesOnlyBlobs(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	opts := blob.Options{MaxBytes: blob.BlockBytes}
	clock := newFakeClock()
	w := session(t, root, opts, clock)
	real := sized(int(blob.BlockBytes), 1)
	rr, err := w.Put(real)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()

	outsideDir := t.TempDir()
	victim := blob.Sum([]byte("outside the store"))
	outsideFile := filepath.Join(outsideDir, string(victim))
	if err := os.WriteFile(outsideFile, []byte("outside the store"), 0o644); err != nil {
		t.Fatal(err)
	}
	wrongShard := blob.Sum([]byte("wrong shard"))
	shardOf := func(r blob.Ref) string { return filepath.Join(root, string(r[:2])) }
	other := "00"
	if wrongShard[:2] == "00" {
		other = "01"
	}
	dirLike := blob.Sum([]byte("a directory"))
	linkLike := blob.Sum([]byte("a link"))
	plants := []string{
		filepath.Join(root, other, string(wrongShard)),
		filepath.Join(shardOf(rr), "stray"),
		filepath.Join(shardOf(rr), strings.ToUpper(string(rr))),
		filepath.Join(root, blob.StagePrefixForTest+"left"+blob.StageSuffixForTest),
	}
	for _, p := range plants {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), int(blob.BlockBytes)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(shardOf(dirLike), string(dirLike)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(shardOf(linkLike), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outsideFile, filepath.Join(shardOf(linkLike), string(linkLike))); err != nil {
		t.Fatal(err)
	}
	linkedShard := shardOf(victim)
	os.RemoveAll(linkedShard)
	if err := os.Symlink(outsideDir, linkedShard); err != nil {
		t.Fatal(err)
	}

	p := session(t, root, opts, clock)
	if _, err := p.Put(sized(int(blob.BlockBytes), 2)); err != nil {
		t.Fatal(err)
	}
	if present(t, root, []blob.Ref{rr})[0] {
		t.Fatal("the real blob, over the budget and unheld, was not evicted")
	}
	for _, keep := range append(plants, filepath.Join(shardOf(dirLike), string(dirLike)), filepath.Join(shardOf(linkLike), string(linkLike)), linkedShard, outsideFile) {
		if _, err := os.Lstat(keep); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
	// Control: joining the path and removing it follows the shard link
	// out of the store.
	if err := os.Remove(filepath.Join(root, string(victim[:2]), string(victim))); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(outsideFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("control: a path-joining removal did not reach the outside file: %v", err)
	}
}

// storeModel is the state machine of TestStoreStateMachine: up to three
// sessions (Stores) on one root put and read a pool of payloads, close,
// and evict, under one injected clock. The model knows what each
// session holds and when each blob was last used; the store decides
// what to evict, and the model checks the decision.
type storeModel struct {
	root     string
	opts     blob.Options
	clock    *fakeClock
	payloads [][]byte
	sessions []*modelSession // open ones
	used     map[blob.Ref]time.Time
	decoys   []string
	onDisk   map[blob.Ref]int64 // what the last check found
}

type modelSession struct {
	s    *blob.Store
	held map[blob.Ref]int64 // ref → charge (0: only read)
}

func chargeOf(n int) int64 {
	return (int64(n) + blob.BlockBytes - 1) / blob.BlockBytes * blob.BlockBytes
}

func (m *storeModel) open(t *rapid.T) {
	s, err := blob.OpenWith(m.root, m.opts)
	if err != nil {
		t.Fatalf("OpenWith: %v", err)
	}
	blob.SetClockForTest(s, m.clock.now)
	m.sessions = append(m.sessions, &modelSession{s: s, held: map[blob.Ref]int64{}})
}

func (m *storeModel) session(t *rapid.T) (int, *modelSession) {
	if len(m.sessions) == 0 {
		t.Skip("no open session")
	}
	i := rapid.IntRange(0, len(m.sessions)-1).Draw(t, "session")
	return i, m.sessions[i]
}

func (m *storeModel) put(t *rapid.T) {
	_, ms := m.session(t)
	data := m.payloads[rapid.IntRange(0, len(m.payloads)-1).Draw(t, "payload")]
	r, c := blob.Sum(data), chargeOf(len(data))
	var holds int64
	for _, h := range ms.held {
		holds += h
	}
	refuse := holds+max(c-ms.held[r], 0) > m.opts.SessionBytes
	got, err := ms.s.Put(data)
	if refuse {
		if blob.CodeOf(err) != blob.CodeSpillBudget {
			t.Fatalf("Put past the session budget (%d held + %d): %v", holds, c, err)
		}
		return
	}
	if err != nil || got != r {
		t.Fatalf("Put = %s, %v", got, err)
	}
	ms.held[r] = max(ms.held[r], c)
	m.used[r] = m.clock.t
	m.check(t, true)
}

func (m *storeModel) read(t *rapid.T) {
	_, ms := m.session(t)
	data := m.payloads[rapid.IntRange(0, len(m.payloads)-1).Draw(t, "payload")]
	r := blob.Sum(data)
	_, stored := m.onDisk[r]
	got, err := ms.s.Read(r)
	switch {
	case stored && (err != nil || !bytes.Equal(got, data)):
		t.Fatalf("Read of a stored blob: %v", err)
	case !stored && blob.CodeOf(err) != blob.CodeNotFound:
		t.Fatalf("Read of a missing blob: %v", err)
	}
	if stored {
		if _, ok := ms.held[r]; !ok {
			ms.held[r] = 0
		}
		m.used[r] = m.clock.t
	}
	m.check(t, false)
}

func (m *storeModel) close(t *rapid.T) {
	i, ms := m.session(t)
	if err := ms.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	m.sessions = slices.Delete(m.sessions, i, i+1)
	m.check(t, true)
}

func (m *storeModel) evict(t *rapid.T) {
	_, ms := m.session(t)
	if err := blob.EvictForTest(ms.s); err != nil {
		t.Fatalf("evict: %v", err)
	}
	m.check(t, true)
}

// check holds the invariants: every held blob is stored whole; every
// blob that went was held by no open session and was used no later than
// any unheld blob that stayed; after a write, close or eviction the
// store is within its budget unless every blob in it is held; no session
// holds more than its budget; nothing but blobs was ever removed.
func (m *storeModel) check(t *rapid.T, bounded bool) {
	disk := map[blob.Ref]int64{}
	var total int64
	shards, _ := filepath.Glob(filepath.Join(m.root, "[0-9a-f][0-9a-f]", "*"))
	for _, f := range shards {
		r, err := blob.ParseRef(filepath.Base(f))
		if err != nil || filepath.Base(filepath.Dir(f)) != string(r[:2]) {
			continue
		}
		fi, err := os.Lstat(f)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		disk[r] = fi.Size()
		total += chargeOf(int(fi.Size()))
	}
	held := map[blob.Ref]bool{}
	for _, ms := range m.sessions {
		var charged int64
		for r, c := range ms.held {
			held[r] = true
			charged += c
			got, err := os.ReadFile(filepath.Join(m.root, string(r[:2]), string(r)))
			if err != nil || blob.Sum(got) != r {
				t.Fatalf("held blob %s unreadable: %v", r[:8], err)
			}
		}
		if charged > m.opts.SessionBytes {
			t.Fatalf("a session holds %d bytes, past its budget %d", charged, m.opts.SessionBytes)
		}
	}
	var gone []blob.Ref
	for r := range m.onDisk {
		if _, ok := disk[r]; !ok {
			gone = append(gone, r)
		}
	}
	for _, g := range gone {
		if held[g] {
			t.Fatalf("held blob %s evicted", g[:8])
		}
		for r := range disk {
			if !held[r] && m.used[r].Before(m.used[g]) {
				t.Fatalf("evicted %s (used %v) before unheld %s (used %v)", g[:8], m.used[g], r[:8], m.used[r])
			}
		}
	}
	if bounded && total > m.opts.MaxBytes {
		for r := range disk {
			if !held[r] {
				t.Fatalf("store at %d bytes, over its budget %d, with unheld blob %s", total, m.opts.MaxBytes, r[:8])
			}
		}
	}
	for _, d := range m.decoys {
		if _, err := os.Lstat(d); err != nil {
			t.Fatalf("non-blob %s removed: %v", d, err)
		}
	}
	m.onDisk = disk
}

// TestStoreStateMachine runs random sequences of Open, Put, Read, Close
// and eviction over sessions sharing one root against storeModel.
func TestStoreStateMachine(t *testing.T) {
	base := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		blk := int(blob.BlockBytes)
		dir, err := os.MkdirTemp(base, "run")
		if err != nil {
			t.Fatal(err)
		}
		m := &storeModel{
			root:  filepath.Join(dir, "blobs"),
			opts:  blob.Options{MaxBytes: 6 * blob.BlockBytes, SessionBytes: 3 * blob.BlockBytes},
			clock: newFakeClock(),
			used:  map[blob.Ref]time.Time{},
		}
		sizes := rapid.SliceOfN(rapid.SampledFrom([]int{1, blk, blk + 1, 2 * blk, 3 * blk, 3*blk + 1}), 3, 8).Draw(t, "sizes")
		for i, n := range sizes {
			m.payloads = append(m.payloads, sized(n, uint64(i)+1))
		}
		m.open(t)
		empty := blob.Sum(nil) // a directory where a blob would be
		if err := os.MkdirAll(filepath.Join(m.root, string(empty[:2]), string(empty)), 0o755); err != nil {
			t.Fatal(err)
		}
		stray := blob.Sum([]byte("stray")) // in the wrong shard
		m.decoys = []string{
			filepath.Join(m.root, string(empty[:2]), string(empty)),
			filepath.Join(m.root, "0a", string(stray)),
			filepath.Join(m.root, "0a", "stray"),
		}
		for _, d := range m.decoys[1:] {
			if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(d, bytes.Repeat([]byte("d"), blk), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		defer func() {
			for _, ms := range m.sessions {
				ms.s.Close()
			}
		}()
		m.check(t, true)
		t.Repeat(map[string]func(*rapid.T){
			"open": func(t *rapid.T) {
				if len(m.sessions) >= 3 {
					t.Skip("three sessions open")
				}
				m.open(t)
			},
			"put":   m.put,
			"read":  m.read,
			"close": m.close,
			"evict": m.evict,
		})
	})
}

// TestPutRacingEviction: a session stores bytes already in the store,
// unheld and the oldest, while another session evicts; whichever comes
// first, the Put's blob is there for its session to read once Put
// returns (the eviction either ran before the Put held it, and the Put
// wrote it again, or after, and skipped it).
func TestPutRacingEviction(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	opts := blob.Options{MaxBytes: 2 * blob.BlockBytes, SessionBytes: blob.BlockBytes}
	evictor := session(t, root, opts, nil)
	for i := range 40 {
		data := sized(int(blob.BlockBytes), uint64(i))
		w := session(t, root, opts, nil)
		if _, err := w.Put(data); err != nil {
			t.Fatal(err)
		}
		w.Close()
		a := session(t, root, opts, nil)
		done := make(chan error)
		go func() { done <- blob.EvictForTest(evictor) }()
		r, err := a.Put(data)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := a.Read(r); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("round %d: the blob Put returned is not readable: %v", i, err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		a.Close()
	}
}

// TestEvictionWaitsForAHold: an eviction cannot run between a Put
// finding its blob present and holding it, since the Put holds the
// store lock across both; so the blob Put returns is there to read. The
// control runs the same eviction at the same point without the lock:
// it removes the blob, and the ref Put returns names nothing.
func TestEvictionWaitsForAHold(t *testing.T) {
	for _, locked := range []bool{true, false} {
		t.Run(fmt.Sprintf("locked=%v", locked), func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "blobs")
			// Only the evictor has the small budget, so only it evicts.
			evictor := session(t, root, blob.Options{MaxBytes: blob.BlockBytes}, nil)
			data := sized(int(blob.BlockBytes), 1)
			w := session(t, root, blob.Options{}, nil)
			if _, err := w.Put(data); err != nil {
				t.Fatal(err)
			}
			w.Close()
			filler := session(t, root, blob.Options{}, nil) // the store is over the evictor's budget
			if _, err := filler.Put(sized(int(blob.BlockBytes), 2)); err != nil {
				t.Fatal(err)
			}
			a := session(t, root, blob.Options{}, nil)
			ran := false
			blob.SetBeforeHoldForTest(a, func() {
				var err error
				if locked {
					ran, err = blob.TryEvictForTest(evictor)
				} else {
					ran, err = true, blob.EvictUnlockedForTest(evictor)
				}
				if err != nil {
					t.Error(err)
				}
			})
			r, err := a.Put(data)
			if err != nil {
				t.Fatal(err)
			}
			_, rerr := a.Read(r)
			switch {
			case locked && (ran || rerr != nil):
				t.Fatalf("an eviction ran inside the Put (%v) and its blob reads %v", ran, rerr)
			case !locked && blob.CodeOf(rerr) != blob.CodeNotFound:
				t.Fatalf("control: an unlocked eviction inside the Put left its blob readable: %v", rerr)
			}
		})
	}
}

// BenchmarkEvictionScan counts a store of n blobs as an eviction does
// (leases, then every shard), removing nothing: the cost a write pays
// once every MaxBytes/8 of writes when the store is full.
func BenchmarkEvictionScan(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("blobs=%d", n), func(b *testing.B) {
			root := filepath.Join(b.TempDir(), "blobs")
			for i := range n {
				data := sized(16, uint64(i))
				r := blob.Sum(data)
				p := filepath.Join(root, string(r[:2]), string(r))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(p, data, blob.BlobModeForTest); err != nil {
					b.Fatal(err)
				}
			}
			s := session(b, root, blob.Options{MaxBytes: 1 << 40}, nil)
			for b.Loop() {
				if err := blob.EvictForTest(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
