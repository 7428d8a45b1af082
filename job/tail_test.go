package job_test

import (
	"bytes"
	"fmt"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/job"
)

// tailModelCapacities are the window sizes the state-machine test runs
// at: below, at and well above a few multi-byte characters.
var tailModelCapacities = []int{8, 11, 24}

// tailModel drives one Tail against the whole stream it was pushed.
type tailModel struct {
	tail     *job.Tail
	capacity int
	utf8Only bool    // the stream is valid UTF-8 up to pending
	stream   []byte  // everything pushed, in order
	pending  []byte  // utf8Only: the rest of a generated string not yet pushed
	cursors  []int64 // every cursor the Tail has answered, and 0
	ended    bool
	seen     *tailSeen // which interesting states the generator reached
}

// tailSeen counts states the rules are about, so the test can assert the
// generator reaches them.
type tailSeen struct {
	dropped, held, frontSkip, forged, ended int
}

func (m *tailModel) push(t *rapid.T) {
	var chunk []byte
	if m.utf8Only {
		m.pending = append(m.pending, rapid.String().Draw(t, "text")...)
		n := rapid.IntRange(0, len(m.pending)).Draw(t, "prefix")
		chunk = append([]byte(nil), m.pending[:n]...)
		m.pending = m.pending[n:]
	} else {
		chunk = rapid.SliceOfN(rapid.Byte(), 0, 3*m.capacity).Draw(t, "bytes")
	}
	m.tail.Push(chunk)
	if !m.ended {
		m.stream = append(m.stream, chunk...)
	}
	m.checkBounded(t)
}

func (m *tailModel) end(t *rapid.T) {
	if m.utf8Only && len(m.pending) > 0 {
		m.tail.Push(m.pending)
		if !m.ended {
			m.stream = append(m.stream, m.pending...)
		}
		m.pending = nil
	}
	m.tail.End()
	m.ended = true
	m.seen.ended++
	m.checkBounded(t)
}

func (m *tailModel) forged(t *rapid.T) {
	c := rapid.OneOf(rapid.Int64Range(-1<<40, -1), rapid.Int64Range(int64(len(m.stream))+1, 1<<40)).Draw(t, "forged")
	if got, ok := m.tail.Since(c); ok {
		t.Fatalf("Since(%d) past a %d-byte stream answered %+v", c, len(m.stream), got)
	}
	m.seen.forged++
}

func (m *tailModel) since(t *rapid.T) {
	cursor := rapid.SampledFrom(m.cursors).Draw(t, "cursor")
	front := m.tail.Front()
	got, ok := m.tail.Since(cursor)
	if !ok {
		t.Fatalf("Since(%d) refused a cursor the Tail answered (received %d)", cursor, len(m.stream))
	}
	received := int64(len(m.stream))
	// received: the Tail counts every byte pushed before End.
	if m.tail.Received() != received {
		t.Fatalf("Received() = %d, model %d", m.tail.Received(), received)
	}
	// cursor: monotone and within the stream.
	if got.Next < cursor || got.Next > received {
		t.Fatalf("Since(%d).Next = %d outside [%d, %d]", cursor, got.Next, cursor, received)
	}
	// span: dropped plus returned bytes reach exactly Next, and the bytes
	// are the stream's own.
	start := got.Next - int64(len(got.Bytes))
	if cursor+got.Dropped != start {
		t.Fatalf("Since(%d): dropped %d + %d bytes != next %d", cursor, got.Dropped, len(got.Bytes), got.Next)
	}
	if !bytes.Equal(got.Bytes, m.stream[start:got.Next]) {
		t.Fatalf("Since(%d) = %q, stream[%d:%d] = %q", cursor, got.Bytes, start, got.Next, m.stream[start:got.Next])
	}
	// bounded.
	if len(got.Bytes) > m.capacity {
		t.Fatalf("Since(%d) returned %d bytes over capacity %d", cursor, len(got.Bytes), m.capacity)
	}
	// front: a cursor inside the window loses nothing; one behind it
	// loses the gap plus at most the rest of one cut character.
	wantStart := cursor
	if cursor < front {
		wantStart = front
		for k := 0; k < utf8.UTFMax-1 && wantStart < received && !utf8.RuneStart(m.stream[wantStart]); k++ {
			wantStart++
		}
		if wantStart > front {
			m.seen.frontSkip++
		}
	}
	if start != wantStart {
		t.Fatalf("Since(%d) starts at %d, want %d (front %d)", cursor, start, wantStart, front)
	}
	if got.Dropped > 0 {
		m.seen.dropped++
	}
	// boundary: exactly an incomplete final character is held back.
	held := received - got.Next
	if want := modelHeld(m.stream, start, m.ended); held != want {
		t.Fatalf("Since(%d) held back %d bytes of %q, want %d", cursor, held, m.stream[max(0, received-4):], want)
	}
	if held > 0 {
		m.seen.held++
	}
	// decodes: a valid stream yields valid text.
	if m.utf8Only && !utf8.Valid(got.Bytes) {
		t.Fatalf("Since(%d) = %q is not UTF-8 though the stream is", cursor, got.Bytes)
	}
	m.cursors = append(m.cursors, got.Next)
}

// modelHeld is the length of the stream's final character when it lies at
// or after start and is a valid beginning still missing bytes; 0 after
// End. It is written apart from Tail's scan: try each suffix length.
func modelHeld(stream []byte, start int64, ended bool) int64 {
	if ended {
		return 0
	}
	for k := int64(1); k < utf8.UTFMax && int64(len(stream))-k >= start; k++ {
		s := stream[int64(len(stream))-k:]
		if utf8.RuneStart(s[0]) {
			if utf8.FullRune(s) {
				return 0
			}
			return k
		}
	}
	return 0
}

func (m *tailModel) checkBounded(t *rapid.T) {
	if m.tail.Retained() > m.capacity || m.tail.Cap() != m.capacity {
		t.Fatalf("retained %d, cap %d, want at most %d", m.tail.Retained(), m.tail.Cap(), m.capacity)
	}
	if m.tail.Received() != int64(len(m.stream)) {
		t.Fatalf("Received() = %d, model %d", m.tail.Received(), len(m.stream))
	}
}

func TestTailModel(t *testing.T) {
	for _, capacity := range tailModelCapacities {
		for _, utf8Only := range []bool{true, false} {
			t.Run(fmt.Sprintf("cap%d/utf8=%v", capacity, utf8Only), func(t *testing.T) {
				seen := &tailSeen{}
				for range rapidRounds(t) {
					rapid.Check(t, func(rt *rapid.T) {
						m := &tailModel{tail: job.NewTail(capacity), capacity: capacity, utf8Only: utf8Only, cursors: []int64{0}, seen: seen}
						rt.Repeat(map[string]func(*rapid.T){
							"push":   m.push,
							"since":  m.since,
							"forged": m.forged,
							"end": func(t *rapid.T) {
								if rapid.IntRange(0, 9).Draw(t, "rarely") == 0 {
									m.end(t)
								}
							},
						})
					})
				}
				if seen.dropped == 0 || seen.forged == 0 || seen.ended == 0 {
					t.Errorf("generator did not reach every state: %+v", *seen)
				}
				if seen.held == 0 {
					t.Errorf("no answer held back an incomplete character: %+v", *seen)
				}
				if utf8Only && seen.frontSkip == 0 {
					t.Errorf("no window front cut a character: %+v", *seen)
				}
			})
		}
	}
}

func TestTailBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int
		pushes   []string
		cursor   int64
		want     string
		next     int64
		dropped  int64
	}{
		{"capacity below minimum is raised", 1, []string{"abcdef"}, 0, "cdef", 6, 2},
		{"exactly capacity retained", 8, []string{"abcdefgh"}, 0, "abcdefgh", 8, 0},
		{"one past capacity drops one", 8, []string{"abcdefghi"}, 0, "bcdefghi", 9, 1},
		{"chunk larger than capacity", 8, []string{"ab", "0123456789"}, 2, "23456789", 12, 2},
		{"cursor at received", 8, []string{"abc"}, 3, "", 3, 0},
		{"wrap around the ring", 8, []string{"abcdef", "ghij"}, 4, "efghij", 10, 0},
		{"incomplete euro held", 8, []string{"a\xe2\x82"}, 0, "a", 1, 0},
		{"completed euro released", 8, []string{"a\xe2\x82", "\xac"}, 1, "€", 4, 0},
		{"binary lead with bad continuation passes", 8, []string{"a\xe2A"}, 0, "a\xe2A", 3, 0},
		{"stray continuation passes", 8, []string{"a\x82"}, 0, "a\x82", 2, 0},
		{"front cut skips continuation bytes", 4, []string{"€xy"}, 0, "xy", 5, 3},
		{"front on a character start keeps it", 5, []string{"x€yz"}, 0, "€yz", 6, 1},
		{"lone lead byte held", 8, []string{"a\xe2"}, 0, "a", 1, 0},
		{"lead with impossible continuation passes", 8, []string{"a\xe0\x80"}, 0, "a\xe0\x80", 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := job.NewTail(tc.capacity)
			for _, p := range tc.pushes {
				tl.Push([]byte(p))
			}
			got, ok := tl.Since(tc.cursor)
			if !ok || string(got.Bytes) != tc.want || got.Next != tc.next || got.Dropped != tc.dropped {
				t.Fatalf("Since(%d) = %q next %d dropped %d ok %v; want %q next %d dropped %d",
					tc.cursor, got.Bytes, got.Next, got.Dropped, ok, tc.want, tc.next, tc.dropped)
			}
		})
	}
}

func TestTailEndReleasesIncompleteCharacter(t *testing.T) {
	tl := job.NewTail(8)
	tl.Push([]byte("ok\xe2\x82"))
	first, _ := tl.Since(0)
	tl.End()
	tl.Push([]byte("ignored"))
	rest, _ := tl.Since(first.Next)
	if string(first.Bytes) != "ok" || string(rest.Bytes) != "\xe2\x82" || rest.Next != 4 || tl.Received() != 4 {
		t.Fatalf("before End %q, after %q next %d received %d", first.Bytes, rest.Bytes, rest.Next, tl.Received())
	}
}

func TestTailRefusesCursorsItNeverMinted(t *testing.T) {
	tl := job.NewTail(8)
	tl.Push([]byte("abc"))
	for _, c := range []int64{-1, 4, 1 << 62} {
		if got, ok := tl.Since(c); ok {
			t.Errorf("Since(%d) = %+v, want refusal", c, got)
		}
	}
}

// BenchmarkTailPush measures Push throughput for 4 KiB chunks into a
// 64 KiB window (MB/s is the figure of merit).
func BenchmarkTailPush(b *testing.B) {
	tl := job.NewTail(64 << 10)
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 256)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		tl.Push(chunk)
	}
}

// BenchmarkTailSince measures answering a poll of a full 64 KiB window.
func BenchmarkTailSince(b *testing.B) {
	tl := job.NewTail(64 << 10)
	chunk := bytes.Repeat([]byte("0123456789abcde\n"), 256)
	for range 20 {
		tl.Push(chunk)
	}
	b.SetBytes(64 << 10)
	b.ReportAllocs()
	for b.Loop() {
		tl.Since(0)
	}
}

func ExampleTail() {
	t := job.NewTail(8)
	t.Push([]byte("hello, "))
	first, _ := t.Since(0)
	fmt.Printf("%q next=%d\n", first.Bytes, first.Next)

	t.Push([]byte("wor\xe2\x82")) // the euro sign's last byte has not arrived
	second, _ := t.Since(first.Next)
	fmt.Printf("%q next=%d dropped=%d\n", second.Bytes, second.Next, second.Dropped)

	t.Push([]byte("\xac!"))
	third, _ := t.Since(second.Next)
	fmt.Printf("%q next=%d\n", third.Bytes, third.Next)
	// Output:
	// "hello, " next=7
	// "wor" next=10 dropped=0
	// "€!" next=14
}
