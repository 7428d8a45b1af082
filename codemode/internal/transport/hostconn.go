// Package transport carries the capability channel's bytes between the
// host and a program: Conn, the host's end of the socketpair the program
// inherits, and Ring, the shared memory ring pair the channel moves onto
// when the program asks (the socket then carries only doorbells). It
// knows nothing of frames beyond the faults it reports as
// *wire.FrameError; codemode's channel reads and writes frames through a
// Conn. No host imports this package.
package transport

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloom/loom/codemode/internal/wire"
	"golang.org/x/sys/unix"
)

// writePollSlice bounds one wait of a write that finds the program's end
// full: the writer looks again at a deadline set meanwhile (codemode's
// bound on its outcome frame) at least this often. Only a program that stops
// reading ever makes a writer wait.
const writePollSlice = 10 * time.Millisecond

// readSpin is how long a read that finds nothing keeps asking again
// before it sleeps in read(2), while the program calls in a tight loop
// (see Conn.Read): well past the few microseconds a program's client
// takes between reading one answer and sending its next call, so a loop
// of calls seldom pays a sleep and a wake-up, and a program busy
// elsewhere costs the host at most this much of one CPU before the read
// sleeps. A program that sends a byte within every readSpin keeps its
// channel's read spinning for as long as it does: one CPU at most, as a
// tight loop of calls also costs.
const readSpin = 50 * time.Microsecond

// Conn is the host's end of a capability channel: a blocking
// socket descriptor. Its one reader reads it itself, with no trip
// through the runtime's poller (epoll, a read that finds nothing, a
// goroutine hand-off) on each call: it asks again without sleeping for
// up to readSpin while the program's calls come quickly, and otherwise
// blocks in read(2), so the kernel wakes it when a frame arrives;
// BenchmarkCapabilityRoundTripFloor's bare variant measures this
// shape. Writes never block the writer beyond
// its deadline (send with MSG_DONTWAIT, then poll for room). Close
// shuts the socket down, which ends a blocked read or waiting write at
// once, with no deadline polled for, and closes the descriptor when no
// read or write uses it any more, so a descriptor number is never
// reused under one.
type Conn struct {
	fd int

	mu     sync.Mutex
	refs   int  // reads and writes using fd
	closed bool // Close was called: fd is closed once refs is 0

	deadline atomic.Int64 // write deadline, unix nanoseconds; 0 for none

	// spin says the last read found its data within readSpin, so the
	// next one asks again before it sleeps.
	spin atomic.Bool
	// calmUntil is when a ring read may spin again after one lost its
	// CPU spinning, unix nanoseconds; 0 for now. calm is the length of
	// the last such wait (see nextSpinBackoff), and paid counts the ring
	// reads that spun without losing their CPU since it was set.
	calmUntil atomic.Int64
	calm      atomic.Int64
	paid      atomic.Int64

	// ring, once the program asked for one (see ShareRing), carries the
	// channel's bytes; fd then carries only doorbells.
	ring atomic.Pointer[Ring]
	// shut is set by Close: a write waiting for room in the ring stops.
	shut atomic.Bool
	// fault is the first forged ring position a write met: every read
	// from then on returns it, so codemode's serve loop ends the
	// execution rather than go on serving a program its answers cannot
	// reach.
	fault atomic.Pointer[wire.FrameError]

	// nudge, once the channel moved onto a ring, is an eventfd a ring
	// read asleep for the doorbell also waits on while armed (see
	// ArmNudge); -1 before. asleep is set while a ring read waits for
	// either: the host's own word, never the ring's, which the program
	// may forge.
	nudge  int
	armed  atomic.Bool
	asleep atomic.Bool

	// test holds test hooks; nil hooks are not called.
	test struct {
		// spinning is called on each look of a spinning ring read that
		// found nothing, before it reads the clock.
		spinning func()
		// sleeping is called by a ring read that marked itself asleep and
		// found nothing, just before it waits for the doorbell.
		sleeping func()
	}
}

// errWriteTimeout is a write that ran past its deadline.
var errWriteTimeout = fmt.Errorf("writing to the program: %w", os.ErrDeadlineExceeded)

// acquire takes a use of fd, false once Close was called.
func (c *Conn) acquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.refs++
	return true
}

// release gives a use back, closing fd after Close once none is left.
func (c *Conn) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs--; c.refs == 0 && c.closed {
		c.closeFD()
	}
}

// closeFD closes the descriptor and unmaps the ring; mu is held and no
// read or write uses either.
func (c *Conn) closeFD() error {
	if r := c.ring.Load(); r != nil {
		r.unmap()
	}
	if c.nudge >= 0 {
		unix.Close(c.nudge)
	}
	return unix.Close(c.fd)
}

// Read reads what the program sent, blocking until some arrives. It
// returns io.EOF once the program's end is closed or Close was called,
// and a *wire.FrameError once the program broke the ring's rules. One
// goroutine reads at a time.
func (c *Conn) Read(p []byte) (int, error) {
	if !c.acquire() {
		return 0, net.ErrClosed
	}
	defer c.release()
	if len(p) == 0 {
		return 0, nil
	}
	if r := c.ring.Load(); r != nil {
		return c.readRing(r, p)
	}
	start := time.Now()
	if c.spin.Load() {
		if n, done, err := c.readSpinning(p, start); done {
			return n, err
		}
	}
	for {
		n, err := unix.Read(c.fd, p)
		c.spin.Store(time.Since(start) < readSpin)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, fmt.Errorf("reading from the program: %w", err)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// readSpinning asks for data without sleeping until some arrives or
// readSpin has passed since start; done is false when it passed.
func (c *Conn) readSpinning(p []byte, start time.Time) (n int, done bool, err error) {
	for time.Since(start) < readSpin {
		n, _, err := unix.Recvfrom(c.fd, p, unix.MSG_DONTWAIT)
		switch {
		case err == unix.EAGAIN, err == unix.EINTR:
			// Let a program waiting for this CPU have it.
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			continue
		case err != nil:
			return 0, true, fmt.Errorf("reading from the program: %w", err)
		case n == 0:
			return 0, true, io.EOF
		}
		return n, true, nil
	}
	c.spin.Store(false)
	return 0, false, nil
}

// Write writes all of p or fails: at its deadline (errWriteTimeout),
// once Close was called, or when the program's end is gone.
func (c *Conn) Write(p []byte) (int, error) {
	if !c.acquire() {
		return 0, net.ErrClosed
	}
	defer c.release()
	if r := c.ring.Load(); r != nil {
		return c.writeRing(r, p)
	}
	return c.writeSocket(p)
}

// writeSocket is Write on the socket.
func (c *Conn) writeSocket(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := unix.SendmsgN(c.fd, p[done:], nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		switch {
		case err == nil:
			done += n
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if err := c.waitWritable(); err != nil {
				return done, err
			}
		default:
			return done, fmt.Errorf("writing to the program: %w", err)
		}
	}
	return done, nil
}

// waitWritable waits until the socket has room, its deadline passes or
// it is shut down (then the next send fails).
func (c *Conn) waitWritable() error {
	for {
		wait := writePollSlice
		if d := c.deadline.Load(); d != 0 {
			left := time.Until(time.Unix(0, d))
			if left <= 0 {
				return errWriteTimeout
			}
			wait = min(wait, left)
		}
		fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(fds, int((wait+time.Millisecond-1)/time.Millisecond))
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("writing to the program: %w", err)
		}
		if n > 0 {
			return nil
		}
	}
}

// SetWriteDeadline bounds every write from now on, and a write already
// waiting, by t; the zero time removes the bound.
func (c *Conn) SetWriteDeadline(t time.Time) {
	if t.IsZero() {
		c.deadline.Store(0)
		return
	}
	c.deadline.Store(t.UnixNano())
}

// Close shuts the socket down both ways, ending a blocked read (io.EOF)
// and a waiting write, and closes the descriptor once neither uses it.
// Later calls are no-ops.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.shut.Store(true)
	_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
	if c.refs == 0 {
		return c.closeFD()
	}
	return nil
}

// Pair is the capability channel: the host's end and the
// program's end, to be handed to the broker as its ExtraFile. Both are
// blocking descriptors (each side of a socketpair has its own flags).
func Pair() (*Conn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("capability channel: %w", err)
	}
	return NewConn(fds[0]), os.NewFile(uintptr(fds[1]), "codemode-program"), nil
}

// NewConn is the host's end of a channel over fd, a blocking stream
// socket whose other end the program holds; the Conn owns fd from then
// on (Close closes it).
func NewConn(fd int) *Conn {
	return &Conn{fd: fd, nudge: -1}
}

// OnRing reports whether the channel moved onto a ring (ShareRing
// succeeded); it never moves back.
func (c *Conn) OnRing() bool {
	return c.ring.Load() != nil
}
