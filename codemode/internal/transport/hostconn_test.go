package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testHostConn is a Pair whose program end stays open (and unread)
// until the test ends.
func testHostConn(t *testing.T) (*Conn, *os.File) {
	t.Helper()
	hc, prog, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hc.Close(); prog.Close() })
	return hc, prog
}

// waitRefs waits until n reads or writes hold hc's descriptor.
func waitRefs(hc *Conn, n int) {
	for {
		hc.mu.Lock()
		refs := hc.refs
		hc.mu.Unlock()
		if refs == n {
			return
		}
		runtime.Gosched()
	}
}

// within fails the test unless done is closed within d.
func within(t *testing.T, d time.Duration, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still waiting after %s", what, d)
	}
}

// TestHostConnCloseEndsABlockedRead: the serve loop's blocking read ends
// with io.EOF when the channel is closed, though the program's end is
// open and silent (a closed descriptor alone would leave it blocked).
func TestHostConnCloseEndsABlockedRead(t *testing.T) {
	t.Parallel()
	hc, _ := testHostConn(t)
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		_, err = hc.Read(make([]byte, 16))
	}()
	waitRefs(hc, 1)
	hc.Close()
	within(t, 10*time.Second, done, "a read after Close")
	if !errors.Is(err, io.EOF) {
		t.Fatalf("read = %v, want io.EOF", err)
	}
	if _, err := hc.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read after Close = %v, want net.ErrClosed", err)
	}
}

// TestHostConnSpinsOnlyWhileFramesComeQuickly: a read whose data came
// at once leaves the next read asking again before it sleeps, and that
// read still returns what arrives later (here past readSpin, so it ends
// up sleeping) and io.EOF once the program's end closes; a read that
// waited past readSpin leaves the next one sleeping at once.
func TestHostConnSpinsOnlyWhileFramesComeQuickly(t *testing.T) {
	t.Parallel()
	hc, prog := testHostConn(t)
	buf := make([]byte, 16)
	// Data already there is read within readSpin unless this test is
	// descheduled meanwhile, which a loaded machine may do now and then.
	for i := 0; i < 1000 && !hc.spin.Load(); i++ {
		if _, err := prog.Write([]byte("a")); err != nil {
			t.Fatal(err)
		}
		if n, err := hc.Read(buf); n != 1 || err != nil {
			t.Fatalf("read = %d, %v", n, err)
		}
	}
	if !hc.spin.Load() {
		t.Fatal("no read whose data was there left the next one spinning")
	}
	go func() {
		time.Sleep(20 * readSpin) // past the spin: the read must sleep and still wake
		prog.Write([]byte("b"))
	}()
	if n, err := hc.Read(buf); n != 1 || err != nil || buf[0] != 'b' {
		t.Fatalf("read after the spin = %d %q, %v", n, buf[:n], err)
	}
	if hc.spin.Load() {
		t.Error("a read that waited past readSpin left the next one spinning")
	}
	prog.Write([]byte("c"))
	hc.Read(buf) // spinning again
	prog.Close()
	if _, err := hc.Read(buf); !errors.Is(err, io.EOF) {
		t.Fatalf("a spinning read of a closed end = %v, want io.EOF", err)
	}
}

// TestHostConnClosesItsDescriptorWhenUnused: Close while a read or write
// holds the descriptor shuts the socket down at once but closes the
// descriptor only when the last use ends, so its number is never
// reused under a read.
func TestHostConnClosesItsDescriptorWhenUnused(t *testing.T) {
	t.Parallel()
	hc, prog := testHostConn(t)
	var before unix.Stat_t
	if err := unix.Fstat(hc.fd, &before); err != nil {
		t.Fatal(err)
	}
	if !hc.acquire() {
		t.Fatal("acquire failed on an open channel")
	}
	hc.Close()
	if hc.acquire() {
		t.Fatal("acquire succeeded after Close")
	}
	var during unix.Stat_t
	if err := unix.Fstat(hc.fd, &during); err != nil || during.Ino != before.Ino {
		t.Fatalf("the descriptor in use was closed by Close (%v)", err)
	}
	if n, err := prog.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("the program's end read %d, %v after Close; want EOF (the socket shut down)", n, err)
	}
	hc.release()
	var after unix.Stat_t
	if err := unix.Fstat(hc.fd, &after); err == nil && after.Ino == before.Ino {
		t.Fatal("the descriptor stayed open after its last use ended")
	}
}

// TestHostConnBoundsAWriteThatWaits: a write to a program that does not
// read waits, and ends at a deadline set while it waits (end's bound on
// the outcome frame) or when the channel is closed.
func TestHostConnBoundsAWriteThatWaits(t *testing.T) {
	t.Parallel()
	big := make([]byte, 32<<20) // more than any socket buffer holds
	for _, how := range []string{"deadline", "close"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			hc, _ := testHostConn(t)
			done := make(chan struct{})
			var n int
			var err error
			go func() {
				defer close(done)
				n, err = hc.Write(big)
			}()
			waitRefs(hc, 1)
			select {
			case <-done:
				t.Fatalf("a %d-byte write to a program that reads nothing returned %d, %v", len(big), n, err)
			default:
			}
			if how == "deadline" {
				hc.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
			} else {
				hc.Close()
			}
			within(t, 10*time.Second, done, "the waiting write")
			if n >= len(big) || err == nil {
				t.Fatalf("write = %d, %v; want it cut short", n, err)
			}
			if how == "deadline" && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("write = %v, want os.ErrDeadlineExceeded", err)
			}
		})
	}
}

// TestHostConnWritesWhatTheProgramReads: a write larger than the
// socket's buffer completes as the program reads it, byte for byte.
func TestHostConnWritesWhatTheProgramReads(t *testing.T) {
	t.Parallel()
	hc, prog := testHostConn(t)
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(prog, int64(len(msg))))
		got <- b
	}()
	if n, err := hc.Write(msg); n != len(msg) || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, msg) {
		t.Fatalf("the program read %d bytes, not the %d written", len(b), len(msg))
	}
}
