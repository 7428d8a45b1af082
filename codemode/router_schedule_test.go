package codemode

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/schedule/sqlite"
)

// newScheduleSession is newSession whose registry also holds the
// schedule tools over a reference Scheduler (steer-only), so cap/schedule
// is offered.
func newScheduleSession(t *testing.T) (*session, *sqlite.Scheduler) {
	t.Helper()
	s := newSession(t, nil)
	sch, err := sqlite.Open(filepath.Join(t.TempDir(), "schedules.sqlite"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sch.Close() })
	for _, tl := range schedule.Tools(sch) {
		if err := s.reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	dir, b := e2eShared(t)
	if s.eng, err = New(Options{Registry: s.reg, Broker: b, Jobs: s.jobs, Builder: BuilderOptions{CacheDir: dir, StdPackages: e2eStd}}); err != nil {
		t.Fatal(err)
	}
	return s, sch
}

// TestScheduleIsOfferedWithItsTools: cap/schedule is on the workspace
// seam only where the registry registers the schedule tools.
func TestScheduleIsOfferedWithItsTools(t *testing.T) {
	t.Parallel()
	plain := newSession(t, nil)
	if slices.Contains(plain.eng.Seams()[0].Packages, "cap/schedule") {
		t.Errorf("offered without the schedule tools: %v", plain.eng.Seams()[0].Packages)
	}
	s, _ := newScheduleSession(t)
	if !slices.Contains(s.eng.Seams()[0].Packages, "cap/schedule") {
		t.Errorf("not offered with them: %v", s.eng.Seams()[0].Packages)
	}
}

// TestScheduleRouterChecksOneTimingFirst: a request with no timing or
// two, or an offset beside every, is refused by the router before the
// tool (and so the host) sees it; a good one lands on the calling
// strand with its cadence beside the sentence.
func TestScheduleRouterChecksOneTimingFirst(t *testing.T) {
	t.Parallel()
	s, sch := newScheduleSession(t)
	h := s.eng.newSeamHost(s.call, s.eng.Seams()[0], nil)
	ctx := context.Background()
	for _, tt := range []struct {
		args map[string]any
		code string
	}{
		{map[string]any{"message": "m"}, string(schedule.CodeOneTiming)},
		{map[string]any{"message": "m", "every_s": int64(60), "in_s": int64(60)}, string(schedule.CodeOneTiming)},
		{map[string]any{"message": "m", "every_s": int64(60), "utc_offset": "+01:00"}, string(schedule.CodeOffsetWithoutCron)},
		{map[string]any{"message": "m", "in_s": int64(60), "target": "other"}, string(agent.CodeNotDescendant)},
		{map[string]any{"message": "m", "every_s": int64(60), "when": "now"}, string(codeInvalidCapabilityArguments)},
	} {
		_, err := h.route(ctx, "schedule.create", tt.args)
		if err == nil || !strings.HasPrefix(err.Error(), tt.code+":") {
			t.Errorf("%v: %v, want %s", tt.args, err, tt.code)
		}
	}
	if ls, _ := sch.List(ctx, "main"); len(ls.Schedules) != 0 {
		t.Fatalf("a refused request reached the host: %+v", ls)
	}
	res, err := h.route(ctx, "schedule.create", map[string]any{"message": "m", "cron": "0 9 * * *", "utc_offset": "+05:30", "wake": true})
	if err != nil {
		t.Fatal(err)
	}
	m := res.(map[string]any)
	c := m["cadence"].(map[string]any)
	if m["wake"] != false || c["kind"] != "cron" || c["utc_offset"] != "+05:30" || !strings.Contains(m["when"].(string), "cron") {
		t.Errorf("created %v", m)
	}
	res, err = h.route(ctx, "schedule.list", map[string]any{})
	if err != nil || len(res.(map[string]any)["schedules"].([]any)) != 1 {
		t.Fatalf("list %v %v", res, err)
	}
	if _, err := h.route(ctx, "schedule.cancel", map[string]any{"id": m["id"]}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.route(ctx, "schedule.cancel", map[string]any{"id": m["id"]}); err == nil || !strings.HasPrefix(err.Error(), string(schedule.CodeUnknownSchedule)) {
		t.Errorf("cancel twice: %v", err)
	}
}

// TestScheduleFromAProgram: a program creates, lists and cancels a
// schedule through cap/schedule, and reads the structured cadence.
func TestScheduleFromAProgram(t *testing.T) {
	t.Parallel()
	s, _ := newScheduleSession(t)
	run := s.mustRun(t, `package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cap/schedule"
)

func main() {
	ctx := context.Background()
	c, err := schedule.Create(ctx, schedule.Request{Every: time.Hour, MaxFires: 3, Message: "check"})
	if err != nil {
		panic(err)
	}
	all, err := schedule.List(ctx)
	if err != nil {
		panic(err)
	}
	_, twice := schedule.Create(ctx, schedule.Request{Every: time.Hour, In: time.Minute, Message: "x"})
	var e *schedule.Error
	errors.As(twice, &e)
	fmt.Println(c.Target, c.Cadence.Kind, c.Cadence.Every, c.MaxFires, len(all), all[0].ID == c.ID, e.Code, schedule.Cancel(ctx, c.ID))
}
`)
	if got, want := strings.TrimSpace(string(run.Stdout)), "main interval 1h0m0s 3 1 true one_timing <nil>"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
}
