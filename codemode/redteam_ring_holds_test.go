package codemode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Red-team probes of the shared ring that found the host holding: each
// could fail, and says how.

// TestRedteamRingEndIsBoundedWhileABigAnswerFillsTheRing: a program asks
// for a 15 MiB answer (fs.read-sized, a heavy call) and never reads its
// ring; the host's writer fills the ring and waits for room. end() must
// still finish within outcomeWriteTimeout (its deadline stops the
// writer holding wmu, then its own outcome write); Close alone must stop
// the writer too; and so must both when the program has closed its end
// (on the ring, the writer never learns that from a send).
func TestRedteamRingEndIsBoundedWhileABigAnswerFillsTheRing(t *testing.T) {
	t.Parallel()
	big := make([]byte, 15<<20)
	route := func(_ context.Context, cap string, _ map[string]any) (any, error) {
		return big, nil
	}
	for _, tc := range []struct {
		name        string
		byClose     bool
		programGone bool
	}{
		{"end", false, false},
		{"close", true, false},
		{"end_program_gone", false, true},
		{"close_program_gone", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, host, ch, served := rtChannel(t, route)
			r := askRing(t, g)
			r.send(call(1, "fs.read", map[string]any{"path": "big"}))
			rtWaitWord(t, r, ringDownHead, func(v uint64) bool { return v == ringBytes })
			if tc.programGone {
				r.conn.Close()
			}
			start := time.Now()
			if tc.byClose {
				host.Close()
				waited := make(chan struct{})
				go func() { ch.calls.Wait(); close(waited) }()
				select {
				case <-waited:
				case <-time.After(2 * time.Second):
					t.Fatal("the writer of a big answer was still waiting for room 2s after Close")
				}
			} else {
				ch.end(CodeExecutionEnding, "over")
			}
			if el := time.Since(start); el > outcomeWriteTimeout+400*time.Millisecond {
				t.Fatalf("ending took %v with a full ring, past the %v outcome bound", el, outcomeWriteTimeout)
			}
			host.Close()
			select {
			case <-served:
			case <-time.After(5 * time.Second):
				t.Fatal("serve did not return after Close")
			}
		})
	}
}

// TestRedteamRingCloseRacingReadsAndWritesNeverUnmapsUnderThem: Close
// lands at random moments while a read sleeps or copies (the program
// keeps publishing) and a write waits for room or copies (the program
// never reads). Unmapping under either would fault the test binary
// (SIGSEGV) or panic on the nil mapping; both must return, and the
// mapping must be gone once they have.
func TestRedteamRingCloseRacingReadsAndWritesNeverUnmapsUnderThem(t *testing.T) {
	t.Parallel()
	for i := range 30 {
		host, rg := rtGrant(t)
		var stop atomic.Bool
		pub := make(chan struct{})
		go func() { // the program publishes bytes as the host takes them
			defer close(pub)
			for !stop.Load() {
				if rg.up-atomicLoad(rg, ringUpTail) < ringBytes/2 {
					rg.up += 4096
					rg.publish(rg.up)
				}
				time.Sleep(20 * time.Microsecond)
			}
		}()
		reads, writes := make(chan error, 1), make(chan error, 1)
		go func() {
			buf := make([]byte, 64<<10)
			for {
				if _, err := host.Read(buf); err != nil {
					reads <- err
					return
				}
			}
		}()
		go func() {
			_, err := host.Write(make([]byte, 2*ringBytes))
			writes <- err
		}()
		time.Sleep(time.Duration(i%6) * 300 * time.Microsecond)
		host.Close()
		for _, c := range []chan error{reads, writes} {
			select {
			case err := <-c:
				if err == nil {
					t.Fatalf("round %d: a read or write returned nil after Close", i)
				}
			case <-time.After(3 * time.Second):
				t.Fatalf("round %d: a read or write did not return after Close", i)
			}
		}
		stop.Store(true)
		<-pub
		host.mu.Lock()
		mapped := host.ring.Load().mem != nil
		host.mu.Unlock()
		if mapped {
			t.Fatalf("round %d: the host's mapping outlived Close and its last read and write", i)
		}
	}
}

// TestRedteamRingLeavesNoMappingOrDescriptor: every way a ring can end
// (Close after the grant, Close before it, a program gone before its
// answer, a channel fault, Close while a write waits for room) leaves
// no mapping of the ring's memory file and no descriptor of it in the
// host. Not parallel: it counts the whole process's. The program's end
// never maps the file here, and closes what it receives.
func TestRedteamRingLeavesNoMappingOrDescriptor(t *testing.T) {
	baseMaps, baseFDs := rtRingResources(t)
	grant := func(t *testing.T, host *hostConn) error {
		r, fd, err := newSharedRing()
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		return host.shareRing(r, fd, rtRingAnswer(t))
	}
	cases := map[string]func(t *testing.T){
		"close_after_the_grant": func(t *testing.T) {
			host, conn := channelEnds(t)
			if err := grant(t, host); err != nil {
				t.Fatal(err)
			}
			unix.Close(ringAnswerFD(t, conn))
			host.Close()
		},
		"close_before_the_grant": func(t *testing.T) {
			host, _ := channelEnds(t)
			host.Close()
			if err := grant(t, host); err == nil {
				t.Fatal("a ring was granted on a closed channel")
			}
		},
		"program_gone_before_its_answer": func(t *testing.T) {
			host, conn := channelEnds(t)
			conn.Close()
			if err := grant(t, host); err == nil {
				t.Fatal("a ring was granted to a program whose end is closed")
			}
			if host.ring.Load() != nil {
				t.Fatal("the channel moved onto a ring its program never got")
			}
		},
		"channel_fault": func(t *testing.T) {
			g, finish := testChannel(t, blobRoute)
			g.send(t, Frame{Kind: FrameRing})
			memfd := ringAnswerFD(t, g.conn.(*net.UnixConn))
			mem, err := unix.Mmap(memfd, 0, ringHeaderBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			unix.Close(memfd)
			if err != nil {
				t.Fatal(err)
			}
			atomic.StoreUint64((*uint64)(unsafe.Pointer(&mem[ringUpHead])), ^uint64(0))
			unix.Munmap(mem)
			g.conn.Write([]byte{ringDoorbell})
			var cf *ChannelFault
			if err, _ := finish(); !errors.As(err, &cf) {
				t.Fatalf("serve = %v, want a ChannelFault", err)
			}
		},
		"close_while_a_write_waits": func(t *testing.T) {
			host, conn := channelEnds(t)
			if err := grant(t, host); err != nil {
				t.Fatal(err)
			}
			unix.Close(ringAnswerFD(t, conn))
			done := make(chan error, 1)
			go func() { _, err := host.Write(make([]byte, 2*ringBytes)); done <- err }()
			time.Sleep(5 * time.Millisecond)
			host.Close()
			if err := <-done; err == nil {
				t.Fatal("the write finished into a ring nobody reads")
			}
		},
	}
	for name, run := range cases {
		t.Run(name, run)
		if m, f := rtRingResources(t); m != baseMaps || f != baseFDs {
			t.Errorf("after %s: %d mappings and %d descriptors of the ring's file, want %d and %d", name, m, f, baseMaps, baseFDs)
		}
	}
}

// TestRedteamRingDescriptorsSentWithDoorbellsAreNotKept: once the ring is
// granted the host reads its socket with read(2) for doorbells; a
// program that attaches descriptors (SCM_RIGHTS) to valid doorbell bytes
// must not leave them open in the host (read(2) has no room for them,
// so the kernel must drop them). The probe counts the descriptors of one
// pipe open in this process after the host has read every doorbell.
func TestRedteamRingDescriptorsSentWithDoorbellsAreNotKept(t *testing.T) {
	t.Parallel()
	host, rg := rtGrant(t)
	reads := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := host.Read(buf); err != nil {
				reads <- err
				return
			}
		}
	}()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	target, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", p[1]))
	count := func() int {
		n := 0
		ents, _ := os.ReadDir("/proc/self/fd")
		for _, e := range ents {
			if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l == target {
				n++
			}
		}
		return n
	}
	raw, err := rg.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	const sent = 40
	for range sent {
		var serr error
		raw.Write(func(fd uintptr) bool {
			serr = unix.Sendmsg(int(fd), []byte{ringDoorbell}, unix.UnixRights(p[0], p[0]), nil, 0)
			return true
		})
		if serr != nil {
			t.Fatal(serr)
		}
	}
	unix.Close(p[0])
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := unix.IoctlGetInt(host.fd, unix.SIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && atomicLoad(rg, ringHostAsleep) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host left %d doorbell bytes unread", n)
		}
		time.Sleep(time.Millisecond)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d descriptors of the pipe are open after the host read %d doorbells carrying %d of them; want 1 (the test's own)", n, sent, 2*sent)
	}
	host.Close()
	if err := <-reads; err == nil {
		t.Fatal("read returned nil after Close")
	}
}

// TestRedteamRingPositionsWrapAtTwoToTheSixtyFour: the host's positions
// are free-running uint64s; near 2^64 they wrap, and the program's may
// have wrapped already. Differences, not comparisons, must decide: a
// head 8 bytes past a host position 5 short of 2^64 is honest (and its
// bytes sit at the end and start of the ring), a full ring exactly a
// ring ahead is honest, one byte more or one behind is a fault; the
// same for the host's writing side. A host comparing positions directly
// (head < up) fails here.
func TestRedteamRingPositionsWrapAtTwoToTheSixtyFour(t *testing.T) {
	t.Parallel()
	r := mappedRing(t)
	up := r.upData()
	for i := range up {
		up[i] = byte(i * 13)
	}
	word := func(off int) uint64 { return atomic.LoadUint64(r.word(off)) }
	set := func(off int, v uint64) { atomic.StoreUint64(r.word(off), v) }

	// Taking: the host 5 bytes short of 2^64, the program 3 past it.
	r.up = ^uint64(0) - 4
	set(ringUpHead, 3)
	p := make([]byte, 16)
	if n, err := r.take(p); n != 8 || err != nil {
		t.Fatalf("take across 2^64: %d, %v; want 8, nil", n, err)
	}
	want := append(append([]byte{}, up[ringBytes-5:]...), up[:3]...)
	if !bytes.Equal(p[:8], want) || r.up != 3 || word(ringUpTail) != 3 {
		t.Fatalf("take across 2^64 read %v, host at %d, tail word %d; want %v at 3", p[:8], r.up, word(ringUpTail), want)
	}
	// Exactly a ring ahead, from a position that wraps on the way.
	r.up = ^uint64(0) - 100
	set(ringUpHead, r.up+ringBytes)
	big := make([]byte, ringBytes+64)
	if n, err := r.take(big); n != ringBytes || err != nil {
		t.Fatalf("take of a full ring across 2^64: %d, %v", n, err)
	}
	for _, head := range []uint64{r.up + ringBytes + 1, r.up - 1, r.up - ringBytes} {
		set(ringUpHead, head)
		before := r.up
		if n, err := r.take(p); n != 0 || !isFault(err) || r.up != before {
			t.Errorf("take with head %d (host at %d): %d, %v, host moved to %d", head, before, n, err, r.up)
		}
	}

	// Putting: the host 2 bytes short of 2^64, the program caught up.
	r.down = ^uint64(0) - 1
	set(ringDownTail, r.down)
	msg := []byte("abcdef")
	if n, err := r.put(msg); n != len(msg) || err != nil {
		t.Fatalf("put across 2^64: %d, %v", n, err)
	}
	down := r.downData()
	if got := append(append([]byte{}, down[ringBytes-2:]...), down[:4]...); !bytes.Equal(got, msg) || r.down != 4 || word(ringDownHead) != 4 {
		t.Fatalf("put across 2^64 wrote %q, host at %d, head word %d", got, r.down, word(ringDownHead))
	}
	// The program exactly a ring behind: full, nothing put, no fault.
	set(ringDownTail, r.down-ringBytes)
	if n, err := r.put(msg); n != 0 || err != nil {
		t.Fatalf("put into a full ring: %d, %v; want 0, nil", n, err)
	}
	for _, tail := range []uint64{r.down - ringBytes - 1, r.down + 1, r.down + 1<<63} {
		set(ringDownTail, tail)
		before := r.down
		if n, err := r.put(msg); n != 0 || !isFault(err) || r.down != before {
			t.Errorf("put with tail %d (host at %d): %d, %v, host moved to %d", tail, before, n, err, r.down)
		}
	}
}

// TestRedteamRingDecodesACopyNotTheRing: the program publishes a call
// holding a blob, waits until the host's read position says it took the
// bytes, and at once overwrites them in the ring. The host echoes the
// blob after routing it; an answer holding the overwritten bytes would
// mean the decoder's values still point into shared memory (a zero-copy
// bin, or take handing out the ring itself).
func TestRedteamRingDecodesACopyNotTheRing(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	g, finish := testChannel(t, func(ctx context.Context, cap string, args map[string]any) (any, error) {
		<-release // answered only once the ring was overwritten
		return args, nil
	})
	r := askRing(t, g)
	for i, size := range []int{100, 40 << 10, 200 << 10} {
		blob := bytes.Repeat([]byte{0x5a}, size)
		start := r.up
		r.send(call(uint64(i+1), "echo", map[string]any{"blob": blob}))
		rtWaitWord(t, r, ringUpTail, func(v uint64) bool { return v == r.up })
		for pos := start; pos < r.up; pos++ {
			r.upData()[pos%ringBytes] = 0xa5
		}
		release <- struct{}{}
		f := r.read()
		ok, _ := f.Body.(map[string]any)["ok"].(map[string]any)
		got, _ := ok["blob"].([]byte)
		if f.ID != uint64(i+1) || !bytes.Equal(got, blob) {
			t.Fatalf("call %d of %d bytes came back as id %d, %d bytes, equal %v", i+1, size, f.ID, len(got), bytes.Equal(got, blob))
		}
	}
	r.conn.CloseWrite()
	if err, _ := finish(); err != nil {
		t.Fatalf("serve = %v", err)
	}
}

// TestRedteamRingSurvivesBytesFlippedWhileItCopies: a second goroutine
// of the program flips every byte of its ring, over and over, while the
// program publishes calls; the host copies torn frames. It must neither
// panic nor hang: serve returns (nil or a ChannelFault) once the program
// closes its end.
func TestRedteamRingSurvivesBytesFlippedWhileItCopies(t *testing.T) {
	t.Parallel()
	g, finish := testChannel(t, blobRoute)
	r := askRing(t, g)
	var stop atomic.Bool
	flipped := make(chan struct{})
	go func() {
		defer close(flipped)
		data := r.upData()
		for !stop.Load() {
			for i := 0; i < len(data); i += 61 {
				data[i] ^= 0xff
			}
		}
	}()
	var frame bytes.Buffer
	appendFrame(&frame, call(1, "echo", map[string]any{"s": "hello", "n": 7, "b": []byte("xyz")}))
	until := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(until) {
		if r.up-atomicLoad(r, ringUpTail) > ringBytes-uint64(frame.Len()) {
			if atomicLoad(r, ringUpTail) > r.up { // the host faulted? it never moves past us
				break
			}
			time.Sleep(100 * time.Microsecond)
			continue
		}
		for j, b := range frame.Bytes() {
			r.upData()[(r.up+uint64(j))%ringBytes] = b
		}
		r.up += uint64(frame.Len())
		r.publish(r.up)
	}
	stop.Store(true)
	<-flipped
	r.conn.CloseWrite()
	err, _ := finish()
	var cf *ChannelFault
	if err != nil && !errors.As(err, &cf) {
		t.Fatalf("serve = %v, want nil or a ChannelFault", err)
	}
	t.Logf("serve = %v", err)
}

// TestRedteamRingAsleepWordsCannotStrandTheHost: the program owns both
// "asleep" words. Erasing the host's mark and publishing without ringing
// leaves the host asleep, but Close must still wake it; and a program
// that keeps its own mark set and never reads its socket (so every
// write rings, and the doorbells pile up until the socket is full) must
// not make a write block on the socket.
func TestRedteamRingAsleepWordsCannotStrandTheHost(t *testing.T) {
	t.Parallel()
	t.Run("erased_host_mark", func(t *testing.T) {
		t.Parallel()
		host, rg := rtGrant(t)
		reads := make(chan error, 1)
		go func() {
			buf := make([]byte, 64)
			for {
				if _, err := host.Read(buf); err != nil {
					reads <- err
					return
				}
			}
		}()
		rtWaitWord(t, rg, ringHostAsleep, func(v uint64) bool { return v == 1 })
		atomicStore(rg, ringHostAsleep, 0)
		atomicStore(rg, ringUpHead, 1) // published, never rung
		time.Sleep(2 * time.Millisecond)
		host.Close()
		select {
		case <-reads:
		case <-time.After(2 * time.Second):
			t.Fatal("a host asleep with its mark erased did not wake on Close")
		}
	})
	t.Run("own_mark_always_set", func(t *testing.T) {
		t.Parallel()
		host, rg := rtGrant(t)
		var stop atomic.Bool
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for !stop.Load() {
				atomicStore(rg, ringDownTail, atomicLoad(rg, ringDownHead))
				atomicStore(rg, ringProgAsleep, 1)
				time.Sleep(10 * time.Microsecond)
			}
		}()
		defer func() { stop.Store(true); <-drained }()
		host.SetWriteDeadline(time.Now().Add(5 * time.Second))
		frame := make([]byte, 100)
		start := time.Now()
		for i := range 3000 {
			if _, err := host.Write(frame); err != nil {
				t.Fatalf("write %d failed after %v: %v", i, time.Since(start), err)
			}
		}
		if n, _ := unix.IoctlGetInt(int(rtFD(t, rg)), unix.SIOCINQ); n == 0 {
			t.Log("no doorbell reached the program's socket: the probe did not fill it")
		}
	})
}

// rtFD is the program's socket descriptor.
func rtFD(t *testing.T, rg *ringGuest) uintptr {
	raw, err := rg.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd uintptr
	raw.Control(func(f uintptr) { fd = f })
	return fd
}
