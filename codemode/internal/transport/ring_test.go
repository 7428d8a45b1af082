package transport

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentloom/loom/codemode/internal/wire"
	"golang.org/x/sys/unix"
)

// TestSharedRingRefusesForgedPositions: the host writes nothing when
// the program's read position is ahead of what the host wrote or a ring
// behind it, and reads nothing when the program's write position is
// behind the host's or a ring ahead; its own positions stay put.
func TestSharedRingRefusesForgedPositions(t *testing.T) {
	t.Parallel()
	r := mappedRing(t)
	p := make([]byte, 8)
	// Read positions ahead of the host's 0, and a ring and one behind it.
	for _, tail := range []uint64{1, ^uint64(0) - RingBytes} {
		atomic.StoreUint64(r.word(RingDownTail), tail)
		if n, err := r.put(p); n != 0 || !isFault(err) || r.down != 0 {
			t.Errorf("put with the program's tail at %d: %d bytes, %v, host at %d", tail, n, err, r.down)
		}
	}
	// Write positions behind the host's 0, and a ring and one ahead.
	for _, head := range []uint64{^uint64(0), RingBytes + 1} {
		atomic.StoreUint64(r.word(RingUpHead), head)
		if n, err := r.take(p); n != 0 || !isFault(err) || r.up != 0 {
			t.Errorf("take with the program's head at %d: %d bytes, %v, host at %d", head, n, err, r.up)
		}
	}
	// The control: honest positions move bytes.
	atomic.StoreUint64(r.word(RingDownTail), 0)
	atomic.StoreUint64(r.word(RingUpHead), uint64(len(p)))
	if n, err := r.put(p); n != len(p) || err != nil {
		t.Fatalf("put with honest positions: %d, %v", n, err)
	}
	if n, err := r.take(p); n != len(p) || err != nil {
		t.Fatalf("take with honest positions: %d, %v", n, err)
	}
}

// mappedRing is a ring pair the test alone maps, unmapped at cleanup.
func mappedRing(t *testing.T) *Ring {
	t.Helper()
	r, fd, err := NewRing()
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	t.Cleanup(r.unmap)
	return r
}

func isFault(err error) bool {
	var fe *wire.FrameError
	return errors.As(err, &fe) && fe.Code == wire.CodeChannelFault
}

// TestSharedRingIsSealed: the program holds the ring's memory file, and
// cannot shrink or grow it (a shrunk file would fault the host's next
// touch of its mapping) or lift the seals; the control shows an
// unsealed memory file can be shrunk, so the probe can fail.
func TestSharedRingIsSealed(t *testing.T) {
	t.Parallel()
	r, fd, err := NewRing()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	defer r.unmap()
	if err := unix.Ftruncate(fd, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("shrinking the ring's file: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(fd, 2*(RingHeaderBytes+2*RingBytes)); !errors.Is(err, unix.EPERM) {
		t.Errorf("growing the ring's file: %v, want EPERM", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE); !errors.Is(err, unix.EPERM) {
		t.Errorf("adding a seal: %v, want EPERM", err)
	}
	control, err := unix.MemfdCreate("control", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(control)
	if err := unix.Ftruncate(control, 4096); err != nil {
		t.Fatal(err)
	}
	if err := unix.Ftruncate(control, 0); err != nil {
		t.Fatalf("the control could not shrink an unsealed file: %v", err)
	}
}
