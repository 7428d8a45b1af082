package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/agentloom/loom/codemode/internal/wire"
	"golang.org/x/sys/unix"
)

// ringRoomPoll is the first wait of a write that finds the program's
// ring full; each further wait doubles, up to writePollSlice. The
// program does not ring for room: only a program that stops reading
// fills its ring, and it pays for that, not the host.
const ringRoomPoll = 20 * time.Microsecond

// SpinPollsPerYield is how many times a spinning ring read looks at the
// program's position for each time it yields the CPU: a look is a load
// from shared memory, a yield a system call, so looking more often
// finds an answer sooner while still letting a program waiting for
// this CPU have it. The prelude's client spins the same way
// (codemode's TestPreludeRingLayout holds its constant equal).
const SpinPollsPerYield = 32

// doorbellReadBytes is how many doorbells a waking read takes at once:
// enough that a program filling its socket with them costs the host a
// few reads, not thousands.
const doorbellReadBytes = 4 << 10

// ShareRing moves the channel onto the ring pair r: it writes answer
// (the encoded ring frame) to the program with memfd, r's memory file,
// attached, and from then on reads and writes go through r. The caller
// holds the channel's writer and has nothing of the program's left
// unread. When the answer cannot be written the channel is left as it
// was, and r unmapped.
func (c *Conn) ShareRing(r *Ring, memfd int, answer []byte) error {
	if !c.acquire() {
		r.unmap()
		return net.ErrClosed
	}
	defer c.release()
	nudge, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		r.unmap()
		return fmt.Errorf("creating the shared ring's nudge: %w", err)
	}
	if err := c.sendWithRights(answer, unix.UnixRights(memfd)); err != nil {
		unix.Close(nudge)
		r.unmap()
		return err
	}
	c.nudge = nudge
	c.ring.Store(r)
	return nil
}

// ArmNudge says an answer the program will wait for is outstanding: a
// ring read that sleeps from now until the next Nudge waits for the
// nudge too (one more system call per sleep, so only while armed).
func (c *Conn) ArmNudge() { c.armed.Store(true) }

// Nudge tells a ring read asleep for the program's doorbell that an
// answer the program waits for was just written: the read wakes and
// spins once, from now, for up to readSpin (stopping at once when it
// loses its CPU, spinGap), so the program's next frame, which that
// answer often brings within microseconds, finds the host running and
// the program need not ring and wait for it to wake: the host's wake-up
// runs beside the program's instead of after it. It does nothing on the
// socket or when no read sleeps, and disarms (see ArmNudge).
func (c *Conn) Nudge() {
	c.armed.Store(false)
	if !c.asleep.Load() || !c.acquire() {
		return
	}
	defer c.release()
	var one [8]byte // the eventfd's counter: a uint64 in the host's byte order
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(c.nudge, one[:])
}

// sendWithRights writes all of p, the rights riding on its first byte.
func (c *Conn) sendWithRights(p, rights []byte) error {
	for {
		n, err := unix.SendmsgN(c.fd, p, rights, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if err := c.waitWritable(); err != nil {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("writing to the program: %w", err)
		}
		_, err = c.writeSocket(p[n:])
		return err
	}
}

// spinGap is the longest pause between two looks of a spinning ring
// read that still counts as running. A look takes well under a
// microsecond, but a reader that keeps its CPU is still paused by
// interrupts and by the hypervisor: on an idle 2-core VM, a spinning
// loop meets about 600 pauses a second of 10–200 µs, and at a 10 µs
// threshold each one cost a calm of a millisecond, so most idle round
// trips went through the doorbell. A reader that lost its CPU to a
// thread that keeps it waits a scheduler slice, from a few hundred
// microseconds to milliseconds: the host is loaded, and a spinner then
// only takes the CPU the program needs to answer, while a sleeper woken
// by the doorbell is the socket path's cost. A thread that runs for less
// than spinGap before it blocks goes unseen, and the reader spins on
// (still at most readSpin a read).
const spinGap = 200 * time.Microsecond

// The backoff of a ring read that lost its CPU spinning: every later
// read marks itself asleep and waits for the doorbell at once, as the
// socket path does, for a while (the calm); the first read after it
// spins again, so an idle host gets its spinning back. The calm is
// minSpinBackoff when the reads spun at least spinPaidReads times
// without losing their CPU since the last loss (a rare descheduling: a
// quiet host keeps spinning, which beats the socket), and otherwise
// twice the last one, up to spinBackoff (a loaded host soon spins only
// once per spinBackoff, and then pays what the socket does).
const (
	minSpinBackoff = time.Millisecond
	spinBackoff    = 50 * time.Millisecond
	spinPaidReads  = 1024
)

// nextSpinBackoff is the calm a read that lost its CPU spinning sets,
// after last (0 for none yet) and paid reads that spun without losing
// it since.
func nextSpinBackoff(last time.Duration, paid int64) time.Duration {
	if paid >= spinPaidReads || last < minSpinBackoff {
		return minSpinBackoff
	}
	return min(2*last, spinBackoff)
}

// readRing is Read on the ring: it takes what the program wrote, asks
// again for up to readSpin while frames come quickly and spinning pays,
// and otherwise marks itself asleep and sleeps in read(2) until the
// program rings, its end closes (io.EOF once the ring is empty) or Close
// is called. Spinning stops at once when the reader finds it lost its
// CPU between two looks (spinGap), and stays off for a calm
// (nextSpinBackoff): on a loaded host a read costs what the socket's
// does, never a spinner's lost time slices.
func (c *Conn) readRing(r *Ring, p []byte) (int, error) {
	begin := time.Now()
	start, last := begin, begin // start: of this spin
	polls := 0
	spin := c.spin.Load() && start.UnixNano() >= c.calmUntil.Load()
	for {
		if fe := c.fault.Load(); fe != nil {
			return 0, fe
		}
		n, err := r.take(p)
		if n > 0 || err != nil {
			if spin {
				c.paid.Add(1)
			}
			c.spin.Store(time.Since(begin) < readSpin)
			return n, err
		}
		if spin {
			if c.test.spinning != nil {
				c.test.spinning()
			}
			now := time.Now()
			switch {
			case now.Sub(last) > spinGap:
				// Descheduled mid-spin: the program likely was too.
				calm := nextSpinBackoff(time.Duration(c.calm.Load()), c.paid.Swap(0))
				c.calm.Store(int64(calm))
				c.calmUntil.Store(now.Add(calm).UnixNano())
				spin = false
			case now.Sub(start) < readSpin:
				last = now
				if polls++; polls%SpinPollsPerYield == 0 {
					unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
				}
				continue
			default:
				c.paid.Add(1)
				spin = false
			}
		}
		r.sleeping(true)
		if n, err := r.take(p); n > 0 || err != nil {
			r.sleeping(false)
			c.spin.Store(false)
			return n, err
		}
		if c.test.sleeping != nil {
			c.test.sleeping()
		}
		nudged, err := c.awaitDoorbell()
		if nudged {
			r.sleeping(false)
			start, last, polls = time.Now(), time.Now(), 0
			spin = true
			continue
		}
		if err != nil {
			r.sleeping(false)
			if fe := c.fault.Load(); fe != nil {
				return 0, fe
			}
			if err == io.EOF {
				if n, ferr := r.take(p); n > 0 || ferr != nil {
					return n, ferr
				}
			}
			return 0, err
		}
	}
}

// awaitDoorbell sleeps until the program writes on the socket, which
// must be doorbells only: anything else is a fault; or, while armed,
// until Nudge is called (nudged, and the socket left unread). io.EOF when the
// program's end closed or Close was called.
func (c *Conn) awaitDoorbell() (nudged bool, err error) {
	if c.nudge >= 0 && c.armed.Load() {
		fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}, {Fd: int32(c.nudge), Events: unix.POLLIN}}
		c.asleep.Store(true)
		for {
			_, err = unix.Poll(fds, -1)
			if err != unix.EINTR {
				break
			}
		}
		c.asleep.Store(false)
		if err != nil {
			return false, fmt.Errorf("waiting for the program: %w", err)
		}
		if fds[1].Revents != 0 {
			var count [8]byte
			_, _ = unix.Read(c.nudge, count[:])
			if fds[0].Revents == 0 {
				return true, nil
			}
		}
	}
	return false, c.readDoorbells()
}

// readDoorbells reads the doorbells the program wrote, sleeping until
// it writes one.
func (c *Conn) readDoorbells() error {
	var bells [doorbellReadBytes]byte
	for {
		n, err := unix.Read(c.fd, bells[:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return fmt.Errorf("reading from the program: %w", err)
		case n == 0:
			return io.EOF
		}
		for _, b := range bells[:n] {
			if b != RingDoorbell {
				return wire.Faultf("the program wrote byte %#x on its socket, which carries only doorbells once it shares a ring", b)
			}
		}
		return nil
	}
}

// writeRing is Write on the ring: it puts all of p in the program's
// ring, ringing the program when it sleeps, and waits for room when the
// ring is full, until its deadline (errWriteTimeout) or Close, which it
// also checks between parts, so a program that frees room a byte at a
// time cannot hold it past either. A forged position is a fault that
// every later read returns too (see Conn.fault).
func (c *Conn) writeRing(r *Ring, p []byte) (int, error) {
	done := 0
	wait := ringRoomPoll
	for done < len(p) {
		n, err := r.put(p[done:])
		if err != nil {
			c.faulted(err)
			return done, err
		}
		if n > 0 {
			done += n
			wait = ringRoomPoll
			if r.programAsleep() {
				c.wakeProgram()
			}
			if done < len(p) {
				if err := c.writeBound(); err != nil {
					return done, err
				}
			}
			continue
		}
		if err := c.waitRoom(wait); err != nil {
			return done, err
		}
		wait = min(2*wait, writePollSlice)
	}
	return done, nil
}

// faulted keeps the first ring fault a write met and wakes a reader
// asleep on the socket, which then returns it.
func (c *Conn) faulted(err error) {
	var fe *wire.FrameError
	if errors.As(err, &fe) && c.fault.CompareAndSwap(nil, fe) {
		_ = unix.Shutdown(c.fd, unix.SHUT_RD)
	}
}

// writeBound fails once Close was called or the write deadline passed.
func (c *Conn) writeBound() error {
	if c.shut.Load() {
		return net.ErrClosed
	}
	if d := c.deadline.Load(); d != 0 && time.Now().UnixNano() >= d {
		return errWriteTimeout
	}
	return nil
}

// wakeProgram writes one doorbell. A full socket already holds doorbells the
// program has not read, so one that does not fit is not needed.
func (c *Conn) wakeProgram() {
	_, _ = unix.SendmsgN(c.fd, []byte{RingDoorbell}, nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
}

// waitRoom sleeps for wait, or less when the deadline comes first, and
// fails once the deadline passed or Close was called.
func (c *Conn) waitRoom(wait time.Duration) error {
	if err := c.writeBound(); err != nil {
		return err
	}
	if d := c.deadline.Load(); d != 0 {
		wait = min(wait, time.Until(time.Unix(0, d)))
	}
	time.Sleep(wait)
	return nil
}
