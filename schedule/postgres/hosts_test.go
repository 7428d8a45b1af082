package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloom/loom/history/postgres/postgrestest"
	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/schedule/scheduletest"
	"github.com/agentloom/loom/tool"
)

// The many-hosts tests open several Schedulers, each with its own pool,
// on one schema and tick them at once against one injected clock.
const (
	hosts     = 4
	schedules = 24
	rounds    = 6
)

// fireKey is one fire of one schedule.
type fireKey struct {
	id string
	n  int
}

// fireRounds creates the schedules, then for each round advances the
// clock by one period and ticks every host at once; it answers how many
// times each fire was delivered, across hosts. unclaimed turns the claim
// off (the control); lockstep holds every host, inside its transaction,
// until all have read what is due, so their reads surely overlap.
func fireRounds(t *testing.T, unclaimed, lockstep bool) map[fireKey]int {
	url := postgrestest.URL(t)
	schema := postgrestest.Schema(t, url)
	c := scheduletest.NewClock(scheduletest.Start)
	var (
		mu    sync.Mutex
		count = map[fireKey]int{}
		round atomic.Pointer[sync.WaitGroup]
	)
	hs := make([]*Scheduler, hosts)
	var opening sync.WaitGroup
	for i := range hs {
		opening.Go(func() { // the hosts also race to migrate the schema
			s, err := Open(context.Background(), url, Options{Schema: schema, Now: c.Now, BusyTimeout: time.Minute,
				Fire: func(_ context.Context, f Fire) {
					mu.Lock()
					defer mu.Unlock()
					count[fireKey{f.ID, f.N}]++
				}})
			if err != nil {
				t.Error(err)
				return
			}
			s.test.unclaimed = unclaimed
			if lockstep {
				s.test.selected = func() {
					wg := round.Load()
					wg.Done()
					wg.Wait()
				}
			}
			hs[i] = s
		})
	}
	opening.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, s := range hs {
		t.Cleanup(func() { s.Close() })
	}
	for i := range schedules {
		scheduletest.Create(t, hs[i%hosts], c.Now(), fmt.Sprint("s", i), schedule.Spec{EverySeconds: 60, MaxFires: rounds, Message: "m"})
	}
	for range rounds + 1 {
		c.Advance(time.Minute)
		wg := new(sync.WaitGroup)
		wg.Add(hosts)
		round.Store(wg)
		var ticking sync.WaitGroup
		for _, s := range hs {
			ticking.Go(func() {
				if _, err := s.Tick(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		ticking.Wait()
	}
	if next, ok, err := hs[0].NextDue(context.Background()); err != nil || ok {
		t.Errorf("schedules left after their last fire: %v %v", next, err)
	}
	return count
}

// TestManyHostsFireOnce: hosts ticking one schema at once deliver every
// fire, each exactly once, whether they run freely or in lockstep.
func TestManyHostsFireOnce(t *testing.T) {
	for _, lockstep := range []bool{false, true} {
		t.Run(fmt.Sprint("lockstep=", lockstep), func(t *testing.T) {
			count := fireRounds(t, false, lockstep)
			if len(count) != schedules*rounds {
				t.Errorf("%d fires delivered, want %d", len(count), schedules*rounds)
			}
			for k, n := range count {
				if n != 1 || k.n < 1 || k.n > rounds {
					t.Errorf("fire %d of %s delivered %d times", k.n, k.id, n)
				}
			}
		})
	}
}

// TestManyHostsControl: with the claim turned off, hosts in lockstep
// deliver every fire once each, so TestManyHostsFireOnce would see
// duplicates if the claim did not prevent them.
func TestManyHostsControl(t *testing.T) {
	count := fireRounds(t, true, true)
	if len(count) != schedules*rounds {
		t.Errorf("%d fires delivered, want %d", len(count), schedules*rounds)
	}
	for k, n := range count {
		if n != hosts {
			t.Errorf("unclaimed, fire %d of %s delivered %d times, want %d", k.n, k.id, n, hosts)
		}
	}
}

// TestManyHostsKeepTheLiveLimit: hosts creating on one target at once
// admit at most Limits.MaxLive.
func TestManyHostsKeepTheLiveLimit(t *testing.T) {
	const maxLive, each = 3, 3
	first := openTest(t, Options{Limits: schedule.Limits{MaxLive: maxLive}})
	c := scheduletest.NewClock(scheduletest.Start)
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for range hosts {
		s := openTest(t, Options{Schema: first.Schema(), Limits: schedule.Limits{MaxLive: maxLive}, BusyTimeout: time.Minute})
		wg.Go(func() {
			for range each {
				r, err := schedule.Decode(schedule.Spec{EverySeconds: 60, Message: "m"}, "main", c.Now(), s.Limits())
				if err != nil {
					t.Error(err)
					return
				}
				_, err = s.Create(context.Background(), r)
				switch tool.CodeOf(err) {
				case "":
					admitted.Add(1)
				case schedule.CodeScheduleLimit:
					refused.Add(1)
				default:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if admitted.Load() != maxLive || refused.Load() != hosts*each-maxLive {
		t.Errorf("admitted %d, refused %d", admitted.Load(), refused.Load())
	}
	if ls, _ := first.List(context.Background(), "main"); len(ls.Schedules) != maxLive {
		t.Errorf("%d live", len(ls.Schedules))
	}
}
