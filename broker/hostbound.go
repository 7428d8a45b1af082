package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentloom/loom/sandbox"
)

// Host-wide bounds on the commands one Broker runs at once (see
// Options.MaxLiveCommands and Options.ScratchBudgetBytes).
const (
	// defaultMaxLiveCommands is how many commands (foreground, background
	// jobs and the prestarted warm helpers together) may be live at once
	// when Options.MaxLiveCommands is zero. With defaultProcesses per
	// command it keeps the worst case at 32 x 1024 = 32,768 processes,
	// the kernel's own pid_max on a small machine, and it is far past
	// what two CPUs run usefully at once (most commands wait on I/O or
	// on each other; a 33rd waits for a slot instead).
	defaultMaxLiveCommands = 32
	// defaultScratchBudgetDivisor: when Options.ScratchBudgetBytes is
	// zero, the jails' in-memory scratch together may take the host's
	// physical memory divided by this, the size the kernel itself gives
	// one tmpfs by default; never less than one jail's scratch.
	defaultScratchBudgetDivisor = 2
	// maxHostBusyWait bounds how long a command waits for the host-wide
	// bounds when its own deadline is later, or it has none (a session
	// job): then it is refused with DenialHostBusy.
	maxHostBusyWait = 5 * time.Minute
	// fallbackScratchBudgetBytes is the default scratch budget where the
	// host's physical memory cannot be read.
	fallbackScratchBudgetBytes = 8 << 30
)

// hostBound admits commands against the broker's host-wide bounds: at
// most maxLive live at once and at most budget bytes of jail scratch
// reserved at once. Requests are served first come, first served: one
// that must wait queues, and a request never passes another that waits
// before it (so a large one is not starved by small ones). Waiting is a
// channel receive, never a poll.
type hostBound struct {
	mu      sync.Mutex
	maxLive int
	budget  int64
	live    int
	scratch int64
	queue   []*hostWaiter
	// onWait, when set, is called (without mu) each time a request
	// starts waiting: the broker discards its warm helpers to make room.
	onWait func()
	// onRelease, when set, is called (without mu) after each release: the
	// broker restarts the warm pool's filler a full bound had stopped.
	onRelease func()
}

// hostWaiter is one request for a slot and scratch bytes.
type hostWaiter struct {
	scratch int64
	ready   chan struct{} // closed once lease is set
	lease   *hostLease
}

// hostLease is one admitted command's (or warm helper's) share of the
// bounds; release returns it, once.
type hostLease struct {
	h       *hostBound
	scratch int64
	once    sync.Once
}

func newHostBound(maxLive int, budget int64) *hostBound {
	return &hostBound{maxLive: maxLive, budget: budget}
}

// fitsLocked reports whether a request for scratch bytes fits now.
func (h *hostBound) fitsLocked(scratch int64) bool {
	return h.live < h.maxLive && h.scratch+scratch <= h.budget
}

// grantLocked admits waiters from the head of the queue while they fit.
func (h *hostBound) grantLocked() {
	for len(h.queue) > 0 && h.fitsLocked(h.queue[0].scratch) {
		w := h.queue[0]
		h.queue[0] = nil
		h.queue = h.queue[1:]
		w.lease = h.takeLocked(w.scratch)
		close(w.ready)
	}
}

func (h *hostBound) takeLocked(scratch int64) *hostLease {
	h.live++
	h.scratch += scratch
	return &hostLease{h: h, scratch: scratch}
}

// enqueue asks for a slot and scratch bytes (at most the budget; more is
// lowered to it, so every request can be admitted once the host is idle).
// The waiter's ready channel is already closed when it was admitted at
// once.
func (h *hostBound) enqueue(scratch int64) (w *hostWaiter, waits bool) {
	h.mu.Lock()
	scratch = min(scratch, h.budget)
	w = &hostWaiter{scratch: scratch, ready: make(chan struct{})}
	if len(h.queue) == 0 && h.fitsLocked(scratch) {
		w.lease = h.takeLocked(scratch)
		close(w.ready)
		h.mu.Unlock()
		return w, false
	}
	h.queue = append(h.queue, w)
	h.mu.Unlock()
	if h.onWait != nil {
		h.onWait()
	}
	return w, true
}

// abandon withdraws w. It returns w's lease when w was admitted before it
// could be withdrawn (the caller then owns it), else nil.
func (h *hostBound) abandon(w *hostWaiter) *hostLease {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.lease != nil {
		return w.lease
	}
	for i, q := range h.queue {
		if q == w {
			h.queue = append(h.queue[:i], h.queue[i+1:]...)
			break
		}
	}
	h.grantLocked() // the head may have been what held the others back
	return nil
}

// acquire waits for a slot and scratch bytes until deadline (zero: none),
// ctx ends or cancel closes. A request that cannot be admitted by its
// deadline (ctx's included) is refused with DenialHostBusy; one cancelled
// first with DenialStepAborted.
func (h *hostBound) acquire(ctx context.Context, cancel <-chan struct{}, deadline time.Time, scratch int64) (*hostLease, *sandbox.Denial) {
	w, waits := h.enqueue(scratch)
	if !waits {
		return w.lease, nil
	}
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	busy := func() *sandbox.Denial {
		h.abandon(w).release()
		return sandbox.NewDenial(sandbox.DenialHostBusy, h.busyReason(), nil)
	}
	aborted := func(why string) *sandbox.Denial {
		h.abandon(w).release()
		return sandbox.NewDenial(sandbox.DenialStepAborted, why+" while waiting for the host-wide bound on live commands", nil)
	}
	select {
	case <-w.ready:
		return w.lease, nil
	case <-expired:
		return nil, busy()
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, busy()
		}
		return nil, aborted("the context was cancelled")
	case <-cancel:
		return nil, aborted("the call was cancelled")
	}
}

// tryAcquire admits a request only if it fits now and nobody waits: a
// warm helper never takes what a command is waiting for.
func (h *hostBound) tryAcquire(scratch int64) *hostLease {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.queue) > 0 || !h.fitsLocked(scratch) {
		return nil
	}
	return h.takeLocked(scratch)
}

// waiting reports whether any request waits.
func (h *hostBound) waiting() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queue) > 0
}

// busyReason says which bound stayed full, for a model and an operator.
func (h *hostBound) busyReason() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("the host-wide bound stayed full until the command's deadline (%d of %d live commands, %d of %d MiB of jail scratch reserved, %d waiting); retry when fewer commands run",
		h.live, h.maxLive, h.scratch>>20, h.budget>>20, len(h.queue))
}

// release returns the lease's share and admits whoever it unblocks. It
// is safe on a nil lease and does nothing the second time.
func (l *hostLease) release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		h := l.h
		h.mu.Lock()
		h.live--
		h.scratch -= l.scratch
		h.grantLocked()
		h.mu.Unlock()
		if h.onRelease != nil {
			h.onRelease()
		}
	})
}

// hostBounds returns the broker's admission, made on first use from
// Options (reading the host's physical memory for the default scratch
// budget).
func (b *Broker) hostBounds() *hostBound {
	b.hostOnce.Do(func() {
		live := b.opts.MaxLiveCommands
		if live <= 0 {
			live = defaultMaxLiveCommands
		}
		budget := b.opts.ScratchBudgetBytes
		if budget <= 0 {
			budget = fallbackScratchBudgetBytes
			if mem := physicalMemoryBytes(); mem > 0 {
				budget = mem / defaultScratchBudgetDivisor
			}
		}
		budget = max(budget, jailScratchBytes)
		b.host = newHostBound(live, budget)
		b.host.onWait = b.makeRoom
		b.host.onRelease = b.prewarmDeferred
	})
	return b.host
}
