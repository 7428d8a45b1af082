package codemode

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ringGuest is a program's end of a shared ring pair, written by hand so
// a test can also break every rule the prelude keeps.
type ringGuest struct {
	t     *testing.T
	conn  *net.UnixConn
	memfd int
	mem   []byte
	up    uint64 // bytes written to the host
	down  uint64 // bytes read from the host
}

// askRing asks the host for a ring on g's channel and maps what it
// grants, failing the test when it grants none.
func askRing(t *testing.T, g *guest) *ringGuest {
	t.Helper()
	g.send(t, Frame{Kind: FrameRing})
	conn := g.conn.(*net.UnixConn)
	f, memfd := recvRingAnswer(t, conn)
	if memfd < 0 {
		t.Fatal("the ring answer carried no memory file")
	}
	m, _ := f.Body.(map[string]any)
	if m["header_bytes"] != int64(ringHeaderBytes) || m["ring_bytes"] != int64(ringBytes) {
		unix.Close(memfd)
		t.Fatalf("ring answer body %v", f.Body)
	}
	return mapGuest(t, conn, memfd)
}

// recvRingAnswer reads the host's ring answer on conn (it arrives whole
// in one read) and the memory file riding on it, -1 when none did.
func recvRingAnswer(t *testing.T, conn *net.UnixConn) (Frame, int) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer conn.SetReadDeadline(time.Time{})
	buf := make([]byte, 1024)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil || n == 0 {
		t.Fatalf("reading the ring answer: %d bytes, %v", n, err)
	}
	memfd := -1
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			t.Fatalf("the ring answer carried %v (%v)", fds, err)
		}
		memfd = fds[0]
	}
	f, err := ReadFrame(bytes.NewReader(buf[:n]))
	if err != nil || f.Kind != FrameRing {
		t.Fatalf("ring answer %+v, %v", f, err)
	}
	return f, memfd
}

// ringAnswerFD is recvRingAnswer's memory file alone.
func ringAnswerFD(t *testing.T, conn *net.UnixConn) int {
	t.Helper()
	_, fd := recvRingAnswer(t, conn)
	return fd
}

// mapGuest maps the ring pair memfd holds as the program's end on conn,
// unmapped and closed at cleanup.
func mapGuest(t *testing.T, conn *net.UnixConn, memfd int) *ringGuest {
	t.Helper()
	mem, err := unix.Mmap(memfd, 0, ringHeaderBytes+2*ringBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(memfd)
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem); unix.Close(memfd) })
	return &ringGuest{t: t, conn: conn, memfd: memfd, mem: mem}
}

func (r *ringGuest) word(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }

func (r *ringGuest) upData() []byte { return r.mem[ringHeaderBytes : ringHeaderBytes+ringBytes] }
func (r *ringGuest) downData() []byte {
	return r.mem[ringHeaderBytes+ringBytes:]
}

// publish moves the program's head to head and rings when the host
// sleeps.
func (r *ringGuest) publish(head uint64) {
	atomic.StoreUint64(r.word(ringUpHead), head)
	if atomic.CompareAndSwapUint64(r.word(ringHostAsleep), 1, 0) {
		r.conn.Write([]byte{ringDoorbell})
	}
}

// write puts b in the host's ring, waiting for room.
func (r *ringGuest) write(b []byte) {
	for len(b) > 0 {
		used := r.up - atomic.LoadUint64(r.word(ringUpTail))
		n := min(int(ringBytes-used), len(b))
		if n == 0 {
			runtime.Gosched()
			continue
		}
		off := int(r.up % ringBytes)
		c := copy(r.upData()[off:], b[:n])
		copy(r.upData(), b[c:n])
		r.up += uint64(n)
		r.publish(r.up)
		b = b[n:]
	}
}

func (r *ringGuest) send(f Frame) {
	var buf bytes.Buffer
	if err := appendFrame(&buf, f); err != nil {
		r.t.Fatal(err)
	}
	r.write(buf.Bytes())
}

// Read takes the host's bytes, sleeping on the socket for its doorbell
// when there are none.
func (r *ringGuest) Read(p []byte) (int, error) {
	for {
		avail := atomic.LoadUint64(r.word(ringDownHead)) - r.down
		if avail == 0 {
			atomic.StoreUint64(r.word(ringProgAsleep), 1)
			if atomic.LoadUint64(r.word(ringDownHead)) != r.down {
				continue
			}
			r.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			var bell [64]byte
			if n, err := r.conn.Read(bell[:]); n == 0 {
				return 0, err
			}
			continue
		}
		n := min(int(avail), len(p))
		off := int(r.down % ringBytes)
		c := copy(p[:n], r.downData()[off:])
		copy(p[c:n], r.downData())
		r.down += uint64(n)
		atomic.StoreUint64(r.word(ringDownTail), r.down)
		return n, nil
	}
}

func (r *ringGuest) read() Frame {
	r.t.Helper()
	f, err := ReadFrame(r)
	if err != nil {
		r.t.Fatal(err)
	}
	return f
}

// blobRoute answers "echo" with its arguments.
func blobRoute(_ context.Context, cap string, args map[string]any) (any, error) {
	if cap == "echo" {
		return args, nil
	}
	return nil, &CapError{Code: CodeUnknownCapability, Message: "no " + cap}
}

// TestRingCarriesFramesLargerThanItself: calls and answers several times
// a ring's size pass through in parts, and many small ones after them
// wrap around the ring at every offset; each arrives whole, in order.
func TestRingCarriesFramesLargerThanItself(t *testing.T) {
	t.Parallel()
	g, finish := testChannel(t, blobRoute)
	r := askRing(t, g)
	blob := make([]byte, 3*ringBytes+17)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	id := uint64(0)
	check := func(payload []byte) {
		t.Helper()
		id++
		r.send(call(id, "echo", map[string]any{"blob": payload}))
		f := r.read()
		ok, _ := f.Body.(map[string]any)["ok"].(map[string]any)
		if f.ID != id || !bytes.Equal(ok["blob"].([]byte), payload) {
			t.Fatalf("call %d came back as id %d holding %d bytes", id, f.ID, len(ok["blob"].([]byte)))
		}
	}
	for range 2 {
		check(blob)
	}
	for i := range 2000 {
		check(blob[:i%97])
	}
	r.conn.CloseWrite()
	if err, rec := finish(); err != nil || rec.OK != int(id) {
		t.Fatalf("serve = %v, %d calls ok, want nil and %d", err, rec.OK, id)
	}
}

// TestRingWakesASleepingHost: a host with nothing to read marks itself
// asleep and sleeps on the socket; a call published then is served once
// the program rings, as the mark asks it to.
func TestRingWakesASleepingHost(t *testing.T) {
	t.Parallel()
	g, finish := testChannel(t, blobRoute)
	r := askRing(t, g)
	rtWaitWord(t, r, ringHostAsleep, func(v uint64) bool { return v == 1 })
	r.send(call(1, "echo", map[string]any{"x": 1}))
	if f := r.read(); f.ID != 1 || f.Kind != FrameCapResult {
		t.Fatalf("answer %+v", f)
	}
	r.conn.CloseWrite()
	if err, _ := finish(); err != nil {
		t.Fatalf("serve = %v", err)
	}
}

// TestRingFaults: a program that breaks the ring's rules ends its
// channel with a fault, whatever position or byte it forges.
func TestRingFaults(t *testing.T) {
	t.Parallel()
	cases := map[string]func(g *guest, r func() *ringGuest){
		"head_behind_the_host": func(_ *guest, r func() *ringGuest) {
			r().publish(^uint64(0))
		},
		"head_past_a_ring": func(_ *guest, r func() *ringGuest) {
			r().publish(ringBytes + 1)
		},
		"not_a_doorbell": func(_ *guest, r func() *ringGuest) {
			rg := r()
			rtWaitWord(rg.t, rg, ringHostAsleep, func(v uint64) bool { return v == 1 })
			rg.conn.Write([]byte{'x'})
		},
		"asked_twice": func(_ *guest, r func() *ringGuest) {
			r().send(Frame{Kind: FrameRing})
		},
		"ring_frame_with_a_body": func(g *guest, _ func() *ringGuest) {
			g.send(t, Frame{Kind: FrameRing, Body: "please"})
		},
		"sent_more_before_the_answer": func(g *guest, _ func() *ringGuest) {
			var b bytes.Buffer
			appendFrame(&b, Frame{Kind: FrameRing})
			appendFrame(&b, call(1, "echo", nil))
			g.conn.Write(b.Bytes())
		},
	}
	for name, misbehave := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, finish := testChannel(t, blobRoute)
			misbehave(g, func() *ringGuest { return askRing(t, g) })
			err, _ := finish()
			var cf *ChannelFault
			if !errors.As(err, &cf) {
				t.Fatalf("serve = %v, want a ChannelFault", err)
			}
		})
	}
}

// TestSharedRingRefusesForgedPositions: the host writes nothing when
// the program's read position is ahead of what the host wrote or a ring
// behind it, and reads nothing when the program's write position is
// behind the host's or a ring ahead; its own positions stay put.
func TestSharedRingRefusesForgedPositions(t *testing.T) {
	t.Parallel()
	r := mappedRing(t)
	p := make([]byte, 8)
	// Read positions ahead of the host's 0, and a ring and one behind it.
	for _, tail := range []uint64{1, ^uint64(0) - ringBytes} {
		atomic.StoreUint64(r.word(ringDownTail), tail)
		if n, err := r.put(p); n != 0 || !isFault(err) || r.down != 0 {
			t.Errorf("put with the program's tail at %d: %d bytes, %v, host at %d", tail, n, err, r.down)
		}
	}
	// Write positions behind the host's 0, and a ring and one ahead.
	for _, head := range []uint64{^uint64(0), ringBytes + 1} {
		atomic.StoreUint64(r.word(ringUpHead), head)
		if n, err := r.take(p); n != 0 || !isFault(err) || r.up != 0 {
			t.Errorf("take with the program's head at %d: %d bytes, %v, host at %d", head, n, err, r.up)
		}
	}
	// The control: honest positions move bytes.
	atomic.StoreUint64(r.word(ringDownTail), 0)
	atomic.StoreUint64(r.word(ringUpHead), uint64(len(p)))
	if n, err := r.put(p); n != len(p) || err != nil {
		t.Fatalf("put with honest positions: %d, %v", n, err)
	}
	if n, err := r.take(p); n != len(p) || err != nil {
		t.Fatalf("take with honest positions: %d, %v", n, err)
	}
}

// mappedRing is a ring pair the test alone maps, unmapped at cleanup.
func mappedRing(t *testing.T) *sharedRing {
	t.Helper()
	r, fd, err := newSharedRing()
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	t.Cleanup(r.unmap)
	return r
}

func isFault(err error) bool {
	var fe *FrameError
	return errors.As(err, &fe) && fe.Code == CodeChannelFault
}

// TestSharedRingIsSealed: the program holds the ring's memory file, and
// cannot shrink or grow it (a shrunk file would fault the host's next
// touch of its mapping) or lift the seals; the control shows an
// unsealed memory file can be shrunk, so the probe can fail.
func TestSharedRingIsSealed(t *testing.T) {
	t.Parallel()
	r, fd, err := newSharedRing()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	defer r.unmap()
	if err := unix.Ftruncate(fd, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("shrinking the ring's file: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(fd, 2*(ringHeaderBytes+2*ringBytes)); !errors.Is(err, unix.EPERM) {
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
