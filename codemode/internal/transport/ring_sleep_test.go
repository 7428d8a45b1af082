package transport_test

import (
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/transport/transporttest"
)

// hostRead reads once from host in a goroutine and hands back what it
// read (or the error).
func hostRead(host *transport.Conn) <-chan string {
	out := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, err := host.Read(buf)
		if err != nil {
			out <- "error: " + err.Error()
			return
		}
		out <- string(buf[:n])
	}()
	return out
}

// publish writes b to the host's ring as the program's writer does,
// ringing when the host sleeps.
func publish(rg *transporttest.Guest, b string) {
	copy(rg.UpData()[rg.Up%transport.RingBytes:], b)
	rg.Up += uint64(len(b))
	rg.Publish(rg.Up)
}

// primeSpin makes host's next ring read spin: a read that finds its
// bytes at once.
func primeSpin(t *testing.T, host *transport.Conn, rg *transporttest.Guest) {
	t.Helper()
	publish(rg, "p")
	if got := <-hostRead(host); got != "p" {
		t.Fatalf("the priming read got %q", got)
	}
}

// expect fails the test unless read hands back want; the bound only
// turns a deadlock into a failure.
func expect(t *testing.T, read <-chan string, want string) {
	t.Helper()
	select {
	case got := <-read:
		if got != want {
			t.Fatalf("the host read %q, want %q", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the host's read is stranded: a deadlock")
	}
}

// TestRingReadNeverStrandsADescheduledEnd: whichever end stops running
// at whichever step of the ring's sleep handshake (the test holds it
// there on a channel, as a descheduled thread is held), the host's read
// gets the program's bytes once both run again: a spinner gives up and
// sleeps, a sleeper is rung, and a mark set while the other end was
// away is seen by the look that follows it.
func TestRingReadNeverStrandsADescheduledEnd(t *testing.T) {
	t.Parallel()
	t.Run("program_away_while_the_host_spins", func(t *testing.T) {
		t.Parallel()
		host, rg := transporttest.Grant(t)
		primeSpin(t, host, rg)
		asleep := make(chan struct{})
		var once sync.Once
		var spun bool
		transport.SetRingHooks(host, func() { spun = true }, func() { once.Do(func() { close(asleep) }) })
		read := hostRead(host)
		<-asleep // the program runs again only once the host gave up
		publish(rg, "a")
		expect(t, read, "a")
		if !spun {
			t.Error("the primed read never spun: the probe did not test giving up")
		}
	})
	t.Run("host_away_mid_spin", func(t *testing.T) {
		t.Parallel()
		host, rg := transporttest.Grant(t)
		primeSpin(t, host, rg)
		away, back := make(chan struct{}), make(chan struct{})
		var once sync.Once
		transport.SetRingHooks(host, func() {
			once.Do(func() { close(away); <-back })
		}, nil)
		read := hostRead(host)
		<-away
		publish(rg, "b") // the host is not asleep: no doorbell
		close(back)
		expect(t, read, "b")
	})
	t.Run("host_away_between_its_mark_and_its_sleep", func(t *testing.T) {
		t.Parallel()
		host, rg := transporttest.Grant(t)
		away, back := make(chan struct{}), make(chan struct{})
		var once sync.Once
		transport.SetRingHooks(host, nil, func() { once.Do(func() { close(away); <-back }) })
		read := hostRead(host)
		<-away
		publish(rg, "c") // sees the mark and rings before the host sleeps
		close(back)
		expect(t, read, "c")
	})
	t.Run("program_away_between_its_publish_and_its_look_at_the_mark", func(t *testing.T) {
		t.Parallel()
		host, rg := transporttest.Grant(t)
		// The program's head moves; it stops before looking at the host's
		// mark, so it never rings.
		copy(rg.UpData(), "d")
		rg.Up = 1
		rg.Store(transport.RingUpHead, rg.Up)
		slept := false
		transport.SetRingHooks(host, nil, func() { slept = true })
		expect(t, hostRead(host), "d")
		if slept {
			t.Error("the host slept though the program's bytes were published before its mark's look")
		}
	})
	t.Run("a_rare_loss_calms_briefly", func(t *testing.T) {
		t.Parallel()
		host, rg := transporttest.Grant(t)
		primeSpin(t, host, rg)
		// Spinning paid since the last, long, calm.
		transport.SetSpinHistory(host, transport.SpinBackoff, transport.SpinPaidReads)
		away := make(chan struct{})
		var once sync.Once
		transport.SetRingHooks(host, func() { once.Do(func() { close(away); time.Sleep(time.Millisecond) }) }, nil)
		read := hostRead(host)
		<-away
		publish(rg, "g")
		expect(t, read, "g")
		if got := transport.SpinCalmForOf(host); got != transport.MinSpinBackoff {
			t.Errorf("a loss after %d reads spun calmed reads for %v, want %v", transport.SpinPaidReads, got, transport.MinSpinBackoff)
		}
	})
	t.Run("calm_reads_sleep_at_once_and_are_rung", func(t *testing.T) {
		t.Parallel()
		host, rg := transporttest.Grant(t)
		primeSpin(t, host, rg)
		// A loaded host's history: its last calm was the longest and no
		// read spun since, so this loss keeps reads calm for spinBackoff.
		transport.SetSpinHistory(host, transport.SpinBackoff, 0)
		away := make(chan struct{})
		var once sync.Once
		// The first look loses a millisecond, far past spinGap, as a
		// descheduled reader does: the read gives up spinning and sleeps.
		transport.SetRingHooks(host, func() { once.Do(func() { close(away); time.Sleep(time.Millisecond) }) }, nil)
		read := hostRead(host)
		<-away
		publish(rg, "e")
		expect(t, read, "e")
		if !transport.SpinCalmOf(host) {
			t.Error("a spin that lost its CPU left later reads spinning")
		}
		if got := transport.SpinCalmForOf(host); got != transport.SpinBackoff {
			t.Errorf("a loss on a loaded host calmed reads for %v, want %v", got, transport.SpinBackoff)
		}
		primeSpin(t, host, rg)
		asleep := make(chan struct{})
		var spun bool
		var once2 sync.Once
		transport.SetRingHooks(host, func() { spun = true }, func() { once2.Do(func() { close(asleep) }) })
		read = hostRead(host)
		<-asleep
		publish(rg, "f")
		expect(t, read, "f")
		if spun {
			t.Error("a read spun within the backoff after a spin lost its CPU")
		}
	})
}

// TestSpinBackoffIsShortWhenSpinningPaid: a read that loses its CPU
// spinning keeps later reads calm for minSpinBackoff when spinning had
// paid since the last loss (or there was none), so a quiet host that is
// descheduled now and then keeps spinning; each loss that follows soon
// after the last doubles the calm, up to spinBackoff.
func TestSpinBackoffIsShortWhenSpinningPaid(t *testing.T) {
	t.Parallel()
	minB, maxB, paid := transport.MinSpinBackoff, transport.SpinBackoff, int64(transport.SpinPaidReads)
	for _, c := range []struct {
		name string
		last time.Duration
		paid int64
		want time.Duration
	}{
		{"first_loss", 0, 0, minB},
		{"first_loss_after_paid_spins", 0, paid, minB},
		{"loss_soon_after_the_last", minB, 3, 2 * minB},
		{"loss_soon_after_a_long_calm", maxB / 2, paid - 1, maxB},
		{"never_past_the_bound", maxB, 0, maxB},
		{"rare_loss_after_a_long_calm", maxB, paid, minB},
		{"rare_loss", 4 * minB, paid + 100, minB},
	} {
		if got := transport.NextSpinBackoff(c.last, c.paid); got != c.want {
			t.Errorf("%s: nextSpinBackoff(%v, %d) = %v, want %v", c.name, c.last, c.paid, got, c.want)
		}
	}
}

// TestNudgedReadTakesBytesPublishedWithoutADoorbell: a ring read asleep
// for the doorbell that is nudged (an answer the program waits for was
// just written) spins again, its asleep mark cleared, so the program's
// next bytes reach it with no doorbell rung. Without the nudge the read
// would sleep on: the bytes are published only from inside its spin.
func TestNudgedReadTakesBytesPublishedWithoutADoorbell(t *testing.T) {
	t.Parallel()
	host, rg := transporttest.Grant(t)
	asleep := make(chan struct{})
	var once sync.Once
	published, marked := false, false
	transport.SetRingHooks(host, func() {
		if !published {
			// The program's next call, sent as its writer does: it rings
			// only when it finds the host's mark set.
			published = true
			marked = rg.Load(transport.RingHostAsleep) != 0
			copy(rg.UpData(), "n")
			rg.Up = 1
			rg.Store(transport.RingUpHead, rg.Up)
		}
	}, func() { once.Do(func() { close(asleep) }) })
	host.ArmNudge()
	read := hostRead(host)
	<-asleep
	for !transport.AsleepOf(host) {
		time.Sleep(10 * time.Microsecond)
	}
	host.Nudge()
	expect(t, read, "n")
	if marked {
		t.Error("the nudged read left its asleep mark set while it spun: the program would ring")
	}
}

// TestNudgeWithoutAnArmedSleepingReadIsANoOp: with no ring read asleep
// a nudge leaves nothing behind to wake the next one spuriously; a read
// that went to sleep unarmed waits for the doorbell alone and is not
// nudged; on the socket a nudge does nothing at all.
func TestNudgeWithoutAnArmedSleepingReadIsANoOp(t *testing.T) {
	t.Parallel()
	host, rg := transporttest.Grant(t)
	primeSpin(t, host, rg)
	host.ArmNudge()
	host.Nudge()
	if transport.NudgePendingOf(host) {
		t.Error("a nudge with no read asleep was left pending")
	}
	for _, armed := range []bool{false, true} {
		asleep := make(chan struct{})
		var once sync.Once
		transport.SetRingHooks(host, nil, func() { once.Do(func() { close(asleep) }) })
		if armed {
			host.ArmNudge()
		}
		read := hostRead(host)
		<-asleep
		if armed {
			for !transport.AsleepOf(host) {
				time.Sleep(10 * time.Microsecond)
			}
		}
		host.Nudge()
		if !armed && transport.NudgePendingOf(host) {
			t.Error("an unarmed read asleep was nudged")
		}
		// The control (armed): the read takes the nudge, spins, sleeps
		// again and is rung.
		publish(rg, "q")
		expect(t, read, "q")
	}
	sock, _ := transporttest.Ends(t)
	sock.Nudge()
}
