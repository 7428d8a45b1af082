package broker

import (
	"sync"
	"time"
)

// warmRefillLull is how long after a command was handed a warm helper
// the filler waits before starting another, while the pool still holds
// one for the next command: commands cleared back to back (a batch's
// exclusive calls) then find their helpers ready without a helper's
// start competing with them for the CPU, and the pool refills in the
// lull after them. It outlasts a short command's whole latency; an
// empty pool refills at once.
const warmRefillLull = 20 * time.Millisecond

// warmPool holds the helpers a Broker started ahead of its next commands
// (see Options.WarmHelpers). Each ready helper holds a share of the
// host-wide bounds (its lease) until it is handed a command or
// discarded. One filler at a time starts helpers, one after another, so
// refilling the pool never bursts the machine while commands run.
type warmPool struct {
	// work counts the filler and the reapers of discarded helpers, which
	// Close waits for.
	work running
	mu   sync.Mutex
	// ready are the helpers waiting for a command, oldest first.
	ready []*waitingHelper
	// filling: the filler is running (it may be starting a helper now).
	filling bool
	// want is the flavour the filler starts: the last cleared command's,
	// which predicts the next.
	want flavour
	// starts is how many helpers the filler may still start before the
	// next prewarm grants more.
	starts int
	// evictions is how many ready helpers of another flavour the filler
	// may still discard to make room for the wanted one: one per prewarm,
	// so a pool serving commands of both flavours shifts towards the
	// recent one a helper at a time instead of being replaced whole.
	evictions int
	// deferred: the filler stopped because the host-wide bounds were
	// full or a command waited; a released slot restarts it.
	deferred bool
	// closed: Close was called; nothing more is started.
	closed bool
	// lastTake is when a command was last handed a helper of the pool.
	lastTake time.Time
	// err is why the last start failed, or nil.
	err error
	// primes records priming (see warmprime_linux.go).
	primes primeBook

	// test holds switches only tests set: lull overrides warmRefillLull
	// when not zero; negative means none.
	test struct{ lull time.Duration }
}

// running counts goroutines that may start while another waits for the
// count to reach zero (which a sync.WaitGroup does not allow: a retiring
// helper's reaper may start while Close waits).
type running struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n falls to zero; nil while n is zero
}

func (r *running) add() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		r.zero = make(chan struct{})
	}
	r.n++
}

func (r *running) done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n--
	if r.n == 0 {
		close(r.zero)
		r.zero = nil
	}
}

// wait returns once the count is zero.
func (r *running) wait() {
	r.mu.Lock()
	z := r.zero
	r.mu.Unlock()
	if z != nil {
		<-z
	}
}
