// Package transporttest is a program's end of a capability channel,
// written by hand so a test can also break every rule the prelude keeps:
// a socket end beside a transport.Conn, and Guest, the program's end of
// a shared ring pair. The transport's own tests and codemode's channel
// tests share it. Only tests import it.
package transporttest

import (
	"bytes"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/wire"
	"golang.org/x/sys/unix"
)

// Ends is a channel's two ends, the program's as a connection, both
// closed at cleanup.
func Ends(t *testing.T) (*transport.Conn, *net.UnixConn) {
	t.Helper()
	host, prog, err := transport.Pair()
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.FileConn(prog)
	prog.Close()
	if err != nil {
		t.Fatal(err)
	}
	conn := c.(*net.UnixConn)
	t.Cleanup(func() { host.Close(); conn.Close() })
	return host, conn
}

// Guest is a program's end of a shared ring pair, mapped.
type Guest struct {
	T    *testing.T
	Conn *net.UnixConn
	Mem  []byte
	Up   uint64 // bytes written to the host
	Down uint64 // bytes read from the host
}

// RecvRingAnswer reads the host's ring answer on conn (it arrives whole
// in one read) and the memory file riding on it, -1 when none did.
func RecvRingAnswer(t *testing.T, conn *net.UnixConn) (wire.Frame, int) {
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
	f, err := wire.ReadFrame(bytes.NewReader(buf[:n]))
	if err != nil || f.Kind != wire.FrameRing {
		t.Fatalf("ring answer %+v, %v", f, err)
	}
	return f, memfd
}

// RingAnswerFD is RecvRingAnswer's memory file alone.
func RingAnswerFD(t *testing.T, conn *net.UnixConn) int {
	t.Helper()
	_, fd := RecvRingAnswer(t, conn)
	return fd
}

// MapGuest maps the ring pair memfd holds as the program's end on conn,
// unmapped and closed at cleanup.
func MapGuest(t *testing.T, conn *net.UnixConn, memfd int) *Guest {
	t.Helper()
	mem, err := unix.Mmap(memfd, 0, transport.RingHeaderBytes+2*transport.RingBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(memfd)
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem); unix.Close(memfd) })
	return &Guest{T: t, Conn: conn, Mem: mem}
}

// Word is the control word at off.
func (r *Guest) Word(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.Mem[off])) }

// Load reads the control word at off.
func (r *Guest) Load(off int) uint64 { return atomic.LoadUint64(r.Word(off)) }

// Store sets the control word at off.
func (r *Guest) Store(off int, v uint64) { atomic.StoreUint64(r.Word(off), v) }

// UpData is the program's ring to the host.
func (r *Guest) UpData() []byte {
	return r.Mem[transport.RingHeaderBytes : transport.RingHeaderBytes+transport.RingBytes]
}

// DownData is the host's ring to the program.
func (r *Guest) DownData() []byte {
	return r.Mem[transport.RingHeaderBytes+transport.RingBytes:]
}

// Publish moves the program's head to head and rings when the host
// sleeps.
func (r *Guest) Publish(head uint64) {
	atomic.StoreUint64(r.Word(transport.RingUpHead), head)
	if atomic.CompareAndSwapUint64(r.Word(transport.RingHostAsleep), 1, 0) {
		r.Conn.Write([]byte{transport.RingDoorbell})
	}
}

// write puts b in the host's ring, waiting for room.
func (r *Guest) write(b []byte) {
	for len(b) > 0 {
		used := r.Up - atomic.LoadUint64(r.Word(transport.RingUpTail))
		n := min(int(transport.RingBytes-used), len(b))
		if n == 0 {
			runtime.Gosched()
			continue
		}
		off := int(r.Up % transport.RingBytes)
		c := copy(r.UpData()[off:], b[:n])
		copy(r.UpData(), b[c:n])
		r.Up += uint64(n)
		r.Publish(r.Up)
		b = b[n:]
	}
}

// Send encodes f and puts it in the host's ring, waiting for room.
func (r *Guest) Send(f wire.Frame) {
	var buf bytes.Buffer
	if err := wire.AppendFrame(&buf, f); err != nil {
		r.T.Fatal(err)
	}
	r.write(buf.Bytes())
}

// Read takes the host's bytes, sleeping on the socket for its doorbell
// when there are none.
func (r *Guest) Read(p []byte) (int, error) {
	for {
		avail := atomic.LoadUint64(r.Word(transport.RingDownHead)) - r.Down
		if avail == 0 {
			atomic.StoreUint64(r.Word(transport.RingProgAsleep), 1)
			if atomic.LoadUint64(r.Word(transport.RingDownHead)) != r.Down {
				continue
			}
			r.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			var bell [64]byte
			if n, err := r.Conn.Read(bell[:]); n == 0 {
				return 0, err
			}
			continue
		}
		n := min(int(avail), len(p))
		off := int(r.Down % transport.RingBytes)
		c := copy(p[:n], r.DownData()[off:])
		copy(p[c:n], r.DownData())
		r.Down += uint64(n)
		atomic.StoreUint64(r.Word(transport.RingDownTail), r.Down)
		return n, nil
	}
}

// ReadFrame reads the host's next frame, failing the test on an error.
func (r *Guest) ReadFrame() wire.Frame {
	r.T.Helper()
	f, err := wire.ReadFrame(r)
	if err != nil {
		r.T.Fatal(err)
	}
	return f
}

// RingAnswer is the host's encoded ring answer.
func RingAnswer(t *testing.T) []byte {
	var b bytes.Buffer
	if err := wire.AppendFrame(&b, wire.Frame{Kind: wire.FrameRing, Body: wire.RingBody(transport.RingHeaderBytes, transport.RingBytes)}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Grant is a host end already moved onto a ring, without a serve loop,
// so a test can drive Read and Write itself, and the program's end of
// it, mapped.
func Grant(t *testing.T) (*transport.Conn, *Guest) {
	t.Helper()
	host, conn := Ends(t)
	r, fd, err := transport.NewRing()
	if err != nil {
		t.Fatal(err)
	}
	err = host.ShareRing(r, fd, RingAnswer(t))
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	_, memfd := RecvRingAnswer(t, conn)
	if memfd < 0 {
		t.Fatal("the host granted no memory file")
	}
	return host, MapGuest(t, conn, memfd)
}

// WaitWord waits until the word at off of the program's mapping
// satisfies ok, failing the test after a while.
func WaitWord(t *testing.T, r *Guest, off int, ok func(uint64) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(atomic.LoadUint64(r.Word(off))) {
		if time.Now().After(deadline) {
			t.Fatalf("control word %d stayed at %d", off, atomic.LoadUint64(r.Word(off)))
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// RingResources counts this process's mappings and descriptors of the
// host's ring memory file.
func RingResources(t *testing.T) (maps, fds int) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	maps = strings.Count(string(b), "loom-capability-ring")
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(l, "loom-capability-ring") {
			fds++
		}
	}
	return maps, fds
}
