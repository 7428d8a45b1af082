package postgres

import (
	"context"
	"testing"

	historypg "github.com/agentloom/loom/history/postgres"
	"github.com/agentloom/loom/history/postgres/postgrestest"
	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/schedule/scheduletest"
	"github.com/agentloom/loom/tool"
)

// openTest opens a Scheduler on o.Schema, or on a fresh schema dropped
// at cleanup, and closes it at cleanup.
func openTest(t testing.TB, o Options) *Scheduler {
	t.Helper()
	url := postgrestest.URL(t)
	if o.Schema == "" {
		o.Schema = postgrestest.Schema(t, url)
	}
	s, err := Open(context.Background(), url, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// asSuite is o for the suite's Options.
func asSuite(o scheduletest.Options) Options {
	po := Options{Limits: o.Limits, Wake: o.Wake, Now: o.Now}
	if o.Fire != nil {
		po.Fire = func(ctx context.Context, f Fire) {
			o.Fire(ctx, scheduletest.Fire{ID: f.ID, Owner: f.Owner, Target: f.Target, Message: f.Message, Wake: f.Wake, Due: f.Due, N: f.N, Last: f.Last})
		}
	}
	if o.Again != nil {
		po.Schema = o.Again.(*Scheduler).Schema()
	}
	return po
}

// TestConformance runs the behaviour every scheduler shows through the
// seam (package scheduletest) against PostgreSQL.
func TestConformance(t *testing.T) {
	postgrestest.URL(t)
	scheduletest.Run(t, func(t *testing.T, o scheduletest.Options) scheduletest.Scheduler {
		return openTest(t, asSuite(o))
	})
}

// TestOpenRefusals: a bad schema name, a bad URL and a newer schema are
// refused schedules_unavailable.
func TestOpenRefusals(t *testing.T) {
	ctx := context.Background()
	if _, err := Open(ctx, "postgres://localhost/x", Options{Schema: "Bad-Name"}); tool.CodeOf(err) != schedule.CodeSchedulesUnavailable {
		t.Errorf("bad schema: %v", err)
	}
	if _, err := Open(ctx, "::not a url", Options{}); tool.CodeOf(err) != schedule.CodeSchedulesUnavailable {
		t.Errorf("bad URL: %v", err)
	}
	s := openTest(t, Options{})
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+s.schema+`.schedule_version(version) VALUES($1)`, schemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, postgrestest.URL(t), Options{Schema: s.Schema()}); tool.CodeOf(err) != schedule.CodeSchedulesUnavailable {
		t.Errorf("newer schema: %v", err)
	}
}

// TestOpenPoolSharesTheHostsPool: a Scheduler on the host's pool, in a
// schema beside another, names its tables itself and leaves the pool
// open when closed.
func TestOpenPoolSharesTheHostsPool(t *testing.T) {
	first := openTest(t, Options{})
	c := scheduletest.NewClock(scheduletest.Start)
	s, err := OpenPool(context.Background(), first.pool, Options{Schema: first.Schema() + "_b", Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { postgrestest.Drop(t, postgrestest.URL(t), first.Schema()+"_b") })
	scheduletest.Create(t, s, c.Now(), "main", schedule.Spec{InSeconds: 60, Message: "m"})
	if ls, err := first.List(context.Background(), "main"); err != nil || len(ls.Schedules) != 0 {
		t.Errorf("another schema sees %+v, %v", ls, err)
	}
	s.Close()
	if _, _, err := first.NextDue(context.Background()); err != nil {
		t.Errorf("the pool was closed with the Scheduler: %v", err)
	}
	if _, err := s.List(context.Background(), "main"); tool.CodeOf(err) != schedule.CodeSchedulesUnavailable {
		t.Errorf("after Close: %v", err)
	}
}

// TestBesideTheHistory: the schedules may share the schema of a
// history/postgres index; neither's tables or version disturb the other.
func TestBesideTheHistory(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.Schema(t, url)
	ctx := context.Background()
	h, err := historypg.Open(ctx, url, historypg.Options{Schema: schema, NoSubstrings: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	c := scheduletest.NewClock(scheduletest.Start)
	s := openTest(t, Options{Schema: schema, Now: c.Now})
	scheduletest.Create(t, s, c.Now(), "main", schedule.Spec{InSeconds: 60, Message: "m"})
	h.Close()
	if h, err = historypg.Open(ctx, url, historypg.Options{Schema: schema}); err != nil {
		t.Fatalf("the history reopened beside the schedules: %v", err)
	}
	s.Close()
	if s, err = Open(ctx, url, Options{Schema: schema}); err != nil {
		t.Fatalf("the schedules reopened beside the history: %v", err)
	}
	defer s.Close()
	if ls, err := s.List(ctx, "main"); err != nil || len(ls.Schedules) != 1 {
		t.Errorf("listed %+v, %v", ls, err)
	}
}
