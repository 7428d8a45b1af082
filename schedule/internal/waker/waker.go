// Package waker is the firing loop the durable schedulers share: fire
// what is due (Drain, in bounded batches), sleep until the next fire
// (never longer than MaxSleep, so a clock that jumps is noticed), wake
// early when poked, end when closed.
package waker

import (
	"context"
	"sync"
	"time"
)

// MaxSleep bounds one wait of Run.
const MaxSleep = time.Minute

// Waker runs a scheduler's loop. The zero Waker is not usable; call New.
// It is safe for concurrent use.
type Waker struct {
	mu     sync.Mutex // guards closed and the send on kick
	closed bool
	kick   chan struct{}
}

// New returns an open Waker.
func New() *Waker { return &Waker{kick: make(chan struct{}, 1)} }

// Poke makes a Run that is waiting look again at once. It does nothing
// after Close.
func (w *Waker) Poke() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Close makes Run return nil. Later calls do nothing.
func (w *Waker) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.kick)
	}
}

// Run calls tick, then waits for the time now says is left until
// nextDue's answer (MaxSleep when there is none or it fails), a Poke, a
// Close or the end of ctx; and again, until Close (nil) or ctx ends (its
// error).
func (w *Waker) Run(ctx context.Context, now func() time.Time, tick func(context.Context), nextDue func(context.Context) (time.Time, bool, error)) error {
	for {
		tick(ctx)
		wait := MaxSleep
		if next, ok, err := nextDue(ctx); err == nil && ok {
			wait = min(max(next.Sub(now()), 0), MaxSleep)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case _, ok := <-w.kick:
			t.Stop()
			if !ok {
				return nil
			}
		case <-t.C:
		}
	}
}

// Drain fires what is due, a batch at a time: it calls claim, hands
// each fire claim answered to deliver in order (a nil deliver drops
// them), and calls claim again while it answers batch fires or more.
// It answers how many fires claim answered, and claim's error with the
// count before it.
func Drain[F any](ctx context.Context, batch int, claim func(context.Context) ([]F, error), deliver func(context.Context, F)) (int, error) {
	total := 0
	for {
		fires, err := claim(ctx)
		if err != nil {
			return total, err
		}
		for _, f := range fires {
			if deliver != nil {
				deliver(ctx, f)
			}
		}
		total += len(fires)
		if len(fires) < batch {
			return total, nil
		}
	}
}
