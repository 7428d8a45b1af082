package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/tool"
)

// clock is an injected clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fires records what Options.Fire heard.
type fires struct {
	mu  sync.Mutex
	got []Fire
}

func (f *fires) fire(_ context.Context, x Fire) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, x)
}

func (f *fires) list() []Fire {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Fire(nil), f.got...)
}

var start = time.Date(2026, 12, 7, 19, 30, 0, 0, time.UTC)

func open(t interface {
	Helper()
	Fatal(...any)
}, path string, c *clock, f *fires, o Options) *Scheduler {
	t.Helper()
	o.Now, o.Fire = c.Now, f.fire
	s, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func create(t testing.TB, s *Scheduler, c *clock, strand string, spec schedule.Spec) schedule.Created {
	t.Helper()
	r, err := schedule.Decode(spec, strand, c.Now(), s.Limits())
	if err != nil {
		t.Fatal(err)
	}
	cr, err := s.Create(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return cr
}

func tick(t testing.TB, s *Scheduler) int {
	t.Helper()
	n, err := s.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRestartDoesNotFireTwice: a fire delivered before a close is not
// delivered again by the reopened file, and the next one is.
func TestRestartDoesNotFireTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schedules.sqlite")
	c := &clock{now: start}
	f := &fires{}
	s := open(t, path, c, f, Options{})
	cr := create(t, s, c, "main", schedule.Spec{EverySeconds: 600, MaxFires: 3, Message: "check"})
	if tick(t, s) != 0 {
		t.Fatal("fired before its time")
	}
	c.advance(10 * time.Minute) // 19:40, the first multiple of 600 s after 19:30
	if tick(t, s) != 1 {
		t.Fatalf("fires %v", f.list())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, c, f, Options{})
	defer s.Close()
	if n := tick(t, s); n != 0 {
		t.Fatalf("the reopened file fired %d again: %v", n, f.list())
	}
	c.advance(10 * time.Minute)
	if tick(t, s) != 1 {
		t.Fatal("the next fire did not happen after the restart")
	}
	got := f.list()
	if len(got) != 2 || got[0].N != 1 || got[1].N != 2 || got[0].ID != cr.ID || !got[1].Due.Equal(start.Add(20*time.Minute)) || got[1].Last {
		t.Fatalf("fires %+v", got)
	}
	c.advance(10 * time.Minute)
	tick(t, s)
	c.advance(time.Hour)
	tick(t, s)
	if got := f.list(); len(got) != 3 || !got[2].Last {
		t.Fatalf("max_fires 3: %+v", got)
	}
	if ls, _ := s.List(context.Background(), "main"); len(ls.Schedules) != 0 {
		t.Errorf("a spent schedule is still listed: %+v", ls)
	}
}

// TestRestartAfterDowntimeCoalesces: a schedule whose fires fell due
// while the host was down fires once, late, then keeps its cadence.
func TestRestartAfterDowntimeCoalesces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schedules.sqlite")
	c := &clock{now: start}
	f := &fires{}
	s := open(t, path, c, f, Options{})
	create(t, s, c, "main", schedule.Spec{Cron: "*/5 * * * *", Message: "poll"})
	s.Close()
	c.advance(time.Hour + 2*time.Minute) // 20:32
	s = open(t, path, c, f, Options{})
	defer s.Close()
	if n := tick(t, s); n != 1 {
		t.Fatalf("%d fires after downtime", n)
	}
	next, ok, err := s.NextDue(context.Background())
	if err != nil || !ok || !next.Equal(time.Date(2026, 12, 7, 20, 35, 0, 0, time.UTC)) {
		t.Fatalf("next %v %v %v", next, ok, err)
	}
	if got := f.list(); !got[0].Due.Equal(start.Add(5 * time.Minute)) {
		t.Errorf("due %v", got[0].Due)
	}
}

func TestCreateGrantsWhatThePolicyAllows(t *testing.T) {
	for _, policy := range []schedule.Wake{schedule.SteersOnly, schedule.WakesIdle} {
		c := &clock{now: start}
		s := open(t, filepath.Join(t.TempDir(), "s.sqlite"), c, &fires{}, Options{Wake: policy})
		asked := create(t, s, c, "main", schedule.Spec{InSeconds: 60, Wake: true, Message: "m"})
		unasked := create(t, s, c, "main", schedule.Spec{InSeconds: 60, Message: "m"})
		if asked.Wake != policy || unasked.Wake != schedule.SteersOnly {
			t.Errorf("policy %v: asked %v, unasked %v", policy, asked.Wake, unasked.Wake)
		}
		s.Close()
	}
}

func TestLiveLimitVisibilityAndCancel(t *testing.T) {
	c := &clock{now: start}
	s := open(t, filepath.Join(t.TempDir(), "s.sqlite"), c, &fires{}, Options{Limits: schedule.Limits{MaxLive: 2}})
	defer s.Close()
	ctx := context.Background()
	child := "sub:main/a-1"
	mine := create(t, s, c, "main", schedule.Spec{EverySeconds: 60, Message: "m"})
	onChild := create(t, s, c, "main", schedule.Spec{EverySeconds: 60, Message: "m", Target: child})
	byChild := create(t, s, c, child, schedule.Spec{EverySeconds: 120, Message: "m"})
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

// TestFiresKeepTheirBounds: under any schedules and any advance of the
// clock, with restarts between, no fire comes before its time, none at
// or after its expiry, never more than max_fires, a one-shot once, two
// fires of one schedule at least MinInterval apart, and none is
// delivered twice.
func TestFiresKeepTheirBounds(t *testing.T) {
	dir := t.TempDir()
	runs := 0
	rapid.Check(t, func(rt *rapid.T) {
		runs++
		path := filepath.Join(dir, fmt.Sprint(runs, ".sqlite"))
		c := &clock{now: start.Add(time.Duration(rapid.IntRange(0, 3600).Draw(rt, "offset")) * time.Second)}
		f := &fires{}
		o := Options{Limits: schedule.Limits{MinInterval: time.Duration(rapid.SampledFrom([]int{60, 300}).Draw(rt, "min_interval")) * time.Second}}
		s := open(rt, path, c, f, o)
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
			c.advance(time.Duration(rapid.Int64Range(0, most).Draw(rt, fmt.Sprint("advance", i))) * time.Second)
			if rapid.Bool().Draw(rt, fmt.Sprint("restart", i)) {
				s.Close()
				s = open(rt, path, c, f, o)
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

// TestRunFiresAndStopsAtClose: Run delivers what is due and returns nil
// once the Scheduler is closed.
func TestRunFiresAndStopsAtClose(t *testing.T) {
	c := &clock{now: start}
	got := make(chan Fire, 1)
	s, err := Open(filepath.Join(t.TempDir(), "s.sqlite"), Options{Now: c.Now, Fire: func(_ context.Context, f Fire) { got <- f }})
	if err != nil {
		t.Fatal(err)
	}
	cr := create(t, s, c, "main", schedule.Spec{InSeconds: 30, Message: "m"})
	c.advance(time.Minute)
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

// TestRedteamOneStrandCannotSpreadPastTheLiveLimit: the live limit is per
// target, and a target need only name a descendant, spawned or not, so
// a strand (a code-mode program loops cheaply) minting fresh descendant
// names held unbounded schedules in the host's store, each firing. The
// strand that creates them is bounded too. Control: the first MaxLive
// land, and another strand still creates its own.
func TestRedteamOneStrandCannotSpreadPastTheLiveLimit(t *testing.T) {
	c := &clock{now: start}
	s := open(t, filepath.Join(t.TempDir(), "s.sqlite"), c, &fires{}, Options{Limits: schedule.Limits{MaxLive: 2}})
	defer s.Close()
	spec := func(target string) schedule.Spec {
		return schedule.Spec{EverySeconds: 60, Message: "m", Target: target}
	}
	create(t, s, c, "main", spec("sub:main/x-1"))
	create(t, s, c, "main", spec("sub:main/x-2"))
	r, err := schedule.Decode(spec("sub:main/x-3"), "main", c.Now(), s.Limits())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(context.Background(), r); tool.CodeOf(err) != schedule.CodeScheduleLimit {
		t.Errorf("a third schedule by main on a fresh descendant name: %v, want %s", err, schedule.CodeScheduleLimit)
	}
	create(t, s, c, "other", spec(""))
}
