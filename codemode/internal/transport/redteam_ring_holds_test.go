package transport_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/transport/transporttest"
	"golang.org/x/sys/unix"
)

// Red-team probes of the shared ring that found the host holding: each
// could fail, and says how. Those that need a serve loop are codemode's
// (its redteam_ring_holds_test.go).

// TestRedteamRingCloseRacingReadsAndWritesNeverUnmapsUnderThem: Close
// lands at random moments while a read sleeps or copies (the program
// keeps publishing) and a write waits for room or copies (the program
// never reads). Unmapping under either would fault the test binary
// (SIGSEGV) or panic on the nil mapping; both must return, and the
// mapping must be gone once they have.
func TestRedteamRingCloseRacingReadsAndWritesNeverUnmapsUnderThem(t *testing.T) {
	t.Parallel()
	for i := range 30 {
		host, rg := transporttest.Grant(t)
		var stop atomic.Bool
		pub := make(chan struct{})
		go func() { // the program publishes bytes as the host takes them
			defer close(pub)
			for !stop.Load() {
				if rg.Up-rg.Load(transport.RingUpTail) < transport.RingBytes/2 {
					rg.Up += 4096
					rg.Publish(rg.Up)
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
			_, err := host.Write(make([]byte, 2*transport.RingBytes))
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
		mapped := transport.RingMappedOf(host)
		if mapped {
			t.Fatalf("round %d: the host's mapping outlived Close and its last read and write", i)
		}
	}
}

// TestRedteamRingLeavesNoMappingOrDescriptor: every way a ring can end
// (Close after the grant, Close before it, a program gone before its
// answer, Close while a write waits for room; a channel fault is
// codemode's test of the same name) leaves no mapping of the ring's
// memory file and no descriptor of it in the host. Not parallel: it
// counts the whole process's. The program's end never maps the file
// here, and closes what it receives.
func TestRedteamRingLeavesNoMappingOrDescriptor(t *testing.T) {
	baseMaps, baseFDs := transporttest.RingResources(t)
	grant := func(t *testing.T, host *transport.Conn) error {
		r, fd, err := transport.NewRing()
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		return host.ShareRing(r, fd, transporttest.RingAnswer(t))
	}
	cases := map[string]func(t *testing.T){
		"close_after_the_grant": func(t *testing.T) {
			host, conn := transporttest.Ends(t)
			if err := grant(t, host); err != nil {
				t.Fatal(err)
			}
			unix.Close(transporttest.RingAnswerFD(t, conn))
			host.Close()
		},
		"close_before_the_grant": func(t *testing.T) {
			host, _ := transporttest.Ends(t)
			host.Close()
			if err := grant(t, host); err == nil {
				t.Fatal("a ring was granted on a closed channel")
			}
		},
		"program_gone_before_its_answer": func(t *testing.T) {
			host, conn := transporttest.Ends(t)
			conn.Close()
			if err := grant(t, host); err == nil {
				t.Fatal("a ring was granted to a program whose end is closed")
			}
			if host.OnRing() {
				t.Fatal("the channel moved onto a ring its program never got")
			}
		},
		"close_while_a_write_waits": func(t *testing.T) {
			host, conn := transporttest.Ends(t)
			if err := grant(t, host); err != nil {
				t.Fatal(err)
			}
			unix.Close(transporttest.RingAnswerFD(t, conn))
			done := make(chan error, 1)
			go func() { _, err := host.Write(make([]byte, 2*transport.RingBytes)); done <- err }()
			time.Sleep(5 * time.Millisecond)
			host.Close()
			if err := <-done; err == nil {
				t.Fatal("the write finished into a ring nobody reads")
			}
		},
	}
	for name, run := range cases {
		t.Run(name, run)
		if m, f := transporttest.RingResources(t); m != baseMaps || f != baseFDs {
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
	host, rg := transporttest.Grant(t)
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
	raw, err := rg.Conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	const sent = 40
	for range sent {
		var serr error
		raw.Write(func(fd uintptr) bool {
			serr = unix.Sendmsg(int(fd), []byte{transport.RingDoorbell}, unix.UnixRights(p[0], p[0]), nil, 0)
			return true
		})
		if serr != nil {
			t.Fatal(serr)
		}
	}
	unix.Close(p[0])
	drained(t, host, rg)
	if n := count(); n != 1 {
		t.Fatalf("%d descriptors of the pipe are open after the host read %d doorbells carrying %d of them; want 1 (the test's own)", n, sent, 2*sent)
	}
	host.Close()
	if err := <-reads; err == nil {
		t.Fatal("read returned nil after Close")
	}
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
		host, rg := transporttest.Grant(t)
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
		transporttest.WaitWord(t, rg, transport.RingHostAsleep, func(v uint64) bool { return v == 1 })
		rg.Store(transport.RingHostAsleep, 0)
		rg.Store(transport.RingUpHead, 1) // published, never rung
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
		host, rg := transporttest.Grant(t)
		var stop atomic.Bool
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for !stop.Load() {
				rg.Store(transport.RingDownTail, rg.Load(transport.RingDownHead))
				rg.Store(transport.RingProgAsleep, 1)
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
func rtFD(t *testing.T, rg *transporttest.Guest) uintptr {
	raw, err := rg.Conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd uintptr
	raw.Control(func(f uintptr) { fd = f })
	return fd
}
