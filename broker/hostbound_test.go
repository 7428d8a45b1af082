package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/sandbox"
)

// admitted reports whether w has been admitted (without waiting).
func admitted(w *hostWaiter) bool {
	select {
	case <-w.ready:
		return true
	default:
		return false
	}
}

// hostBoundModel is the admission the state machine holds hostBound to:
// a FIFO queue, granted from its head while the head fits.
type hostBoundModel struct {
	maxLive int
	budget  int64
	live    int
	scratch int64
	queue   []int // indexes into requests, in arrival order
}

type hostRequest struct {
	w       *hostWaiter
	scratch int64
	state   string // "waiting", "held", "released", "abandoned"
}

func (m *hostBoundModel) fits(s int64) bool { return m.live < m.maxLive && m.scratch+s <= m.budget }

func (m *hostBoundModel) grant(reqs []*hostRequest) {
	for len(m.queue) > 0 && m.fits(reqs[m.queue[0]].scratch) {
		r := reqs[m.queue[0]]
		m.queue = m.queue[1:]
		m.live++
		m.scratch += r.scratch
		r.state = "held"
	}
}

// TestHostBoundStateMachine drives the admission with random requests,
// releases (twice, sometimes), withdrawals and warm-helper tries, and
// checks after every step that it admitted exactly whom a FIFO model
// admits: never more than maxLive live or budget bytes reserved, nobody
// passed by a later request, a freed slot going to the oldest waiter
// that fits.
func TestHostBoundStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := &hostBoundModel{
			maxLive: rapid.IntRange(1, 4).Draw(rt, "maxLive"),
			budget:  rapid.Int64Range(1, 8).Draw(rt, "budget"),
		}
		h := newHostBound(m.maxLive, m.budget)
		waits := 0
		h.onWait = func() { waits++ }
		var reqs []*hostRequest
		pick := func(state, label string) *hostRequest {
			var idx []int
			for i, r := range reqs {
				if r.state == state {
					idx = append(idx, i)
				}
			}
			if len(idx) == 0 {
				rt.Skip("no request " + state)
			}
			return reqs[idx[rapid.IntRange(0, len(idx)-1).Draw(rt, label)]]
		}
		rt.Repeat(map[string]func(*rapid.T){
			"enqueue": func(rt *rapid.T) {
				s := rapid.Int64Range(0, m.budget+2).Draw(rt, "scratch")
				before := waits
				w, wait := h.enqueue(s)
				r := &hostRequest{w: w, scratch: min(s, m.budget), state: "waiting"}
				reqs = append(reqs, r)
				if len(m.queue) == 0 && m.fits(r.scratch) {
					m.live++
					m.scratch += r.scratch
					r.state = "held"
				} else {
					m.queue = append(m.queue, len(reqs)-1)
				}
				if wait != (r.state == "waiting") || (waits > before) != wait {
					rt.Fatalf("enqueue: waits=%v, onWait calls %d->%d, model state %s", wait, before, waits, r.state)
				}
			},
			"release": func(rt *rapid.T) {
				r := pick("held", "held")
				r.w.lease.release()
				r.state = "released"
				m.live--
				m.scratch -= r.scratch
				m.grant(reqs)
			},
			"releaseAgain": func(rt *rapid.T) {
				pick("released", "released").w.lease.release() // no effect
			},
			"abandon": func(rt *rapid.T) {
				r := pick("waiting", "waiting")
				if l := h.abandon(r.w); l != nil {
					rt.Fatalf("abandoning a waiter returned a lease")
				}
				r.state = "abandoned"
				for i, q := range m.queue {
					if reqs[q] == r {
						m.queue = append(m.queue[:i], m.queue[i+1:]...)
						break
					}
				}
				m.grant(reqs)
			},
			"abandonHeld": func(rt *rapid.T) {
				r := pick("held", "held")
				if l := h.abandon(r.w); l != r.w.lease {
					rt.Fatalf("abandoning an admitted request did not hand back its lease")
				}
			},
			"tryAcquire": func(rt *rapid.T) {
				s := rapid.Int64Range(0, 2).Draw(rt, "scratch")
				l := h.tryAcquire(s)
				want := len(m.queue) == 0 && m.fits(s)
				if (l != nil) != want {
					rt.Fatalf("tryAcquire(%d) = %v, want admitted %v (queue %d, live %d/%d)", s, l != nil, want, len(m.queue), m.live, m.maxLive)
				}
				if l != nil {
					l.release() // a warm helper started and was handed its command at once
				}
			},
			"": func(rt *rapid.T) {
				h.mu.Lock()
				live, scratch, queued := h.live, h.scratch, len(h.queue)
				h.mu.Unlock()
				if live != m.live || scratch != m.scratch || queued != len(m.queue) {
					rt.Fatalf("bound live=%d scratch=%d queued=%d, model live=%d scratch=%d queued=%d",
						live, scratch, queued, m.live, m.scratch, len(m.queue))
				}
				if live > m.maxLive || scratch > m.budget {
					rt.Fatalf("over the bound: live %d/%d scratch %d/%d", live, m.maxLive, scratch, m.budget)
				}
				for i, r := range reqs {
					if got, want := admitted(r.w), r.state == "held" || r.state == "released"; got != want {
						rt.Fatalf("request %d admitted=%v, model says %s", i, got, r.state)
					}
				}
			},
		})
	})
}

// TestHostBoundAcquire: a request over the bound waits; it is admitted
// when a slot frees, refused host_busy at its deadline (its own or its
// context's), and step_aborted when cancelled.
func TestHostBoundAcquire(t *testing.T) {
	t.Parallel()
	expiredCtx, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	cancelledCtx, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	closed := make(chan struct{})
	close(closed)
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		cancel   <-chan struct{}
		deadline time.Time
		want     sandbox.DenialCode
	}{
		{"own deadline", context.Background(), nil, time.Now().Add(20 * time.Millisecond), sandbox.DenialHostBusy},
		{"context deadline", expiredCtx, nil, time.Time{}, sandbox.DenialHostBusy},
		{"context cancelled", cancelledCtx, nil, time.Time{}, sandbox.DenialStepAborted},
		{"call cancelled", context.Background(), closed, time.Time{}, sandbox.DenialStepAborted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostBound(1, 1)
			held, d := h.acquire(context.Background(), nil, time.Time{}, 0)
			if d != nil {
				t.Fatal(d)
			}
			l, d := h.acquire(tc.ctx, tc.cancel, tc.deadline, 0)
			if l != nil || d == nil || d.Code != tc.want {
				t.Fatalf("acquire over the bound = %v, %v; want %s", l, d, tc.want)
			}
			var dd *sandbox.Denial
			if !errors.As(error(d), &dd) {
				t.Fatal("not a *Denial")
			}
			if h.waiting() {
				t.Fatal("a refused request still waits")
			}
			held.release()
			if l := h.tryAcquire(0); l == nil {
				t.Fatal("the slot was not free after the refused request and the release")
			}
		})
	}
	t.Run("admitted when a slot frees", func(t *testing.T) {
		h := newHostBound(1, 4)
		held, _ := h.acquire(context.Background(), nil, time.Time{}, 3)
		queued := make(chan struct{})
		h.onWait = func() { close(queued) }
		got := make(chan *sandbox.Denial, 1)
		go func() {
			l, d := h.acquire(context.Background(), nil, time.Now().Add(time.Minute), 3)
			l.release()
			got <- d
		}()
		<-queued
		select {
		case d := <-got:
			t.Fatalf("admitted over the bound: %v", d)
		default:
		}
		held.release()
		if d := <-got; d != nil {
			t.Fatalf("waiter refused after the slot freed: %v", d)
		}
	})
	t.Run("scratch over the budget is lowered to it", func(t *testing.T) {
		h := newHostBound(4, 10)
		l := h.tryAcquire(1)
		w, waits := h.enqueue(100)
		if !waits || w.scratch != 10 {
			t.Fatalf("enqueue(100) on budget 10: waits=%v scratch=%d", waits, w.scratch)
		}
		l.release()
		if !admitted(w) {
			t.Fatal("a request for the whole budget was not admitted on an idle host")
		}
	})
}
