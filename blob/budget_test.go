package blob_test

import (
	"encoding/binary"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
)

// sized returns n bytes, distinct for each seed (when n >= 8).
func sized(n int, seed uint64) []byte {
	b := patterned(n)
	if n >= 8 {
		binary.LittleEndian.PutUint64(b, seed)
	} else if n > 0 {
		b[0] = byte(seed)
	}
	return b
}

// openWith opens a store with opts in a fresh temporary directory.
func openWith(t testing.TB, opts blob.Options) *blob.Store {
	t.Helper()
	s, err := blob.OpenWith(filepath.Join(t.TempDir(), "blobs"), opts)
	if err != nil {
		t.Fatalf("OpenWith: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSessionBudgetPut: a session may hold exactly its budget of blobs it
// stored, each charged in whole blocks and counted once; the next byte
// past it is refused with CodeSpillBudget and stores nothing.
func TestSessionBudgetPut(t *testing.T) {
	const blk = int(blob.BlockBytes)
	tests := []struct {
		name   string
		budget int64
		puts   []int // sizes; -(i+1) puts the bytes of put i again
		refuse int   // index of the first put refused, or -1
	}{
		{"one blob at the bound", 4 * blob.BlockBytes, []int{4 * blk}, -1},
		{"one blob a byte past", 4 * blob.BlockBytes, []int{4*blk + 1}, 0},
		{"two blobs at the bound", 4 * blob.BlockBytes, []int{2 * blk, 2 * blk}, -1},
		{"two blobs a byte past", 4 * blob.BlockBytes, []int{2 * blk, 2*blk + 1}, 1},
		{"charged in whole blocks", 4 * blob.BlockBytes, []int{1, 1, 1, 1, 1}, 4},
		{"the same blob counts once", 4 * blob.BlockBytes, []int{4 * blk, -1, -1}, -1},
		{"an empty blob is free", blob.BlockBytes, []int{blk, 0}, -1},
		{"a refusal is not charged", 4 * blob.BlockBytes, []int{3 * blk, 2 * blk, blk}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openWith(t, blob.Options{SessionBytes: tt.budget})
			var data [][]byte
			refused := -1
			for i, n := range tt.puts {
				var d []byte
				if n < 0 {
					d = data[-n-1]
				} else {
					d = sized(n, uint64(i)+1)
				}
				data = append(data, d)
				r, err := s.Put(d)
				if err != nil {
					wantCode(t, err, blob.CodeSpillBudget)
					if refused < 0 {
						refused = i
					}
					if _, rerr := s.Read(blob.Sum(d)); blob.CodeOf(rerr) != blob.CodeNotFound {
						t.Fatalf("put %d was refused but its blob is readable: %v", i, rerr)
					}
					continue
				}
				if r != blob.Sum(d) {
					t.Fatalf("put %d = %s", i, r)
				}
			}
			if refused != tt.refuse {
				t.Fatalf("first refusal at put %d, want %d", refused, tt.refuse)
			}
			if left := staged(t, s.Root()); len(left) != 0 {
				t.Fatalf("staged files left: %v", left)
			}
		})
	}
}

// TestSessionBudgetReadsAreFree: what a session only reads is held but
// not charged; a blob another session stored and this one then stores
// again is charged to this one too, since it now pins it.
func TestSessionBudgetReadsAreFree(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	opts := blob.Options{SessionBytes: 2 * blob.BlockBytes}
	a, err := blob.OpenWith(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := blob.OpenWith(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	x, y := sized(int(2*blob.BlockBytes), 1), sized(int(2*blob.BlockBytes), 2)
	rx, err := a.Put(x)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(rx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(y); err != nil {
		t.Fatalf("a read was charged: %v", err)
	}
	_, err = b.Put(x)
	wantCode(t, err, blob.CodeSpillBudget)
}

// TestSpillBudgetBoundAndSpool: a spill within the session's budget is
// kept; one a byte past it is refused in band: the caller gets the
// CodeSpillBudget error and an Overflow with both excerpts whose Text
// says the output was not kept and why, nothing is stored or left
// staged, and a later spill that fits is kept.
func TestSpillBudgetBoundAndSpool(t *testing.T) {
	const budget = 20 * blob.BlockBytes // 80 KiB: above the inline threshold
	tests := []struct {
		name string
		size int
		kept bool
	}{
		{"at the bound", int(budget), true},
		{"a byte past", int(budget) + 1, false},
		{"far past", 4 * int(budget), false},
	}
	spill := map[string]func(*blob.Store, []byte) (string, *blob.Overflow, error){
		"Bound": (*blob.Store).Bound,
		"Spool": func(s *blob.Store, data []byte) (string, *blob.Overflow, error) {
			sp := s.NewSpool()
			defer sp.Abort()
			for c := range slices.Chunk(data, 4096) {
				if n, err := sp.Write(c); err != nil || n != len(c) {
					return "", nil, err
				}
			}
			return sp.Finish()
		},
	}
	for _, how := range []string{"Bound", "Spool"} {
		for _, tt := range tests {
			t.Run(how+"/"+tt.name, func(t *testing.T) {
				s := openWith(t, blob.Options{SessionBytes: budget})
				data := sized(tt.size, 7)
				inline, o, err := spill[how](s, data)
				if inline != "" || o == nil {
					t.Fatalf("inline %d bytes, overflow %v, err %v", len(inline), o, err)
				}
				head, tail := blob.Excerpts(data, blob.ExcerptBytes)
				if o.HeadExcerpt != head || o.TailExcerpt != tail || o.Size != int64(len(data)) {
					t.Fatalf("excerpts or size wrong: size %d", o.Size)
				}
				if tt.kept {
					if err != nil || o.NotKept != "" || o.Ref != blob.Sum(data) {
						t.Fatalf("not kept: %v %+v", err, o.NotKept)
					}
					return
				}
				wantCode(t, err, blob.CodeSpillBudget)
				if o.Ref != "" || o.Path != "" || o.NotKept == "" {
					t.Fatalf("refused spill names a blob: ref %q path %q not_kept %q", o.Ref, o.Path, o.NotKept)
				}
				text := o.Text("output")
				for _, want := range []string{head, tail, "was not kept", "budget"} {
					if !strings.Contains(text, want) {
						t.Fatalf("Text lacks %.40q:\n%.600s", want, text)
					}
				}
				if got := files(t, s.Root()); len(got) != 0 {
					t.Fatalf("a refused spill left files: %v", got)
				}
				// The refusal returned its reservation: a spill that
				// fits is kept.
				if _, o, err := spill[how](s, sized(int(budget), 8)); err != nil || o.NotKept != "" {
					t.Fatalf("a spill within the budget after a refusal: %v", err)
				}
			})
		}
	}
}

// TestSpoolRefusedStaysBounded: a Spool whose spill was refused keeps
// only its excerpt windows however much more is written.
func TestSpoolRefusedStaysBounded(t *testing.T) {
	s := openWith(t, blob.Options{SessionBytes: 20 * blob.BlockBytes})
	sp := s.NewSpool()
	defer sp.Abort()
	chunk := patterned(32 << 10)
	for range 64 {
		if _, err := sp.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if n := blob.SpoolRetainedForTest(sp); n > 3*blob.ExcerptBytes+2*8 {
		t.Fatalf("a refused Spool retains %d bytes", n)
	}
	_, o, err := sp.Finish()
	wantCode(t, err, blob.CodeSpillBudget)
	if o == nil || o.Size != 64*int64(len(chunk)) {
		t.Fatalf("overflow %+v", o)
	}
}

// TestOptionsDefaults: zero and negative options mean the defaults, and
// a session's budget never exceeds the store's.
func TestOptionsDefaults(t *testing.T) {
	for _, tt := range []struct {
		opts          blob.Options
		max, sessions int64
	}{
		{blob.Options{}, blob.DefaultMaxBytes, blob.DefaultSessionBytes},
		{blob.Options{MaxBytes: -1, SessionBytes: -1}, blob.DefaultMaxBytes, blob.DefaultSessionBytes},
		{blob.Options{MaxBytes: 1 << 20}, 1 << 20, 1 << 20},
		{blob.Options{MaxBytes: 1 << 20, SessionBytes: 1 << 10}, 1 << 20, 1 << 10},
	} {
		s := openWith(t, tt.opts)
		if got := blob.OptionsForTest(s); got.MaxBytes != tt.max || got.SessionBytes != tt.sessions {
			t.Errorf("%+v: in effect %+v, want %d and %d", tt.opts, got, tt.max, tt.sessions)
		}
	}
}
