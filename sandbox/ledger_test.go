package sandbox

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func TestLedgerCapAtBoundAndOnePast(t *testing.T) {
	for _, limit := range []int{-1, 0, 1, 2, 4} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			l := NewLedger(nil)
			key := StepKey{"op", "s"}
			eff := limit
			if eff <= 0 {
				eff = DefaultMaxOutstanding
			}
			var tickets []*Ticket
			for i := 0; i < eff; i++ {
				tk, d := l.Admit(key, Budget{MaxOutstanding: limit}, nil)
				if d != nil {
					t.Fatalf("admission %d of %d refused: %v", i+1, eff, d)
				}
				tickets = append(tickets, tk)
			}
			if _, d := l.Admit(key, Budget{MaxOutstanding: limit}, nil); denialCode(d) != DenialOutstandingCapReached {
				t.Fatalf("admission one past the cap = %v, want %s", d, DenialOutstandingCapReached)
			}
			if got := l.Outstanding(key); got != eff {
				t.Fatalf("Outstanding = %d, want %d", got, eff)
			}
			// Another step is a separate pool.
			if _, d := l.Admit(StepKey{"op", "other"}, Budget{MaxOutstanding: limit}, nil); d != nil {
				t.Fatalf("sibling step refused: %v", d)
			}
			l.Release(tickets[0])
			l.Release(tickets[0]) // idempotent
			if got := l.Outstanding(key); got != eff-1 {
				t.Fatalf("Outstanding after double release = %d, want %d", got, eff-1)
			}
			if _, d := l.Admit(key, Budget{MaxOutstanding: limit}, nil); d != nil {
				t.Fatalf("admission after release refused: %v", d)
			}
		})
	}
}

func TestLedgerWallDeadlineFixedAtFirstAdmission(t *testing.T) {
	c := newClock()
	l := NewLedger(c.now)
	key := StepKey{"op", "s"}
	t1, d := l.Admit(key, Budget{MaxOutstanding: 3, Wall: 10 * time.Second}, nil)
	if d != nil {
		t.Fatal(d)
	}
	want := c.now().Add(10 * time.Second)
	if !t1.Deadline().Equal(want) {
		t.Fatalf("Deadline = %v, want %v", t1.Deadline(), want)
	}
	c.advance(9 * time.Second)
	t2, d := l.Admit(key, Budget{MaxOutstanding: 3, Wall: time.Hour}, nil)
	if d != nil {
		t.Fatal(d)
	}
	if !t2.Deadline().Equal(want) {
		t.Fatalf("second admission moved the deadline to %v", t2.Deadline())
	}
	c.advance(time.Second) // exactly at the deadline
	if _, d := l.Admit(key, Budget{MaxOutstanding: 3}, nil); denialCode(d) != DenialBudgetExpired {
		t.Fatalf("admission at the deadline = %v, want %s", d, DenialBudgetExpired)
	}
	if tk, d := l.Admit(StepKey{"op", "s2"}, Budget{}, nil); d != nil || !tk.Deadline().IsZero() {
		t.Fatalf("step without wall: ticket %v denial %v, want no deadline", tk, d)
	}
}

func TestLedgerCancelAndAbort(t *testing.T) {
	l := NewLedger(nil)
	var runs [4]atomic.Int32
	key := StepKey{"op", "s"}
	job := StepKey{"op", "job/7"}
	other := StepKey{"op2", "s"}
	t0, _ := l.Admit(key, Budget{MaxOutstanding: 3}, func() { runs[0].Add(1) })
	t1, _ := l.Admit(key, Budget{MaxOutstanding: 3}, func() { runs[1].Add(1) })
	t2, _ := l.Admit(job, Budget{}, func() { runs[2].Add(1) })
	t3, _ := l.Admit(other, Budget{}, func() { runs[3].Add(1) })

	l.Cancel(t0)
	l.Cancel(t0)
	if runs[0].Load() != 1 {
		t.Fatalf("cancel ran %d times, want 1", runs[0].Load())
	}
	if l.Outstanding(key) != 2 {
		t.Fatal("a cancelled ticket must stay outstanding until released")
	}
	if n := l.AbortStep(key); n != 1 {
		t.Fatalf("AbortStep cancelled %d, want 1 (t0 was already cancelled)", n)
	}
	if runs[0].Load() != 1 || runs[1].Load() != 1 {
		t.Fatalf("cancel counts %d %d, want 1 1", runs[0].Load(), runs[1].Load())
	}
	if _, d := l.Admit(key, Budget{MaxOutstanding: 9}, nil); !errors.Is(d, &Denial{Code: DenialStepAborted}) {
		t.Fatalf("admission after AbortStep = %v", d)
	}
	if n := l.AbortOperation("op"); n != 1 || runs[2].Load() != 1 {
		t.Fatalf("AbortOperation cancelled %d (job cancel ran %d), want 1", n, runs[2].Load())
	}
	if _, d := l.Admit(StepKey{"op", "never-seen"}, Budget{}, nil); denialCode(d) != DenialStepAborted {
		t.Fatalf("admission into an aborted operation's new step = %v", d)
	}
	if runs[3].Load() != 0 {
		t.Fatal("another operation's ticket was cancelled")
	}
	l.Release(t3)
	l.Cancel(t3)
	if runs[3].Load() != 0 {
		t.Fatal("cancel ran after release")
	}
	for _, tk := range []*Ticket{t0, t1, t2} {
		l.Release(tk)
	}
	if n := l.Forget("op"); n != 0 {
		t.Fatalf("Forget cancelled %d, want 0", n)
	}
	if _, d := l.Admit(key, Budget{}, nil); d != nil {
		t.Fatalf("admission after Forget = %v", d)
	}
	l.Release(nil)
	l.Cancel(nil)
}

func TestLedgerCancelFuncMayReenter(t *testing.T) {
	l := NewLedger(nil)
	key := StepKey{"op", "s"}
	var tk *Ticket
	tk, _ = l.Admit(key, Budget{}, func() { l.Release(tk) })
	if n := l.AbortStep(key); n != 1 {
		t.Fatalf("AbortStep = %d", n)
	}
	if l.Outstanding(key) != 0 {
		t.Fatal("re-entrant release from a cancel func did not take effect")
	}
}

// ledgerModel is the reference the state machine checks against.
type modelTicket struct {
	key       StepKey
	t         *Ticket
	released  bool
	cancelled bool
	runs      *atomic.Int32
}

type ledgerMachine struct {
	clock     *fakeClock
	l         *Ledger
	tickets   []*modelTicket
	deadline  map[StepKey]time.Time
	seen      map[StepKey]bool
	abortStep map[StepKey]bool
	abortOp   map[string]bool
}

var machineKeys = []StepKey{{"op1", "s1"}, {"op1", "s2"}, {"op1", "job/1"}, {"op2", "s1"}}

func (m *ledgerMachine) outstanding(k StepKey) int {
	n := 0
	for _, t := range m.tickets {
		if t.key == k && !t.released {
			n++
		}
	}
	return n
}

func (m *ledgerMachine) admit(t *rapid.T) {
	key := rapid.SampledFrom(machineKeys).Draw(t, "key")
	b := Budget{
		MaxOutstanding: rapid.IntRange(-1, 3).Draw(t, "max"),
		Wall:           rapid.SampledFrom([]time.Duration{0, 10 * time.Second}).Draw(t, "wall"),
	}
	runs := &atomic.Int32{}
	tk, d := m.l.Admit(key, b, func() { runs.Add(1) })

	var want DenialCode
	limit := b.MaxOutstanding
	if limit <= 0 {
		limit = DefaultMaxOutstanding
	}
	now := m.clock.now()
	switch {
	case m.abortOp[key.OpID] || m.abortStep[key]:
		want = DenialStepAborted
	default:
		if !m.seen[key] {
			m.seen[key] = true
			if b.Wall > 0 {
				m.deadline[key] = now.Add(b.Wall)
			}
		}
		if dl, ok := m.deadline[key]; ok && !now.Before(dl) {
			want = DenialBudgetExpired
		} else if m.outstanding(key) >= limit {
			want = DenialOutstandingCapReached
		}
	}
	if want == "" {
		if d != nil {
			t.Fatalf("Admit(%v, %+v) = %v, want a ticket", key, b, d)
		}
		if dl := m.deadline[key]; !tk.Deadline().Equal(dl) {
			t.Fatalf("ticket deadline %v, model %v", tk.Deadline(), dl)
		}
		m.tickets = append(m.tickets, &modelTicket{key: key, t: tk, runs: runs})
		return
	}
	if denialCode(d) != want {
		t.Fatalf("Admit(%v, %+v) = %v, want %s", key, b, d, want)
	}
}

func (m *ledgerMachine) pick(t *rapid.T) *modelTicket {
	if len(m.tickets) == 0 {
		t.Skip("no tickets")
	}
	return m.tickets[rapid.IntRange(0, len(m.tickets)-1).Draw(t, "ticket")]
}

func (m *ledgerMachine) release(t *rapid.T) {
	mt := m.pick(t)
	m.l.Release(mt.t)
	mt.released = true
}

func (m *ledgerMachine) cancel(t *rapid.T) {
	mt := m.pick(t)
	m.l.Cancel(mt.t)
	if !mt.released {
		mt.cancelled = true
	}
}

func (m *ledgerMachine) cancelLive(pred func(*modelTicket) bool) int {
	n := 0
	for _, mt := range m.tickets {
		if pred(mt) && !mt.released && !mt.cancelled {
			mt.cancelled = true
			n++
		}
	}
	return n
}

func (m *ledgerMachine) abortStepAction(t *rapid.T) {
	key := rapid.SampledFrom(machineKeys).Draw(t, "key")
	want := m.cancelLive(func(mt *modelTicket) bool { return mt.key == key })
	m.abortStep[key] = true
	if got := m.l.AbortStep(key); got != want {
		t.Fatalf("AbortStep(%v) = %d, want %d", key, got, want)
	}
}

func (m *ledgerMachine) abortOperation(t *rapid.T) {
	op := rapid.SampledFrom([]string{"op1", "op2"}).Draw(t, "op")
	want := m.cancelLive(func(mt *modelTicket) bool { return mt.key.OpID == op })
	m.abortOp[op] = true
	if got := m.l.AbortOperation(op); got != want {
		t.Fatalf("AbortOperation(%s) = %d, want %d", op, got, want)
	}
}

func (m *ledgerMachine) tick(t *rapid.T) {
	m.clock.advance(time.Duration(rapid.IntRange(0, 6).Draw(t, "secs")) * time.Second)
}

func (m *ledgerMachine) check(t *rapid.T) {
	for _, k := range machineKeys {
		if got, want := m.l.Outstanding(k), m.outstanding(k); got != want {
			t.Fatalf("Outstanding(%v) = %d, model %d", k, got, want)
		}
	}
	for i, mt := range m.tickets {
		want := int32(0)
		if mt.cancelled {
			want = 1
		}
		if got := mt.runs.Load(); got != want {
			t.Fatalf("ticket %d cancel func ran %d times, want %d", i, got, want)
		}
	}
}

func TestLedgerStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := newClock()
		m := &ledgerMachine{
			clock: c, l: NewLedger(c.now),
			deadline: map[StepKey]time.Time{}, seen: map[StepKey]bool{},
			abortStep: map[StepKey]bool{}, abortOp: map[string]bool{},
		}
		t.Repeat(map[string]func(*rapid.T){
			"admit":          m.admit,
			"release":        m.release,
			"cancel":         m.cancel,
			"abortStep":      m.abortStepAction,
			"abortOperation": m.abortOperation,
			"tick":           m.tick,
			"":               m.check,
		})
	})
}

func TestLedgerConcurrent(t *testing.T) {
	const (
		goroutines = 32
		rounds     = 200
		limit      = 4
	)
	l := NewLedger(nil)
	keys := []StepKey{{"op", "a"}, {"op", "b"}, {"op2", "a"}}
	var inFlight [3]atomic.Int32
	var cancelRuns atomic.Int32
	var cancelled atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				ki := (g + r) % len(keys)
				var once atomic.Int32
				tk, d := l.Admit(keys[ki], Budget{MaxOutstanding: limit}, func() {
					if once.Add(1) > 1 {
						t.Error("cancel func ran twice")
					}
					cancelRuns.Add(1)
				})
				if d != nil {
					if c := denialCode(d); c != DenialOutstandingCapReached && c != DenialStepAborted {
						t.Errorf("unexpected denial %v", d)
					}
					continue
				}
				if n := inFlight[ki].Add(1); n > limit {
					t.Errorf("%d in flight in %v, cap %d", n, keys[ki], limit)
				}
				if r%7 == 0 {
					l.Cancel(tk)
				}
				if r%50 == 0 && g == 0 {
					cancelled.Add(int32(l.AbortStep(StepKey{"op2", "a"})))
				}
				inFlight[ki].Add(-1)
				l.Release(tk)
			}
		}()
	}
	wg.Wait()
	for _, k := range keys {
		if n := l.Outstanding(k); n != 0 {
			t.Fatalf("Outstanding(%v) = %d after everything released", k, n)
		}
	}
	if cancelRuns.Load() == 0 {
		t.Fatal("no cancel func ran")
	}
}

// TestZeroLedger: a jail's zero Ledger admits, aborts and forgets as
// NewLedger(nil)'s does, and never panics on its empty maps.
func TestZeroLedger(t *testing.T) {
	var l Ledger
	k := StepKey{OpID: "op", StepID: "s"}
	if n := l.Outstanding(k); n != 0 {
		t.Fatalf("Outstanding = %d", n)
	}
	tk, err := l.Admit(k, Budget{Wall: time.Hour}, nil)
	if err != nil || l.Outstanding(k) != 1 {
		t.Fatalf("Admit: %v, outstanding %d", err, l.Outstanding(k))
	}
	if tk.Deadline().IsZero() {
		t.Error("a Wall budget gave no deadline")
	}
	if n := l.AbortStep(k); n != 1 {
		t.Errorf("AbortStep cancelled %d", n)
	}
	l.Release(tk)
	var z Ledger
	z.AbortOperation("op")
	if _, err := z.Admit(k, Budget{}, nil); DenialOf(err) == nil || DenialOf(err).Code != DenialStepAborted {
		t.Errorf("Admit after AbortOperation: %v", err)
	}
	z.Forget("op")
	var f Ledger
	f.Forget("op")
	f.AbortStep(k)
}
