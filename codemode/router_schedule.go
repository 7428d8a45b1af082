package codemode

import (
	"context"
	"encoding/json"
	"math"

	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/tool"
)

// scheduleCall serves cap/schedule (create, list, cancel) through the
// registry's schedule tools, so a program meets exactly their decoding,
// bounds, refusal codes and the host's Schedules seam behind them, with
// the calling strand bound by the host from the code_mode call, never
// sent over the channel. schedule.create refuses no timing, or more than
// one, and a utc_offset beside a timing other than cron
// (schedule.Spec.CheckShape) before the host sees the request. None of
// them asks the broker for anything.
func (h *seamHost) scheduleCall(ctx context.Context, a *capArgs) (any, error) {
	var (
		name string
		args any
	)
	switch a.cap {
	case "schedule.create":
		s := schedule.Spec{
			EverySeconds: a.integer("every_s", 0, math.MinInt64, math.MaxInt64),
			Cron:         a.str("cron", false),
			UTCOffset:    a.str("utc_offset", false),
			At:           a.str("at", false),
			InSeconds:    a.integer("in_s", 0, math.MinInt64, math.MaxInt64),
			MaxFires:     int(a.integer("max_fires", 0, math.MinInt32, math.MaxInt32)),
			ExpiresAfter: a.integer("expires_after_s", 0, math.MinInt64, math.MaxInt64),
			Wake:         a.boolean("wake"),
			Target:       a.str("target", false),
			Message:      a.str("message", true),
		}
		if err := a.done(); err != nil {
			return nil, err
		}
		if err := s.CheckShape(); err != nil {
			return nil, &CapError{Code: tool.CodeOf(err), Message: "schedule.create: " + schedule.ReasonOf(err)}
		}
		name, args = schedule.CreateToolName, s
	case "schedule.list":
		if err := a.done(); err != nil {
			return nil, err
		}
		name, args = schedule.ListToolName, struct{}{}
	default: // schedule.cancel
		id := a.str("id", true)
		if err := a.done(); err != nil {
			return nil, err
		}
		name, args = schedule.CancelToolName, map[string]string{"id": id}
	}
	raw, _ := json.Marshal(args)
	c := *h.call
	c.RaiseRefusal = nil // a program's refusals are answered in band, never raised
	out := h.reg.Dispatch(ctx, &c, name, raw)
	if out.IsError {
		msg := out.Text
		if d, ok := out.Details.(schedule.RefusalDetails); ok {
			msg = a.cap + ": " + d.Reason
		}
		return nil, &CapError{Code: out.Code, Message: msg}
	}
	switch d := out.Details.(type) {
	case schedule.CreateDetails:
		return scheduleResult(d.ID, d.Target, "", d.Wake, d.When, d.Cadence, d.Next.Unix(), 0, d.MaxFires), nil
	case schedule.ListDetails:
		rows := make([]any, len(d.Schedules))
		for i, r := range d.Schedules {
			rows[i] = scheduleResult(r.ID, r.Target, r.Owner, r.Wake, r.When, r.Cadence, r.Next.Unix(), r.Fires, r.MaxFires)
		}
		return map[string]any{"schedules": rows, "more": int64(d.More)}, nil
	case schedule.Cancelled:
		return map[string]any{"id": d.ID, "target": d.Target, "fires": int64(d.Fires)}, nil
	}
	return nil, &CapError{Code: schedule.CodeSchedulesUnavailable, Message: a.cap + ": the schedule tool answered no details: " + out.Text}
}

// scheduleResult is one schedule as cap/schedule reads it: the sentence
// and, beside it, the structured cadence a program reads without
// parsing prose.
func scheduleResult(id, target, owner string, wake schedule.Wake, when string, c schedule.Cadence, next int64, fires, maxFires int) map[string]any {
	return map[string]any{
		"id": id, "target": target, "owner": owner, "wake": bool(wake), "when": when, "next": next,
		"fires": int64(fires), "max_fires": int64(maxFires),
		"cadence": map[string]any{"kind": string(c.Kind), "every_s": c.EverySeconds, "cron": c.Cron, "utc_offset": c.UTCOffset,
			"at": c.At, "expires": c.Expires},
	}
}
