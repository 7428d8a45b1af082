package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
)

// clearBounded clears a shell script with an output bound and collects
// everything.
func clearBounded(t *testing.T, b *Broker, bound int64, script string) result {
	t.Helper()
	ex, d := b.Clear(context.Background(), sandbox.CallSpec{
		Key:  sandbox.StepKey{OpID: "op", StepID: t.Name()},
		Argv: []string{"sh", "-c", script},
		Env:  map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin"},
		// Every output byte lands in the result; a slow consumer only
		// slows the command.
		Policy: testPolicy(t.TempDir()), Budget: sandbox.Budget{MaxOutstanding: 1},
		Timeout: time.Minute, MaxOutputBytes: bound,
	})
	if d != nil {
		t.Fatal(d)
	}
	return collect(ex)
}

// TestOutputBound: output of exactly the bound is delivered whole and
// ends normally; one byte past it, the command is stopped, exactly the
// bound is delivered (from both streams together, in the order the
// broker read them) and Settled says OutputLimited. An endless writer
// ends only because the bound stopped it (its timeout is a minute away).
func TestOutputBound(t *testing.T) {
	t.Parallel()
	const bound = 100 << 10
	b := newTestBroker(t, Options{})
	defer b.Close()
	for _, tc := range []struct {
		name    string
		script  string
		limited bool
	}{
		{"stdout at the bound", fmt.Sprintf("head -c %d /dev/zero", bound), false},
		{"stdout one past", fmt.Sprintf("head -c %d /dev/zero", bound+1), true},
		{"both streams at the bound", fmt.Sprintf("head -c %d /dev/zero; head -c %d /dev/zero >&2", bound/2, bound/2), false},
		{"both streams one past", fmt.Sprintf("head -c %d /dev/zero; head -c %d /dev/zero >&2", bound/2, bound/2+1), true},
		{"endless", "cat /dev/zero", true},
		{"endless, both streams", "cat /dev/zero & cat /dev/zero >&2; wait", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := clearBounded(t, b, bound, tc.script)
			got := len(r.stdout) + len(r.stderr)
			if tc.limited {
				if !r.settled.OutputLimited || got != bound {
					t.Fatalf("one past the bound: delivered %d (want %d), settled %+v", got, bound, r.settled)
				}
				if r.settled.TimedOut || r.settled.Cancelled {
					t.Fatalf("an output-limited command is neither timed out nor cancelled: %+v", r.settled)
				}
				return
			}
			if r.settled.OutputLimited || r.settled.ExitCode != 0 || got != bound {
				t.Fatalf("at the bound: delivered %d (want %d), settled %+v", got, bound, r.settled)
			}
		})
	}
}

// TestOutputBoundStopsAFloodQuickly is the reproduction: a nine
// gigabyte pipeline ends at the bound, well before it could have
// written its output.
func TestOutputBoundStopsAFloodQuickly(t *testing.T) {
	t.Parallel()
	const bound = 8 << 20
	b := newTestBroker(t, Options{})
	defer b.Close()
	start := time.Now()
	r := clearBounded(t, b, bound, `head -c 9G /dev/zero | tr '\0' A`)
	took := time.Since(start)
	if !r.settled.OutputLimited || len(r.stdout) != bound || strings.Trim(r.stdout, "A") != "" {
		t.Fatalf("delivered %d bytes (want %d of A), settled %+v", len(r.stdout), bound, r.settled)
	}
	// 9 GiB through a pipe takes this host many seconds; the bound ends
	// it in a fraction of one.
	if took > 30*time.Second {
		t.Fatalf("the flood took %v to end at the bound", took)
	}
	t.Logf("9G flood ended at %d MiB after %v", bound>>20, took)
}

// TestMaxOutputBytes: a call's bound defaults to defaultMaxOutputBytes
// and the host's Options.MaxOutputBytes lowers every call's bound, never
// raises it.
func TestMaxOutputBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		host, call, want int64
	}{
		{0, 0, defaultMaxOutputBytes},
		{0, -5, defaultMaxOutputBytes},
		{0, 10, 10},
		{0, defaultMaxOutputBytes * 4, defaultMaxOutputBytes * 4},
		{1000, 0, 1000},
		{1000, 10, 10},
		{1000, 5000, 1000},
		{-1, 7, 7},
	} {
		b := newTestBroker(t, Options{MaxOutputBytes: tc.host})
		if got := b.maxOutputBytes(sandbox.CallSpec{MaxOutputBytes: tc.call}); got != tc.want {
			t.Errorf("host %d call %d: bound %d, want %d", tc.host, tc.call, got, tc.want)
		}
	}
}

// TestOutputBoundCounter holds the counter to its contract at every
// split of a read around the bound.
func TestOutputBoundCounter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit   int64
		reads   []int
		want    []int
		tripped bool
	}{
		{10, []int{10}, []int{10}, false},
		{10, []int{11}, []int{10}, true},
		{10, []int{4, 6, 0}, []int{4, 6, 0}, false},
		{10, []int{4, 6, 1, 5}, []int{4, 6, 0, 0}, true},
		{10, []int{9, 2, 1}, []int{9, 1, 0}, true},
		{0, []int{0, 1}, []int{0, 0}, true},
	} {
		trips := 0
		o := newOutputBound(tc.limit, func() { trips++ })
		for i, n := range tc.reads {
			if got := o.take(n); got != tc.want[i] {
				t.Errorf("limit %d reads %v: take #%d = %d, want %d", tc.limit, tc.reads, i, got, tc.want[i])
			}
		}
		if o.limited() != tc.tripped || trips != map[bool]int{false: 0, true: 1}[tc.tripped] {
			t.Errorf("limit %d reads %v: limited %v after %d trips, want %v once", tc.limit, tc.reads, o.limited(), trips, tc.tripped)
		}
	}
}
