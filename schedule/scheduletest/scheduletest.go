// Package scheduletest is the conformance suite of the schedule seam:
// the behaviour every durable scheduler (schedule/sqlite,
// schedule/postgres) shows through schedule.Schedules and its firing
// methods, run by each package's tests against its own store.
//
// It covers what a policy grants, the live limit, who sees and cancels
// what, a closed scheduler, restarts that never fire twice, missed fires
// delivered once and late, Run, and a property over any schedules and
// any advance of the clock with restarts between: no fire early, none
// at or after expiry, never past max_fires, a one-shot once, cron fires
// at least MinInterval apart. What only one store has (its files, its
// schema, its hosts) stays in that store's tests.
package scheduletest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/tool"
)

// Scheduler is what the suite drives: the seam, and the firing and
// closing every store offers.
type Scheduler interface {
	schedule.Schedules
	// Tick delivers every fire due at the clock and answers how many.
	Tick(ctx context.Context) (int, error)
	// NextDue answers the soonest fire; false when there is none.
	NextDue(ctx context.Context) (time.Time, bool, error)
	// Run ticks whenever a fire falls due until ctx ends or Close.
	Run(ctx context.Context) error
	// Close closes this handle; the schedules outlive it.
	Close() error
}

// Fire is one delivered fire, as the store's callback reported it.
type Fire struct {
	ID, Owner, Target, Message string
	Wake                       schedule.Wake
	Due                        time.Time
	N                          int
	Last                       bool
}

// Options is what a test asks of Open.
type Options struct {
	// Limits and Wake are the store's Options fields of those names.
	Limits schedule.Limits
	Wake   schedule.Wake
	// Now is the injected clock.
	Now func() time.Time
	// Fire receives every fire the store delivers.
	Fire func(context.Context, Fire)
	// Again, when set, asks for a new handle on the schedules Again
	// handles (a host restarting would open them so), not fresh ones.
	// Again may be closed already.
	Again Scheduler
}

// Open opens a scheduler for one test: on fresh, empty schedules unless
// o.Again is set. The suite closes what it opens; closing twice must be
// harmless, and the store's cleanup is the constructor's.
type Open func(t *testing.T, o Options) Scheduler

// Run runs the suite against the schedulers open opens, one subtest
// per behaviour.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Open)
	}{
		{"RestartDoesNotFireTwice", restartDoesNotFireTwice},
		{"RestartAfterDowntimeCoalesces", restartAfterDowntimeCoalesces},
		{"CreateGrantsWhatThePolicyAllows", createGrantsWhatThePolicyAllows},
		{"LiveLimitVisibilityAndCancel", liveLimitVisibilityAndCancel},
		{"FiresKeepTheirBounds", firesKeepTheirBounds},
		{"RunFiresAndStopsAtClose", runFiresAndStopsAtClose},
		{"OneStrandCannotSpreadPastTheLiveLimit", oneStrandCannotSpreadPastTheLiveLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// Clock is an injected clock, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a clock reading at.
func NewClock(at time.Time) *Clock { return &Clock{now: at} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fires records what a store delivered, safe for concurrent use.
type fires struct {
	mu  sync.Mutex
	got []Fire
}

// record is an Options.Fire.
func (f *fires) record(_ context.Context, x Fire) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, x)
}

// list answers the fires recorded so far, in delivery order.
func (f *fires) list() []Fire {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Fire(nil), f.got...)
}

// Start is the instant the suite's clocks start at.
var Start = time.Date(2026, 12, 7, 19, 30, 0, 0, time.UTC)

func openWith(t *testing.T, open Open, c *Clock, f *fires, o Options) Scheduler {
	t.Helper()
	o.Now, o.Fire = c.Now, f.record
	s := open(t, o)
	t.Cleanup(func() { s.Close() })
	return s
}

// Create decodes spec for strand at the clock and creates it on s,
// failing tb on any refusal.
func Create(tb testing.TB, s schedule.Schedules, now time.Time, strand string, spec schedule.Spec) schedule.Created {
	tb.Helper()
	r, err := schedule.Decode(spec, strand, now, s.Limits())
	if err != nil {
		tb.Fatal(err)
	}
	cr, err := s.Create(context.Background(), r)
	if err != nil {
		tb.Fatal(err)
	}
	return cr
}

func tick(t testing.TB, s Scheduler) int {
	t.Helper()
	n, err := s.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// restartDoesNotFireTwice: a fire delivered before a close is not
// delivered again by the reopened store, and the next one is.
func restartDoesNotFireTwice(t *testing.T, open Open) {
	c := NewClock(Start)
	f := &fires{}
	s := openWith(t, open, c, f, Options{})
	cr := Create(t, s, c.Now(), "main", schedule.Spec{EverySeconds: 600, MaxFires: 3, Message: "check"})
	if tick(t, s) != 0 {
		t.Fatal("fired before its time")
	}
	c.Advance(10 * time.Minute) // 19:40, the first multiple of 600 s after 19:30
	if tick(t, s) != 1 {
		t.Fatalf("fires %v", f.list())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openWith(t, open, c, f, Options{Again: s})
	if n := tick(t, s); n != 0 {
		t.Fatalf("the reopened store fired %d again: %v", n, f.list())
	}
	c.Advance(10 * time.Minute)
	if tick(t, s) != 1 {
		t.Fatal("the next fire did not happen after the restart")
	}
	got := f.list()
	if len(got) != 2 || got[0].N != 1 || got[1].N != 2 || got[0].ID != cr.ID || !got[1].Due.Equal(Start.Add(20*time.Minute)) || got[1].Last {
		t.Fatalf("fires %+v", got)
	}
	c.Advance(10 * time.Minute)
	tick(t, s)
	c.Advance(time.Hour)
	tick(t, s)
	if got := f.list(); len(got) != 3 || !got[2].Last {
		t.Fatalf("max_fires 3: %+v", got)
	}
	if ls, _ := s.List(context.Background(), "main"); len(ls.Schedules) != 0 {
		t.Errorf("a spent schedule is still listed: %+v", ls)
	}
}

// restartAfterDowntimeCoalesces: a schedule whose fires fell due while
// the host was down fires once, late, then keeps its cadence.
func restartAfterDowntimeCoalesces(t *testing.T, open Open) {
	c := NewClock(Start)
	f := &fires{}
	s := openWith(t, open, c, f, Options{})
	Create(t, s, c.Now(), "main", schedule.Spec{Cron: "*/5 * * * *", Message: "poll"})
	s.Close()
	c.Advance(time.Hour + 2*time.Minute) // 20:32
	s = openWith(t, open, c, f, Options{Again: s})
	if n := tick(t, s); n != 1 {
		t.Fatalf("%d fires after downtime", n)
	}
	next, ok, err := s.NextDue(context.Background())
	if err != nil || !ok || !next.Equal(time.Date(2026, 12, 7, 20, 35, 0, 0, time.UTC)) {
		t.Fatalf("next %v %v %v", next, ok, err)
	}
	if got := f.list(); !got[0].Due.Equal(Start.Add(5 * time.Minute)) {
		t.Errorf("due %v", got[0].Due)
	}
}

func createGrantsWhatThePolicyAllows(t *testing.T, open Open) {
	for _, policy := range []schedule.Wake{schedule.SteersOnly, schedule.WakesIdle} {
		c := NewClock(Start)
		s := openWith(t, open, c, &fires{}, Options{Wake: policy})
		asked := Create(t, s, c.Now(), "main", schedule.Spec{InSeconds: 60, Wake: true, Message: "m"})
		unasked := Create(t, s, c.Now(), "main", schedule.Spec{InSeconds: 60, Message: "m"})
		if asked.Wake != policy || unasked.Wake != schedule.SteersOnly {
			t.Errorf("policy %v: asked %v, unasked %v", policy, asked.Wake, unasked.Wake)
		}
		s.Close()
	}
}

func liveLimitVisibilityAndCancel(t *testing.T, open Open) {
	c := NewClock(Start)
	s := openWith(t, open, c, &fires{}, Options{Limits: schedule.Limits{MaxLive: 2}})
	ctx := context.Background()
	child := "sub:main/a-1"
	mine := Create(t, s, c.Now(), "main", schedule.Spec{EverySeconds: 60, Message: "m"})
	onChild := Create(t, s, c.Now(), "main", schedule.Spec{EverySeconds: 60, Message: "m", Target: child})
	byChild := Create(t, s, c.Now(), child, schedule.Spec{EverySeconds: 120, Message: "m"})
	r, _ := schedule.Decode(schedule.Spec{EverySeconds: 60, Message: "m", Target: child}, "main", c.Now(), s.Limits())
	if _, err := s.Create(ctx, r); tool.CodeOf(err) != schedule.CodeScheduleLimit {
		t.Errorf("third on the child: %v", err)
	}
	if _, err := s.Create(ctx, schedule.Request{Strand: "main", Target: "other", Timing: r.Timing, Expires: r.Expires, At: r.At, Message: "m"}); tool.CodeOf(err) == "" {
		t.Error("the seam admitted a target that is no descendant")
	}
	ls, err := s.List(ctx, "main")
	if err != nil || len(ls.Schedules) != 3 {
		t.Fatalf("main sees %+v, %v", ls, err)
	}
	ls, _ = s.List(ctx, child)
	if len(ls.Schedules) != 1 || ls.Schedules[0].ID != byChild.ID {
		t.Fatalf("the child sees %+v", ls)
	}
	if _, err := s.Cancel(ctx, child, onChild.ID); tool.CodeOf(err) != schedule.CodeUnknownSchedule {
		t.Errorf("the child cancelled its parent's schedule: %v", err)
	}
	if _, err := s.Cancel(ctx, "other", mine.ID); tool.CodeOf(err) != schedule.CodeUnknownSchedule {
		t.Errorf("a stranger cancelled: %v", err)
	}
	if cd, err := s.Cancel(ctx, "main", byChild.ID); err != nil || cd.Target != child {
		t.Errorf("the parent cancelling its child's: %+v %v", cd, err)
	}
	if _, err := s.Cancel(ctx, "main", byChild.ID); tool.CodeOf(err) != schedule.CodeUnknownSchedule {
		t.Errorf("cancelled twice: %v", err)
	}
	if _, err := s.Cancel(ctx, "main", "bogus"); tool.CodeOf(err) != schedule.CodeUnknownSchedule {
		t.Errorf("bogus id: %v", err)
	}
	s.Close()
	if _, err := s.List(ctx, "main"); tool.CodeOf(err) != schedule.CodeSchedulesUnavailable {
		t.Errorf("after Close: %v", err)
	}
}

// firesKeepTheirBounds: under any schedules and any advance of the
// clock, with restarts between, no fire comes before its time, none at
// or after its expiry, never more than max_fires, a one-shot once, two
// fires of one schedule at least MinInterval apart, and none is
// delivered twice.
func firesKeepTheirBounds(t *testing.T, open Open) {
	rapid.Check(t, func(rt *rapid.T) {
		c := NewClock(Start.Add(time.Duration(rapid.IntRange(0, 3600).Draw(rt, "offset")) * time.Second))
		f := &fires{}
		o := Options{Limits: schedule.Limits{MinInterval: time.Duration(rapid.SampledFrom([]int{60, 300}).Draw(rt, "min_interval")) * time.Second}}
		s := openWith(t, open, c, f, o)
		defer func() { s.Close() }()
		type plan struct {
			r        schedule.Request
			maxFires int
		}
		plans := map[string]plan{}
		for i := range rapid.IntRange(1, 5).Draw(rt, "schedules") {
			var spec schedule.Spec
			switch rapid.IntRange(0, 2).Draw(rt, fmt.Sprint("kind", i)) {
			case 0:
				spec.EverySeconds = int64(rapid.IntRange(int(s.Limits().MinInterval/time.Second), 7200).Draw(rt, "every"))
			case 1:
				spec.Cron = rapid.SampledFrom([]string{"* * * * *", "*/7 * * * *", "0 * * * *", "15,16,17 * * * *", "0 9 * * 1-5"}).Draw(rt, "cron")
			default:
				spec.InSeconds = int64(rapid.IntRange(1, 86400).Draw(rt, "in"))
			}
			if spec.InSeconds == 0 {
				spec.MaxFires = rapid.IntRange(0, 20).Draw(rt, "max_fires")
				spec.ExpiresAfter = int64(rapid.IntRange(0, 2*86400).Draw(rt, "expires"))
			}
			spec.Message = "m"
			r, err := schedule.Decode(spec, "main", c.Now(), s.Limits())
			if err != nil {
				continue // an expiry before the first fire
			}
			cr, err := s.Create(context.Background(), r)
			if err != nil {
				rt.Fatal(err)
			}
			plans[cr.ID] = plan{r, r.MaxFires}
		}
		for i := range rapid.IntRange(1, 25).Draw(rt, "steps") {
			most := int64(900) // small steps meet a cadence fire by fire, large ones skip fires
			if rapid.Bool().Draw(rt, fmt.Sprint("large", i)) {
				most = 6 * 3600
			}
			c.Advance(time.Duration(rapid.Int64Range(0, most).Draw(rt, fmt.Sprint("advance", i))) * time.Second)
			if rapid.Bool().Draw(rt, fmt.Sprint("restart", i)) {
				s.Close()
				o.Again = s
				s = openWith(t, open, c, f, o)
			}
			if _, err := s.Tick(context.Background()); err != nil {
				rt.Fatal(err)
			}
			now := c.Now()
			byID := map[string][]Fire{}
			for _, x := range f.list() {
				byID[x.ID] = append(byID[x.ID], x)
			}
			for id, xs := range byID {
				p := plans[id]
				if p.maxFires > 0 && len(xs) > p.maxFires || p.r.Timing.Kind == schedule.Once && len(xs) > 1 {
					rt.Fatalf("%s fired %d times, max %d", id, len(xs), p.maxFires)
				}
				for k, x := range xs {
					if x.N != k+1 || x.Due.After(now) || !x.Due.After(p.r.At) || (p.r.Timing.Kind != schedule.Once && !x.Due.Before(p.r.Expires)) {
						rt.Fatalf("%s fire %d: %+v (now %v, asked %v, expires %v)", id, k, x, now, p.r.At, p.r.Expires)
					}
					if k > 0 && x.Due.Sub(xs[k-1].Due) < s.Limits().MinInterval {
						rt.Fatalf("%s fired %v after the last", id, x.Due.Sub(xs[k-1].Due))
					}
				}
			}
		}
	})
}

// runFiresAndStopsAtClose: Run delivers what is due and returns nil
// once the Scheduler is closed.
func runFiresAndStopsAtClose(t *testing.T, open Open) {
	c := NewClock(Start)
	got := make(chan Fire, 1)
	s := open(t, Options{Now: c.Now, Fire: func(_ context.Context, f Fire) { got <- f }})
	t.Cleanup(func() { s.Close() })
	cr := Create(t, s, c.Now(), "main", schedule.Spec{InSeconds: 30, Message: "m"})
	c.Advance(time.Minute)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	select {
	case f := <-got:
		if f.ID != cr.ID || !f.Last {
			t.Errorf("fire %+v", f)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run delivered nothing")
	}
	s.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after Close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after Close")
	}
}

// oneStrandCannotSpreadPastTheLiveLimit: the live limit is per target,
// and a target need only name a descendant, spawned or not, so a strand
// (a code-mode program loops cheaply) minting fresh descendant names
// would hold unbounded schedules in the host's store, each firing. The
// strand that creates them is bounded too. Control: the first MaxLive
// land, and another strand still creates its own.
func oneStrandCannotSpreadPastTheLiveLimit(t *testing.T, open Open) {
	c := NewClock(Start)
	s := openWith(t, open, c, &fires{}, Options{Limits: schedule.Limits{MaxLive: 2}})
	spec := func(target string) schedule.Spec {
		return schedule.Spec{EverySeconds: 60, Message: "m", Target: target}
	}
	Create(t, s, c.Now(), "main", spec("sub:main/x-1"))
	Create(t, s, c.Now(), "main", spec("sub:main/x-2"))
	r, err := schedule.Decode(spec("sub:main/x-3"), "main", c.Now(), s.Limits())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(context.Background(), r); tool.CodeOf(err) != schedule.CodeScheduleLimit {
		t.Errorf("a third schedule by main on a fresh descendant name: %v, want %s", err, schedule.CodeScheduleLimit)
	}
	Create(t, s, c.Now(), "other", spec(""))
}
