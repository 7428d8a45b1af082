package codemode

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Helpers of the red team's ring tests (redteam_ring_*_test.go): a
// hostConn that already shares a ring with a hand-written program end,
// without a serve loop, so a test can drive Read and Write itself; and a
// channel whose *channel a test can end itself.

// rtRecvRingFD reads the host's ring answer on conn and returns the
// memory file riding on it, or -1 when none did.
func rtRecvRingFD(t *testing.T, conn *net.UnixConn) int {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer conn.SetReadDeadline(time.Time{})
	buf := make([]byte, 1024)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil || n == 0 {
		t.Fatalf("reading the ring answer: %d bytes, %v", n, err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		t.Fatalf("the ring answer carried %v (%v)", fds, err)
	}
	return fds[0]
}

// rtPair is a channel pair whose host end is closed at cleanup.
func rtPair(t *testing.T) (*hostConn, *net.UnixConn) {
	t.Helper()
	host, prog, err := channelPair()
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

// rtRingAnswer is the host's encoded ring answer.
func rtRingAnswer(t *testing.T) []byte {
	var b bytes.Buffer
	if err := appendFrame(&b, Frame{Kind: FrameRing, Body: RingBody(ringHeaderBytes, ringBytes)}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rtGrant is a host end already moved onto a ring, and the program's
// end of it, mapped.
func rtGrant(t *testing.T) (*hostConn, *ringGuest) {
	t.Helper()
	host, conn := rtPair(t)
	r, fd, err := newSharedRing()
	if err != nil {
		t.Fatal(err)
	}
	err = host.shareRing(r, fd, rtRingAnswer(t))
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	memfd := rtRecvRingFD(t, conn)
	if memfd < 0 {
		t.Fatal("the host granted no memory file")
	}
	mem, err := unix.Mmap(memfd, 0, ringHeaderBytes+2*ringBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem); unix.Close(memfd) })
	return host, &ringGuest{t: t, conn: conn, memfd: memfd, mem: mem}
}

// rtChannel is testChannel keeping the *channel, so a test can end it
// while the program is still there (testChannel's finish waits for
// serve first).
func rtChannel(t *testing.T, route router) (*guest, *hostConn, *channel, <-chan error) {
	t.Helper()
	host, conn := rtPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := newChannel(ctx, host, route, newRecorder(time.Now))
	served := make(chan error, 1)
	go func() { served <- ch.serve() }()
	return &guest{conn: conn}, host, ch, served
}

// rtWaitWord waits until the word at off of the program's mapping
// satisfies ok, failing the test after a while.
func rtWaitWord(t *testing.T, r *ringGuest, off int, ok func(uint64) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(atomic.LoadUint64(r.word(off))) {
		if time.Now().After(deadline) {
			t.Fatalf("control word %d stayed at %d", off, atomic.LoadUint64(r.word(off)))
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// rtRingResources counts this process's mappings and descriptors of the
// host's ring memory file.
func rtRingResources(t *testing.T) (maps, fds int) {
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
