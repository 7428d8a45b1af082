package transport_test

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/transport/transporttest"
	"golang.org/x/sys/unix"
)

// Red-team probes of the ring read's spinning (readSpin, spinGap, the
// calm, the nudge) by a program that rings, publishes and forges marks
// to make the host spin more than its own bytes pay for. Each counts
// the read's looks and sleeps through the test hooks, never a time; each
// has a control showing the count sees what it bounds.

// spinCounts counts a ring read's looks (spinning) and sleeps, and the
// looks that came after its first sleep (a restarted spin).
type spinCounts struct {
	looks, sleeps, respins atomic.Int64
}

// hook sets host's test hooks to count into s.
func (s *spinCounts) hook(host *transport.Conn) {
	transport.SetRingHooks(host, func() {
		s.looks.Add(1)
		if s.sleeps.Load() > 0 {
			s.respins.Add(1)
		}
	}, func() { s.sleeps.Add(1) })
}

// waitSleeps waits until the read has gone to sleep at least n times.
func (s *spinCounts) waitSleeps(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.sleeps.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the host's read slept %d times, waited for %d", s.sleeps.Load(), n)
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// drained waits until the host has read every doorbell on its socket
// and marked itself asleep again.
func drained(t *testing.T, host *transport.Conn, rg *transporttest.Guest) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := unix.IoctlGetInt(transport.FDOf(host), unix.SIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && rg.Load(transport.RingHostAsleep) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host left %d doorbell bytes unread", n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestRedteamRingDoorbellsNeverRestartASpin: doorbells with nothing
// published behind them wake a sleeping read, which reads up to
// doorbellReadBytes of them at once and sleeps again without one more
// look: a flood costs the host at most a wake per KiB, never a spin.
// The doorbells come while the read sleeps, or were rung (the program
// forged the host's asleep mark) while it spun and wait for its sleep.
// The control nudges an armed read after its first sleep: that read
// does look again, so the count sees a restarted spin.
func TestRedteamRingDoorbellsNeverRestartASpin(t *testing.T) {
	t.Parallel()
	const flood = 1 << 20
	bells := bytes.Repeat([]byte{transport.RingDoorbell}, 64<<10)
	ring := func(t *testing.T, rg *transporttest.Guest, n int) {
		for sent := 0; sent < n; sent += len(bells) {
			if _, err := rg.Conn.Write(bells); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		// before runs before the read; during once it slept once.
		before, during func(t *testing.T, host *transport.Conn, rg *transporttest.Guest)
		rung           int  // doorbells the program rings
		respins        bool // the control: the read looks again
	}{
		{name: "flood_while_asleep", rung: flood, during: func(t *testing.T, _ *transport.Conn, rg *transporttest.Guest) {
			ring(t, rg, flood)
		}},
		{name: "bells_rung_while_it_spun", rung: 64 << 10, before: func(t *testing.T, host *transport.Conn, rg *transporttest.Guest) {
			primeSpin(t, host, rg)
			rg.Store(transport.RingHostAsleep, 1) // forged: the host spins
			ring(t, rg, 64<<10)                   // fits the socket unread
		}},
		{name: "control_nudged", respins: true, before: func(_ *testing.T, host *transport.Conn, _ *transporttest.Guest) {
			host.ArmNudge()
		}, during: func(_ *testing.T, host *transport.Conn, _ *transporttest.Guest) {
			for !transport.AsleepOf(host) {
				time.Sleep(10 * time.Microsecond)
			}
			host.Nudge()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			host, rg := transporttest.Grant(t)
			if tc.before != nil {
				tc.before(t, host, rg)
			}
			var s spinCounts
			s.hook(host)
			read := hostRead(host)
			s.waitSleeps(t, 1)
			if tc.during != nil {
				tc.during(t, host, rg)
			}
			if tc.respins {
				s.waitSleeps(t, 2)
			}
			drained(t, host, rg)
			publish(rg, "x")
			expect(t, read, "x")
			if tc.respins {
				if s.respins.Load() == 0 {
					t.Fatal("control: a nudged read did not look again after its sleep; the count cannot see a restarted spin")
				}
				return
			}
			if n := s.respins.Load(); n != 0 {
				t.Errorf("doorbells with nothing published made the sleeping read look %d more times", n)
			}
			if n, bound := s.sleeps.Load(), int64(tc.rung/1024); n > bound {
				t.Errorf("the read woke %d times for %d doorbells: want at most %d (a KiB of them per wake)", n, tc.rung, bound)
			}
		})
	}
}

// TestRedteamRingNudgesExtendAReadByOneSpin: a read the serve loop armed
// (a routed call is out) and that sleeps is nudged awake to spin once;
// every later Nudge within the same read finds it asleep unarmed (only
// the serve loop arms, between its reads) and is a no-op, leaving no
// pending nudge behind: answers coming while the program stays silent
// cost one spin, not one each. The control re-arms before each nudge,
// as the serve loop never does within a read, and the read spins after
// each: the count sees every extra spin.
func TestRedteamRingNudgesExtendAReadByOneSpin(t *testing.T) {
	t.Parallel()
	const nudges = 50
	for _, rearm := range []bool{false, true} {
		host, rg := transporttest.Grant(t)
		var s spinCounts
		transport.SetRingHooks(host, nil, func() {
			s.sleeps.Add(1)
			if rearm {
				host.ArmNudge() // before the read looks at it: every sleep armed
			}
		})
		host.ArmNudge()
		read := hostRead(host)
		for i := range nudges {
			switch {
			case rearm || i == 0:
				s.waitSleeps(t, int64(i+1))
				for !transport.AsleepOf(host) {
					time.Sleep(10 * time.Microsecond)
				}
			default:
				// The read's unarmed sleep: give it time to be in read(2),
				// so a nudge that could wake it would.
				s.waitSleeps(t, 2)
				time.Sleep(100 * time.Microsecond)
			}
			host.Nudge()
		}
		want := int64(2)
		if rearm {
			want = nudges + 1
		}
		s.waitSleeps(t, want)
		// The read sleeps unarmed: every Nudge after the first found it so.
		if !rearm && transport.NudgePendingOf(host) {
			t.Error("a nudge of a read asleep unarmed was left pending for its next sleep")
		}
		publish(rg, "x")
		expect(t, read, "x")
		switch got := s.sleeps.Load(); {
		case !rearm && got != 2:
			t.Errorf("%d nudges of one read made it sleep %d times, want 2 (one nudged spin)", nudges, got)
		case rearm && got != want:
			t.Errorf("control: %d armed nudges made the read sleep %d times, want %d", nudges, got, want)
		}
	}
}

// TestRedteamRingStaleNudgeCostsOneSpin: a Nudge that finds a read
// asleep just as the doorbell wakes it leaves its count on the eventfd
// for the next armed sleep, which wakes at once and spins: one spin
// more, after which the read, still armed, sleeps until a real nudge or
// the doorbell. A stale count never becomes a loop of spins. The control
// is the real nudge that follows, which the count sees.
func TestRedteamRingStaleNudgeCostsOneSpin(t *testing.T) {
	t.Parallel()
	host, rg := transporttest.Grant(t)
	var s spinCounts
	s.hook(host)
	transport.LeaveNudge(host)
	transport.LeaveNudge(host)
	host.ArmNudge()
	read := hostRead(host)
	s.waitSleeps(t, 2) // the stale nudge's spin, then a sleep armed again
	for !transport.AsleepOf(host) {
		time.Sleep(10 * time.Microsecond)
	}
	time.Sleep(time.Millisecond) // room for a loop to show itself
	if n := s.sleeps.Load(); n != 2 {
		t.Fatalf("a stale nudge made the read sleep %d times, want 2 (one spin)", n)
	}
	host.Nudge()
	s.waitSleeps(t, 3)
	publish(rg, "x")
	expect(t, read, "x")
	if n := s.sleeps.Load(); n != 3 {
		t.Errorf("control: a stale then a real nudge made the read sleep %d times, want 3", n)
	}
}

// TestRedteamRingCalmHoldsAgainstAPromptProgram: once a spin lost its
// CPU, reads sleep at once for the calm however promptly the program
// publishes: here it publishes the instant the host marks itself
// asleep, so every read finds its bytes within microseconds of its
// start, as a spinning read's would. No read within the calm looks.
// Only the reads begun within the calm count (its length is wall time);
// the control, after the calm, shows a primed read does look.
func TestRedteamRingCalmHoldsAgainstAPromptProgram(t *testing.T) {
	t.Parallel()
	host, rg := transporttest.Grant(t)
	primeSpin(t, host, rg)
	transport.SetSpinHistory(host, transport.SpinBackoff, 0)
	lost := make(chan struct{})
	var once atomic.Bool
	transport.SetRingHooks(host, func() {
		if once.CompareAndSwap(false, true) {
			close(lost)
			time.Sleep(time.Millisecond) // far past spinGap: a lost CPU
		}
	}, nil)
	read := hostRead(host)
	select {
	case <-lost:
	case <-time.After(20 * time.Second):
		t.Fatal("the primed read never looked: the probe cannot lose its CPU")
	}
	publish(rg, "l")
	expect(t, read, "l")
	var s spinCounts
	transport.SetRingHooks(host, func() { s.looks.Add(1) }, func() { publish(rg, "p") })
	inCalm := 0
	for range 200 {
		if !transport.SpinCalmOf(host) {
			break
		}
		inCalm++
		expect(t, hostRead(host), "p")
	}
	if inCalm == 0 {
		t.Skip("the calm ended before the first read: the machine stalled for a whole spinBackoff")
	}
	if n := s.looks.Load(); n != 0 {
		t.Errorf("%d reads begun within the calm looked %d times: a prompt program broke the calm", inCalm, n)
	}
	for transport.SpinCalmOf(host) {
		time.Sleep(time.Millisecond)
	}
	transport.SetRingHooks(host, func() { s.looks.Add(1) }, nil)
	primeSpin(t, host, rg)
	asleep := make(chan struct{})
	var slept atomic.Bool
	transport.SetRingHooks(host, func() { s.looks.Add(1) }, func() {
		if slept.CompareAndSwap(false, true) {
			close(asleep)
		}
	})
	read = hostRead(host)
	<-asleep
	publish(rg, "c")
	expect(t, read, "c")
	if s.looks.Load() == 0 {
		t.Error("control: a primed read after the calm never looked; the count sees nothing")
	}
}

// TestRedteamRingLateProgramSpinsEveryOtherRead: a program that
// publishes only once the host gave up spinning (just past readSpin, the
// rate that costs the host most per byte) leaves the next read sleeping
// at once, since the read it answered waited longer than readSpin: at
// most every other read spins, each for at most readSpin. The control
// publishes on the read's first look, within readSpin: every read then
// spins (bar the few a loaded machine's lost CPU calms).
func TestRedteamRingLateProgramSpinsEveryOtherRead(t *testing.T) {
	t.Parallel()
	const reads = 200
	for _, late := range []bool{true, false} {
		host, rg := transporttest.Grant(t)
		primeSpin(t, host, rg)
		var spun, sent, spins atomic.Int64
		send := func() {
			if sent.CompareAndSwap(0, 1) {
				publish(rg, "d")
			}
		}
		transport.SetRingHooks(host, func() {
			spun.Store(1)
			if !late {
				send()
			}
		}, send) // a read that lost its CPU sleeps: answer it then
		for range reads {
			spun.Store(0)
			sent.Store(0)
			expect(t, hostRead(host), "d")
			spins.Add(spun.Load())
		}
		switch n := spins.Load(); {
		case late && n > (reads+1)/2:
			t.Errorf("a program publishing past readSpin made %d of %d reads spin, want at most %d", n, reads, (reads+1)/2)
		case !late && n <= (reads+1)/2:
			t.Errorf("control: a program publishing within readSpin made only %d of %d reads spin", n, reads)
		}
	}
}

// TestRedteamRingCloseEndsAReadUnderDoorbellsAndBytes: a program keeps
// its socket full of doorbells, and publishes a byte at a time or
// nothing, so the host's read never runs out of work: it spins on the
// bytes or wakes to each socketful of doorbells. Close must still end
// it: a spin is bounded by readSpin, and a sleeping read drains what the
// socket held (the program's sends fail once the host shut its end
// down) and then reads io.EOF. The control is the same attack before
// Close, which ends nothing.
func TestRedteamRingCloseEndsAReadUnderDoorbellsAndBytes(t *testing.T) {
	t.Parallel()
	for _, drip := range []bool{false, true} {
		host, rg := transporttest.Grant(t)
		var stop atomic.Bool
		flooded, dripped := make(chan error, 1), make(chan struct{})
		go func() {
			bells := bytes.Repeat([]byte{transport.RingDoorbell}, 4<<10)
			for !stop.Load() {
				if _, err := rg.Conn.Write(bells); err != nil {
					flooded <- err
					return
				}
			}
			flooded <- nil
		}()
		go func() {
			defer close(dripped)
			for drip && !stop.Load() {
				if rg.Up-rg.Load(transport.RingUpTail) < transport.RingBytes/2 {
					copy(rg.UpData()[rg.Up%transport.RingBytes:], "z")
					rg.Up++
					rg.Store(transport.RingUpHead, rg.Up) // the flood rings
				}
				time.Sleep(5 * time.Microsecond)
			}
		}()
		var taken, wakes atomic.Int64
		transport.SetRingHooks(host, nil, func() { wakes.Add(1) })
		reads := make(chan error, 1)
		go func() {
			buf := make([]byte, 64<<10)
			for {
				n, err := host.Read(buf)
				if err != nil {
					reads <- err
					return
				}
				taken.Add(int64(n))
			}
		}()
		deadline := time.Now().Add(10 * time.Second)
		for (taken.Load() < 200 && drip || wakes.Load() < 200) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		select {
		case err := <-reads:
			t.Fatalf("control (drip %v): the host's read ended before Close, with %d bytes taken: %v", drip, taken.Load(), err)
		default:
		}
		host.Close()
		select {
		case <-reads:
		case <-time.After(10 * time.Second):
			t.Fatalf("drip %v: the host's read went on after Close under a flood of doorbells", drip)
		}
		select {
		case err := <-flooded:
			if err == nil {
				t.Errorf("drip %v: the flood stopped without an error", drip)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("drip %v: the program could still ring a host that had closed its end", drip)
		}
		stop.Store(true)
		<-dripped
	}
}
