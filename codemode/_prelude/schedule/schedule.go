// Package schedule has a message delivered later, or on a cadence, to
// you or to a sub-agent you spawned (what schedule_create, schedule_list
// and schedule_cancel do). A Request gives exactly one timing of Every,
// Cron, At and In ("one_timing" otherwise); UTCOffset goes only with
// Cron ("offset_without_cron"). The host bounds the rest and refuses
// past its bounds with a code naming the bound; another strand as
// Target fails with "not_descendant", a full target with
// "schedule_limit". Wake is what the host granted, which may be less
// than asked. Create and Cancel need the schedule_create and
// schedule_cancel tools, List schedule_list ("tool_not_held").
//
// Example:
//
//	s, err := schedule.Create(ctx, schedule.Request{In: 10 * time.Minute, Message: "check the build"})
//	if err != nil {
//		panic(err)
//	}
//	all, err := schedule.List(ctx)
//	fmt.Println(s.ID, s.When, s.Cadence.Kind, len(all), err)
//	fmt.Println(schedule.Cancel(ctx, s.ID))
package schedule

import (
	"context"
	"time"

	"cap/internal/client"
)

// Error is the error every cap package returns: schedule.Error, fs.Error
// and the rest are one type. Fields: Cap, Code, Message.
type Error = client.Error

// Request asks for a schedule. Durations are whole seconds.
type Request struct {
	Every        time.Duration // repeat, aligned to the Unix epoch
	Cron         string        // five fields: minute hour day month weekday
	UTCOffset    string        // only with Cron, "+05:30": a fixed offset, not a time zone (no daylight saving)
	At           time.Time     // once, at this instant
	In           time.Duration // once, this long from now
	MaxFires     int           // 0: until it expires
	ExpiresAfter time.Duration // repeating only; 0: the host's longest
	Wake         bool          // ask to start a run when the target is idle
	Target       string        // "": you; or a sub-agent you spawned
	Message      string        // what each fire says
}

// Cadence is the admitted timing. Kind is "interval" (Every, Expires),
// "cron" (Cron, UTCOffset, Expires) or "one_shot" (At).
type Cadence struct {
	Kind            string
	Every           time.Duration
	Cron, UTCOffset string
	At, Expires     time.Time
}

// Schedule is one live schedule. When describes its Cadence in words;
// Wake is what the host granted; Owner (List only) created it.
type Schedule struct {
	ID, Target, Owner, When string
	Wake                    bool
	Cadence                 Cadence
	Next                    time.Time
	Fires, MaxFires         int
}

// Create creates a schedule.
func Create(ctx context.Context, r Request) (Schedule, error) {
	const name = "schedule.create"
	args := map[string]any{"message": r.Message}
	put := func(k string, v int64) {
		if v != 0 {
			args[k] = v
		}
	}
	put("every_s", int64(r.Every/time.Second))
	put("in_s", int64(r.In/time.Second))
	put("max_fires", int64(r.MaxFires))
	put("expires_after_s", int64(r.ExpiresAfter/time.Second))
	for k, v := range map[string]string{"cron": r.Cron, "utc_offset": r.UTCOffset, "target": r.Target} {
		if v != "" {
			args[k] = v
		}
	}
	if !r.At.IsZero() {
		args["at"] = r.At.Format(time.RFC3339)
	}
	if r.Wake {
		args["wake"] = true
	}
	m, err := client.Call(ctx, name, args)
	if err != nil {
		return Schedule{}, err
	}
	f := client.Read(m)
	s := read(f)
	return s, f.Err(name)
}

// List returns the live schedules you or your sub-agents created,
// soonest first (the host shows a bounded number).
func List(ctx context.Context) (all []Schedule, err error) {
	const name = "schedule.list"
	m, err := client.Call(ctx, name, map[string]any{})
	if err != nil {
		return nil, err
	}
	f := client.Read(m)
	f.Maps("schedules", func(r *client.Fields) { all = append(all, read(r)) })
	return all, f.Err(name)
}

// Cancel ends the schedule id ("unknown_schedule" when you may not see it).
func Cancel(ctx context.Context, id string) error {
	const name = "schedule.cancel"
	m, err := client.Call(ctx, name, map[string]any{"id": id})
	if err != nil {
		return err
	}
	return client.Read(m).Err(name)
}

func read(f *client.Fields) Schedule {
	s := Schedule{ID: f.Str("id"), Target: f.Str("target"), Owner: f.Str("owner"), When: f.Str("when"), Wake: f.Bool("wake"),
		Next: time.Unix(int64(f.Int("next")), 0), Fires: f.Int("fires"), MaxFires: f.Int("max_fires")}
	f.Map("cadence", func(c *client.Fields) {
		s.Cadence = Cadence{Kind: c.Str("kind"), Every: time.Duration(c.Int("every_s")) * time.Second, Cron: c.Str("cron"),
			UTCOffset: c.Str("utc_offset")}
		if at := c.Int("at"); at != 0 {
			s.Cadence.At = time.Unix(int64(at), 0)
		}
		if exp := c.Int("expires"); exp != 0 {
			s.Cadence.Expires = time.Unix(int64(exp), 0)
		}
	})
	return s
}
