package broker

import (
	"slices"
	"time"
)

// takeWarm removes and returns a ready helper of flavour f that has not
// outlived the broker's idle allowance and carries the host's identity of
// now (a host that changed its uid since must not run a command as the
// old one): the oldest primed for policy key (see jail.PrimeKey), else the
// oldest holding no policy; nil when there is none. Helpers failing the
// first two, and helpers primed for a policy that is not one the
// flavour's helpers are primed for now (a stale priming), are discarded
// on the way; one primed for such a policy while the command's is
// another stays for the commands it fits. When the command finds no helper but
// passed over primed ones, the pool keeps one helper of the flavour
// unprimed from then on (primeBook.reserve). The caller holds its own
// share of the host-wide bounds, so the helper's is returned.
func (b *Broker) takeWarm(f flavour, key string) *waitingHelper {
	p := &b.pool
	idle := b.warmIdle()
	who := currentIdentity()
	for {
		p.mu.Lock()
		i := slices.IndexFunc(p.ready, func(h *waitingHelper) bool {
			return h.flavour == f && h.prime != nil && (h.prime.key == key || !p.primes.recent(f, h.prime.key))
		})
		if i < 0 {
			i = slices.IndexFunc(p.ready, func(h *waitingHelper) bool { return h.flavour == f && h.prime == nil })
		}
		if i < 0 {
			if slices.ContainsFunc(p.ready, func(h *waitingHelper) bool { return h.flavour == f }) {
				// Only helpers primed for another policy: a command like
				// this one would have found a warm helper.
				if p.primes.reserve == nil {
					p.primes.reserve = map[flavour]bool{}
				}
				p.primes.reserve[f] = true
			}
			p.mu.Unlock()
			return nil
		}
		h := p.ready[i]
		p.ready = slices.Delete(p.ready, i, i+1)
		p.mu.Unlock()
		h.retire.Stop()
		if time.Since(h.born) >= idle || h.who != who || (h.prime != nil && h.prime.key != key) {
			b.discard(h)
			continue
		}
		p.mu.Lock()
		p.lastTake = time.Now()
		p.mu.Unlock()
		h.lease.release()
		h.lease = nil
		return h
	}
}

// prewarm asks for the pool to be filled with helpers of flavour f (the
// flavour of the command just cleared, which predicts the next), unless
// prestarting is off or the broker is closed. It returns at once; the
// filler starts the helpers one after another. It grants the filler
// Options.WarmHelpers starts, so helpers that retire idle while it runs
// are not replaced without end, and one eviction of a helper of another
// flavour.
func (b *Broker) prewarm(f flavour) {
	target := b.warmHelpers()
	p := &b.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if target == 0 || p.closed {
		return
	}
	p.want = f
	p.starts = target
	p.evictions = 1
	p.deferred = false
	b.startFillerLocked()
}

// startFillerLocked starts the filler unless it runs; p.mu is held.
func (b *Broker) startFillerLocked() {
	if b.pool.filling {
		return
	}
	b.pool.filling = true
	b.pool.work.add()
	go func() {
		defer b.pool.work.done()
		b.fill()
	}()
}

// fill starts helpers of the wanted flavour, one at a time, until the
// pool holds Options.WarmHelpers of them or its starts run out; while the
// pool still holds one of them, it starts the next only warmRefillLull
// after a command was last handed one. In a
// full pool, a helper of another flavour makes room for one of the
// wanted flavour while evictions last. Each new
// helper takes a slot of the host-wide bounds only when no command waits
// and another slot stays free for the next command (tryAcquireSpare);
// otherwise the filler stops, deferred, until a slot is released. A failed start stops it until the next
// command's prewarm.
func (b *Broker) fill() {
	p := &b.pool
	target, idle := b.warmHelpers(), b.warmIdle()
	for {
		p.mu.Lock()
		f := p.want
		have := 0
		for _, h := range p.ready {
			if h.flavour == f {
				have++
			}
		}
		full := len(p.ready) >= target
		if p.closed || have >= target || p.starts <= 0 || (full && p.evictions <= 0) {
			p.filling = false
			p.mu.Unlock()
			return
		}
		if lull := p.refillLull() - time.Since(p.lastTake); have > 0 && lull > 0 {
			// Commands are arriving back to back and the next still finds
			// a helper: start once they pause.
			p.mu.Unlock()
			time.Sleep(lull)
			continue
		}
		lease := b.hostBounds().tryAcquireSpare()
		if lease == nil {
			p.deferred = true
			p.filling = false
			p.mu.Unlock()
			return
		}
		var evict *waitingHelper
		if full {
			i := slices.IndexFunc(p.ready, func(h *waitingHelper) bool { return h.flavour != f })
			evict = p.ready[i] // have < target <= len(ready): one is of another flavour
			p.ready = slices.Delete(p.ready, i, i+1)
			p.evictions--
		}
		p.starts--
		p.mu.Unlock()
		if evict != nil {
			evict.retire.Stop()
			b.discard(evict)
		}

		h, err := b.spawnHelper(f, nil, true)
		if err == nil && f.namespaces {
			if perr := b.prime(h); perr != nil {
				// Unusable now; the policy is not primed for again, and
				// the next helper is started in its place.
				b.discard(h)
				lease.release()
				continue
			}
		}
		p.mu.Lock()
		p.err = err
		if err != nil {
			p.filling = false
			p.mu.Unlock()
			lease.release()
			return
		}
		h.lease = lease
		if p.closed {
			p.filling = false
			p.mu.Unlock()
			b.discard(h)
			return
		}
		p.ready = append(p.ready, h)
		h.retire = time.AfterFunc(idle, func() { b.retireWarm(h) })
		p.mu.Unlock()
		if b.hostBounds().waiting() {
			// A command began waiting while this helper started (see
			// makeRoom): it needs the slot more. The next round defers.
			b.retireWarm(h)
		}
	}
}

// refillLull is warmRefillLull, or the tests' override.
func (p *warmPool) refillLull() time.Duration {
	switch {
	case p.test.lull < 0:
		return 0
	case p.test.lull > 0:
		return p.test.lull
	}
	return warmRefillLull
}

// retireWarm discards h if it is still ready in the pool.
func (b *Broker) retireWarm(h *waitingHelper) {
	p := &b.pool
	p.mu.Lock()
	i := slices.Index(p.ready, h)
	if i < 0 {
		p.mu.Unlock()
		return
	}
	p.ready = slices.Delete(p.ready, i, i+1)
	p.mu.Unlock()
	h.retire.Stop()
	b.discard(h)
}

// closeWarm stops prestarting and discards every ready helper; one the
// filler is starting is discarded once started.
func (b *Broker) closeWarm() { b.dropWarm(true) }

// makeRoom discards every ready helper, so a command waiting for the
// host-wide bounds gets a slot once the helper holding it is reaped. The
// filler starts no more while a command waits (tryAcquire), and one it
// was starting is retired once started.
func (b *Broker) makeRoom() { b.dropWarm(false) }

// dropWarm discards every ready helper, and with closing stops
// prestarting for good.
func (b *Broker) dropWarm(closing bool) {
	p := &b.pool
	p.mu.Lock()
	if closing {
		p.closed = true
	}
	drop := p.ready
	p.ready = nil
	p.mu.Unlock()
	for _, h := range drop {
		h.retire.Stop()
		b.discard(h)
	}
}

// prewarmDeferred restarts a filler the host-wide bounds stopped, now
// that a slot was released.
func (b *Broker) prewarmDeferred() {
	p := &b.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.deferred || p.closed {
		return
	}
	p.deferred = false
	b.startFillerLocked()
}

// tryAcquireSpare admits a warm helper: only while no request waits and
// a slot stays free after it, so the next command is admitted at once
// instead of waiting for a warm helper to be discarded (on a broker
// bounded to one live command, no helper is prestarted at all).
func (h *hostBound) tryAcquireSpare() *hostLease {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.queue) > 0 || h.live+1 >= h.maxLive {
		return nil
	}
	return h.takeLocked(0)
}
