package transport

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/agentloom/loom/codemode/internal/wire"
	"golang.org/x/sys/unix"
)

// The shared ring pair a program may ask for with a ring frame: one
// memory region, created, sized and sealed by the host, mapped by both
// ends. The channel's bytes then travel through it, one ring each way,
// and the socket carries only doorbell bytes that wake an end asleep in
// read(2). The layout (the prelude reads the sizes from the host's ring
// answer; codemode's TestPreludeRingLayout holds its control words'
// offsets equal to these):
//
//	[0, RingHeaderBytes)   control words, each on a cache line of its own
//	[RingHeaderBytes, +RingBytes)            the program's bytes to the host
//	[RingHeaderBytes+RingBytes, +RingBytes)  the host's bytes to the program
//
// Each ring's head (bytes ever written) and tail (bytes ever read) are
// uint64 positions that only grow; its data sits at position mod
// RingBytes.
const (
	// RingHeaderBytes is the size of the control words' page.
	RingHeaderBytes = 4096
	// RingBytes is each direction's ring: past it, a writer waits for
	// the reader to take what is there (a frame larger than the ring
	// passes through in parts).
	RingBytes = 256 << 10
	// RingDoorbell is the one byte either end writes on the socket to
	// wake the other; any other byte from the program is a channel fault.
	RingDoorbell = 1
)

// The control words' offsets. "Sleeping" is set by a reader about to
// sleep in read(2); a writer that publishes bytes and then finds it set
// clears it and rings the doorbell, so a sleep is rung for at most once.
const (
	RingUpHead     = 0   // program's position writing to the host
	RingUpTail     = 64  // host's position reading the program's bytes
	RingHostAsleep = 128 // the host's reader sleeps
	RingDownHead   = 192 // host's position writing to the program
	RingDownTail   = 256 // program's position reading the host's bytes
	RingProgAsleep = 320 // the program's reader sleeps
)

// Ring is the host's view of a ring pair. Everything in mem is
// written by a hostile program at any moment: the host keeps its own
// positions (up, down) and never reads them back, checks every position
// it does read against them before using it, copies the program's bytes
// out before anything decodes them, and sealed the region so the
// program cannot shrink it under the host's mapping.
type Ring struct {
	mem  []byte
	up   uint64 // bytes taken from the program's ring
	down uint64 // bytes put in the program's ring
}

// NewRing creates the region and maps it; fd is the sealed memory
// file to hand the program (the caller closes it once sent). The Ring is
// for one Conn.ShareRing, which unmaps it when the program cannot be
// given it, and otherwise the Conn at its Close.
func NewRing() (r *Ring, fd int, err error) {
	size := RingHeaderBytes + 2*RingBytes
	fd, err = unix.MemfdCreate("loom-capability-ring", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, -1, fmt.Errorf("creating the shared ring: %w", err)
	}
	fail := func(step string, err error) (*Ring, int, error) {
		unix.Close(fd)
		return nil, -1, fmt.Errorf("%s the shared ring: %w", step, err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fail("sizing", err)
	}
	// Sealed at its size: a program that could shrink the file would make
	// the host's next touch of a page past its end a SIGBUS.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		return fail("sealing", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail("mapping", err)
	}
	return &Ring{mem: mem}, fd, nil
}

// word is the control word at off.
func (r *Ring) word(off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&r.mem[off]))
}

func (r *Ring) upData() []byte { return r.mem[RingHeaderBytes : RingHeaderBytes+RingBytes] }
func (r *Ring) downData() []byte {
	return r.mem[RingHeaderBytes+RingBytes : RingHeaderBytes+2*RingBytes]
}

// take copies into p what the program has written and the host not yet
// taken, up to len(p); 0 when there is nothing. A program position that
// is behind the host's or more than a ring ahead of it is a fault.
func (r *Ring) take(p []byte) (int, error) {
	head := atomic.LoadUint64(r.word(RingUpHead))
	avail := head - r.up
	if avail > RingBytes {
		return 0, wire.Faultf("the program's ring position %d is not within %d bytes past the host's %d", head, RingBytes, r.up)
	}
	n := int(min(avail, uint64(len(p))))
	if n == 0 {
		return 0, nil
	}
	data, off := r.upData(), int(r.up%RingBytes)
	c := copy(p[:n], data[off:])
	copy(p[c:n], data)
	r.up += uint64(n)
	atomic.StoreUint64(r.word(RingUpTail), r.up)
	return n, nil
}

// put copies as much of p as the program's ring has room for and
// publishes it; 0 when it is full. A program position that is ahead of
// the host's or more than a ring behind it is a fault.
func (r *Ring) put(p []byte) (int, error) {
	tail := atomic.LoadUint64(r.word(RingDownTail))
	used := r.down - tail
	if used > RingBytes {
		return 0, wire.Faultf("the program's ring position %d is not within %d bytes before the host's %d", tail, RingBytes, r.down)
	}
	n := int(min(RingBytes-used, uint64(len(p))))
	if n == 0 {
		return 0, nil
	}
	data, off := r.downData(), int(r.down%RingBytes)
	c := copy(data[off:], p[:n])
	copy(data, p[c:n])
	r.down += uint64(n)
	atomic.StoreUint64(r.word(RingDownHead), r.down)
	return n, nil
}

// sleeping marks the host's reader as about to sleep (true) or awake.
// The store is sequentially consistent, as is the program's publishing
// of its head: either the reader's next take sees the program's bytes
// or the program sees the mark and rings.
func (r *Ring) sleeping(on bool) {
	var v uint64
	if on {
		v = 1
	}
	atomic.StoreUint64(r.word(RingHostAsleep), v)
}

// programAsleep clears the program's sleeping mark and says whether it
// was set: then the host rings the doorbell.
func (r *Ring) programAsleep() bool {
	return atomic.CompareAndSwapUint64(r.word(RingProgAsleep), 1, 0)
}

// unmap releases the host's mapping; nothing may use r afterwards.
func (r *Ring) unmap() {
	_ = unix.Munmap(r.mem)
	r.mem = nil
}
