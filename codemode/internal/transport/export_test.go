package transport

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

// Test hooks for the external tests (package transport_test), which use
// transporttest and so cannot be in this package.

// FDOf is c's descriptor, for a test that asks the kernel about the
// socket.
func FDOf(c *Conn) int { return c.fd }

// RingMappedOf reports whether c still maps the ring it moved onto.
func RingMappedOf(c *Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ring.Load().mem != nil
}

// SetRingHooks sets c's test hooks: spinning is called on each look of
// a spinning ring read that found nothing, sleeping just before a ring
// read waits for the doorbell.
func SetRingHooks(c *Conn, spinning, sleeping func()) {
	c.test.spinning, c.test.sleeping = spinning, sleeping
}

// SpinCalmOf reports whether c's ring reads are kept from spinning
// because one lost its CPU spinning.
func SpinCalmOf(c *Conn) bool { return time.Now().UnixNano() < c.calmUntil.Load() }

// SetSpinHistory sets what c's next ring read that loses its CPU
// spinning reads to choose its calm: the last calm and the reads that
// spun without losing it since (see nextSpinBackoff).
func SetSpinHistory(c *Conn, last time.Duration, paid int64) {
	c.calm.Store(int64(last))
	c.paid.Store(paid)
}

// SpinCalmForOf is the length of the calm c's last loss of its CPU
// while spinning set.
func SpinCalmForOf(c *Conn) time.Duration { return time.Duration(c.calm.Load()) }

// NextSpinBackoff is nextSpinBackoff, for its table test.
var NextSpinBackoff = nextSpinBackoff

// The backoff's bounds, for its table test.
const (
	MinSpinBackoff = minSpinBackoff
	SpinBackoff    = spinBackoff
	SpinPaidReads  = spinPaidReads
)

// AsleepOf reports whether a ring read of c waits for the doorbell or a
// nudge.
func AsleepOf(c *Conn) bool { return c.asleep.Load() }

// NudgePendingOf takes c's pending nudge, reporting whether there was
// one.
func NudgePendingOf(c *Conn) bool {
	var count [8]byte
	n, _ := unix.Read(c.nudge, count[:])
	return n == 8
}

// LeaveNudge adds one to c's nudge counter with no read asleep, as a
// Nudge racing a read woken by the doorbell leaves it.
func LeaveNudge(c *Conn) {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(c.nudge, one[:])
}
