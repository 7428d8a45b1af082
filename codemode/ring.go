package codemode

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The shared ring pair a program may ask for with a ring frame: one
// memory region, created, sized and sealed by the host, mapped by both
// ends. The channel's bytes then travel through it, one ring each way,
// and the socket carries only doorbell bytes that wake an end asleep in
// read(2). The layout (the prelude reads the sizes from the host's ring
// answer; TestPreludeRingLayout holds its control words' offsets equal
// to these):
//
//	[0, ringHeaderBytes)   control words, each on a cache line of its own
//	[ringHeaderBytes, +ringBytes)            the program's bytes to the host
//	[ringHeaderBytes+ringBytes, +ringBytes)  the host's bytes to the program
//
// Each ring's head (bytes ever written) and tail (bytes ever read) are
// uint64 positions that only grow; its data sits at position mod
// ringBytes.
const (
	// ringHeaderBytes is the size of the control words' page.
	ringHeaderBytes = 4096
	// ringBytes is each direction's ring: past it, a writer waits for
	// the reader to take what is there (a frame larger than the ring
	// passes through in parts).
	ringBytes = 256 << 10
	// ringDoorbell is the one byte either end writes on the socket to
	// wake the other; any other byte from the program is a channel fault.
	ringDoorbell = 1
)

// The control words' offsets. "Sleeping" is set by a reader about to
// sleep in read(2); a writer that publishes bytes and then finds it set
// clears it and rings the doorbell, so a sleep is rung for at most once.
const (
	ringUpHead     = 0   // program's position writing to the host
	ringUpTail     = 64  // host's position reading the program's bytes
	ringHostAsleep = 128 // the host's reader sleeps
	ringDownHead   = 192 // host's position writing to the program
	ringDownTail   = 256 // program's position reading the host's bytes
	ringProgAsleep = 320 // the program's reader sleeps
)

// sharedRing is the host's view of a ring pair. Everything in mem is
// written by a hostile program at any moment: the host keeps its own
// positions (up, down) and never reads them back, checks every position
// it does read against them before using it, copies the program's bytes
// out before anything decodes them, and sealed the region so the
// program cannot shrink it under the host's mapping.
type sharedRing struct {
	mem  []byte
	up   uint64 // bytes taken from the program's ring
	down uint64 // bytes put in the program's ring
}

// newSharedRing creates the region and maps it; fd is the sealed memory
// file to hand the program (the caller closes it once sent).
func newSharedRing() (r *sharedRing, fd int, err error) {
	size := ringHeaderBytes + 2*ringBytes
	fd, err = unix.MemfdCreate("loom-capability-ring", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, -1, fmt.Errorf("creating the shared ring: %w", err)
	}
	fail := func(step string, err error) (*sharedRing, int, error) {
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
	return &sharedRing{mem: mem}, fd, nil
}

// word is the control word at off.
func (r *sharedRing) word(off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&r.mem[off]))
}

func (r *sharedRing) upData() []byte { return r.mem[ringHeaderBytes : ringHeaderBytes+ringBytes] }
func (r *sharedRing) downData() []byte {
	return r.mem[ringHeaderBytes+ringBytes : ringHeaderBytes+2*ringBytes]
}

// take copies into p what the program has written and the host not yet
// taken, up to len(p); 0 when there is nothing. A program position that
// is behind the host's or more than a ring ahead of it is a fault.
func (r *sharedRing) take(p []byte) (int, error) {
	head := atomic.LoadUint64(r.word(ringUpHead))
	avail := head - r.up
	if avail > ringBytes {
		return 0, faultf("the program's ring position %d is not within %d bytes past the host's %d", head, ringBytes, r.up)
	}
	n := int(min(avail, uint64(len(p))))
	if n == 0 {
		return 0, nil
	}
	data, off := r.upData(), int(r.up%ringBytes)
	c := copy(p[:n], data[off:])
	copy(p[c:n], data)
	r.up += uint64(n)
	atomic.StoreUint64(r.word(ringUpTail), r.up)
	return n, nil
}

// put copies as much of p as the program's ring has room for and
// publishes it; 0 when it is full. A program position that is ahead of
// the host's or more than a ring behind it is a fault.
func (r *sharedRing) put(p []byte) (int, error) {
	tail := atomic.LoadUint64(r.word(ringDownTail))
	used := r.down - tail
	if used > ringBytes {
		return 0, faultf("the program's ring position %d is not within %d bytes before the host's %d", tail, ringBytes, r.down)
	}
	n := int(min(ringBytes-used, uint64(len(p))))
	if n == 0 {
		return 0, nil
	}
	data, off := r.downData(), int(r.down%ringBytes)
	c := copy(data[off:], p[:n])
	copy(data, p[c:n])
	r.down += uint64(n)
	atomic.StoreUint64(r.word(ringDownHead), r.down)
	return n, nil
}

// sleeping marks the host's reader as about to sleep (true) or awake.
// The store is sequentially consistent, as is the program's publishing
// of its head: either the reader's next take sees the program's bytes
// or the program sees the mark and rings.
func (r *sharedRing) sleeping(on bool) {
	var v uint64
	if on {
		v = 1
	}
	atomic.StoreUint64(r.word(ringHostAsleep), v)
}

// programAsleep clears the program's sleeping mark and says whether it
// was set: then the host rings the doorbell.
func (r *sharedRing) programAsleep() bool {
	return atomic.CompareAndSwapUint64(r.word(ringProgAsleep), 1, 0)
}

// unmap releases the host's mapping; nothing may use r afterwards.
func (r *sharedRing) unmap() {
	_ = unix.Munmap(r.mem)
	r.mem = nil
}
