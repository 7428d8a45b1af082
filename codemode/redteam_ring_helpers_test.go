package codemode

import (
	"bytes"
	"context"
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
	host, conn := channelEnds(t)
	r, fd, err := newSharedRing()
	if err != nil {
		t.Fatal(err)
	}
	err = host.shareRing(r, fd, rtRingAnswer(t))
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	_, memfd := recvRingAnswer(t, conn)
	if memfd < 0 {
		t.Fatal("the host granted no memory file")
	}
	return host, mapGuest(t, conn, memfd)
}

// rtChannel is testChannel keeping the *channel, so a test can end it
// while the program is still there (testChannel's finish waits for
// serve first).
func rtChannel(t *testing.T, route router) (*guest, *hostConn, *channel, <-chan error) {
	t.Helper()
	host, conn := channelEnds(t)
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
