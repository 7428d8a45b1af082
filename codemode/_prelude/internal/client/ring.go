package client

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"cap/internal/wire"
)

// The control words of the ring pair the host grants (the host's
// codemode/internal/transport/ring.go documents the layout and holds the
// same offsets): the program's ring to the host and the host's ring to
// the program, each a head (bytes written) and a tail (bytes read), and
// each end's "asleep" mark.
const (
	upHead     = 0
	upTail     = 64
	hostAsleep = 128
	downHead   = 192
	downTail   = 256
	progAsleep = 320
	// doorbell is the byte that wakes the other end from read(2).
	doorbell = 1
	// roomPoll is the first wait of a write that finds the ring full;
	// each further wait doubles, up to maxRoomPoll.
	roomPoll    = 20 * time.Microsecond
	maxRoomPoll = 10 * time.Millisecond
	// spinPollsPerYield is how many times a spinning read looks at the
	// host's position for each time it yields the CPU (codemode's
	// constant of the same name).
	spinPollsPerYield = 32
	// spinGap is the longest pause between two looks of a spinning read
	// that still counts as running: interrupts and the hypervisor pause
	// a running reader for up to a few hundred microseconds, while one
	// that lost its CPU waits a scheduler slice. A longer pause means
	// the latter, so spinning only takes the CPU the host needs
	// (codemode's constant of the same name).
	spinGap = 200 * time.Microsecond
	// After a read lost its CPU spinning, reads sleep for the doorbell
	// at once for a calm: minSpinBackoff when spinPaidReads reads spun
	// without losing it since the last loss, else twice the last calm up
	// to spinBackoff (codemode's constants and nextSpinBackoff of the
	// same names).
	minSpinBackoff = time.Millisecond
	spinBackoff    = 50 * time.Millisecond
	spinPaidReads  = 1024
	// maxRingAnswerBytes bounds the host's ring answer.
	maxRingAnswerBytes = 1 << 10
)

// ring is the program's end of a shared ring pair: its frames go in the
// up ring, the host's come from the down ring, and the socket carries
// only doorbells. One goroutine reads (the leader) and one writes
// (Client.send's writer) at a time.
type ring struct {
	fd       int
	mem      []byte
	up, down []byte // the two rings' data
	size     uint64
	upPos    uint64        // bytes written to the host
	downPos  uint64        // bytes read from the host
	spin     bool          // the last read found its data within readSpin
	calm     time.Time     // no read spins before it: one lost its CPU spinning
	calmFor  time.Duration // the last calm's length
	paid     int           // reads that spun without losing the CPU since it was set
}

// askRing asks the host for a ring pair on fd, before any other frame,
// and maps it; nil when the host granted none (the channel stays on the
// socket). An error means the channel cannot be used at all.
func askRing(fd int) (*ring, error) {
	req, err := wire.AppendFrame(nil, wire.Frame{Kind: wire.KindRing})
	if err != nil {
		return nil, err
	}
	if err := writeAll(fd, req); err != nil {
		return nil, err
	}
	memfd, f, err := readRingAnswer(fd)
	if err != nil || memfd < 0 {
		return nil, err
	}
	defer syscall.Close(memfd)
	m, _ := f.Body.(map[string]any)
	header, _ := m["header_bytes"].(int64)
	size, _ := m["ring_bytes"].(int64)
	if header < progAsleep+8 || size <= 0 || size&(size-1) != 0 || header > 1<<20 || size > 1<<30 {
		return nil, errors.New("the host's ring answer has no usable layout")
	}
	mem, err := syscall.Mmap(memfd, 0, int(header+2*size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &ring{fd: fd, mem: mem, up: mem[header : header+size], down: mem[header+size : header+2*size], size: uint64(size)}, nil
}

// readRingAnswer reads the host's ring answer and the memory file that
// rides on its first byte; memfd is -1 when none did (a refusal).
func readRingAnswer(fd int) (memfd int, f wire.Frame, err error) {
	memfd = -1
	defer func() {
		if err != nil && memfd >= 0 {
			syscall.Close(memfd)
			memfd = -1
		}
	}()
	var hdr [4]byte
	oob := make([]byte, syscall.CmsgSpace(4))
	for got := 0; got < len(hdr); {
		n, oobn, _, _, err := syscall.Recvmsg(fd, hdr[got:], oob, syscall.MSG_CMSG_CLOEXEC)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return memfd, f, err
		case n == 0:
			return memfd, f, io.EOF
		}
		if fds := unixRights(oob[:oobn]); len(fds) > 0 {
			for _, extra := range fds[1:] {
				syscall.Close(extra)
			}
			if memfd < 0 {
				memfd = fds[0]
			} else {
				syscall.Close(fds[0])
			}
		}
		got += n
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxRingAnswerBytes {
		return memfd, f, errors.New("the host's ring answer is too long")
	}
	frame := make([]byte, 4+n)
	copy(frame, hdr[:])
	if _, err := io.ReadFull(&fdReader{fd: fd}, frame[4:]); err != nil {
		return memfd, f, err
	}
	if f, err = wire.ReadFrame(bytes.NewReader(frame)); err != nil {
		return memfd, f, err
	}
	if f.Kind != wire.KindRing {
		return memfd, f, errors.New("the host answered the ring frame with a " + f.Kind + " frame")
	}
	if f.Body == nil && memfd >= 0 {
		syscall.Close(memfd)
		memfd = -1
	}
	return memfd, f, nil
}

// unixRights returns the descriptors an SCM_RIGHTS message carried.
func unixRights(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if got, err := syscall.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

func (r *ring) word(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }

// Read takes what the host wrote, up to len(p). While answers come
// quickly it asks again for up to readSpin before it sleeps, unless a
// read lost its CPU spinning within the calm that set (the machine is
// loaded: spinning then only takes the CPU the host needs); to sleep it marks
// itself asleep and waits in read(2) for the host's doorbell.
func (r *ring) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	start := time.Now()
	last := start
	polls := 0
	spin := r.spin && !start.Before(r.calm)
	for {
		n, err := r.take(p)
		if n > 0 || err != nil {
			if spin {
				r.paid++
			}
			r.spin = time.Since(start) < readSpin
			return n, err
		}
		if spin {
			now := time.Now()
			switch {
			case now.Sub(last) > spinGap:
				if r.paid >= spinPaidReads || r.calmFor < minSpinBackoff {
					r.calmFor = minSpinBackoff
				} else {
					r.calmFor = min(2*r.calmFor, spinBackoff)
				}
				r.calm, r.paid = now.Add(r.calmFor), 0
				spin = false
			case now.Sub(start) < readSpin:
				last = now
				// Let a host reader waiting for this CPU have it.
				if polls++; polls%spinPollsPerYield == 0 {
					syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
				}
				continue
			default:
				r.paid++
				spin = false
			}
		}
		atomic.StoreUint64(r.word(progAsleep), 1)
		if n, err := r.take(p); n > 0 || err != nil {
			atomic.StoreUint64(r.word(progAsleep), 0)
			r.spin = false
			return n, err
		}
		var bells [64]byte
		n, err = syscall.Read(r.fd, bells[:])
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return 0, err
		case n == 0:
			// The host closed the channel: what it wrote first still counts.
			if n, err := r.take(p); n > 0 || err != nil {
				return n, err
			}
			return 0, io.EOF
		}
	}
}

// take copies what the host wrote and the program has not read.
func (r *ring) take(p []byte) (int, error) {
	avail := atomic.LoadUint64(r.word(downHead)) - r.downPos
	if avail > r.size {
		return 0, errors.New("the host's ring position is out of range")
	}
	n := int(min(avail, uint64(len(p))))
	if n == 0 {
		return 0, nil
	}
	off := int(r.downPos % r.size)
	c := copy(p[:n], r.down[off:])
	copy(p[c:n], r.down)
	r.downPos += uint64(n)
	atomic.StoreUint64(r.word(downTail), r.downPos)
	return n, nil
}

// write puts all of b in the host's ring, ringing the host when it
// sleeps, and waits for room while the ring is full.
func (r *ring) write(b []byte) error {
	wait := roomPoll
	for len(b) > 0 {
		used := r.upPos - atomic.LoadUint64(r.word(upTail))
		if used > r.size {
			return errors.New("the host's ring position is out of range")
		}
		n := int(min(r.size-used, uint64(len(b))))
		if n == 0 {
			time.Sleep(wait)
			wait = min(2*wait, maxRoomPoll)
			continue
		}
		wait = roomPoll
		off := int(r.upPos % r.size)
		c := copy(r.up[off:], b[:n])
		copy(r.up, b[c:n])
		r.upPos += uint64(n)
		atomic.StoreUint64(r.word(upHead), r.upPos)
		b = b[n:]
		if atomic.CompareAndSwapUint64(r.word(hostAsleep), 1, 0) {
			if err := writeAll(r.fd, []byte{doorbell}); err != nil {
				return err
			}
		}
	}
	return nil
}
