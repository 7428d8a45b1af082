package plane

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"
)

// exclusiveWeight is what an Exclusive call takes of its strand's
// semaphore: all of it, so nothing of that strand runs beside it.
const exclusiveWeight = 1 << 40

// Fence keeps each strand's Exclusive calls apart from that strand's
// other calls, across every batch and single call dispatched through it:
// an Exclusive call starts once every call of its strand already running
// has ended, and no later call of its strand starts before it ends.
// Strands do not wait for each other, so a parent waiting on a child
// never blocks the child. Waiters are served in arrival order.
//
// The zero Fence is ready to use; a Fence must not be copied after
// first use. A Plane has one (Plane.Dispatcher hands it out).
type Fence struct {
	mu      sync.Mutex
	strands map[string]*strandFence
}

// strandFence is one strand's semaphore and how many calls hold or wait
// for it; it is dropped when the last one leaves.
type strandFence struct {
	sem   *semaphore.Weighted
	users int
}

// enter waits until a call of strand may run (alone when exclusive) and
// returns the function that ends it, or ctx's error when ctx ended first.
func (f *Fence) enter(ctx context.Context, strand string, exclusive bool) (leave func(), err error) {
	f.mu.Lock()
	if f.strands == nil {
		f.strands = map[string]*strandFence{}
	}
	s := f.strands[strand]
	if s == nil {
		s = &strandFence{sem: semaphore.NewWeighted(exclusiveWeight)}
		f.strands[strand] = s
	}
	s.users++
	f.mu.Unlock()
	w := int64(1)
	if exclusive {
		w = exclusiveWeight
	}
	if err := s.sem.Acquire(ctx, w); err != nil {
		f.release(strand, s)
		return nil, err
	}
	return func() {
		s.sem.Release(w)
		f.release(strand, s)
	}, nil
}

// release counts one call of strand out, dropping its entry when none
// is left.
func (f *Fence) release(strand string, s *strandFence) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.users--; s.users == 0 {
		delete(f.strands, strand)
	}
}
