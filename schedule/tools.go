package schedule

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentloom/loom/tool"
)

// The names of the schedule tools.
const (
	CreateToolName = "schedule_create"
	ListToolName   = "schedule_list"
	CancelToolName = "schedule_cancel"
)

// CreateDetails is the Details of a successful schedule_create: what
// the host granted, and the sentence describing its cadence.
type CreateDetails struct {
	Created
	When string `json:"when"`
}

// ListedRow is one row of ListDetails: a Row and its sentence.
type ListedRow struct {
	Row
	When string `json:"when"`
}

// ListDetails is the Details of a successful schedule_list.
type ListDetails struct {
	Schedules []ListedRow `json:"schedules"`
	More      int         `json:"more,omitempty"`
}

type cancelArgs struct {
	ID string `json:"id" jsonschema:"the id schedule_create answered"`
}

// Tools returns schedule_create, schedule_list and schedule_cancel over
// s, as one list so a host cannot register a writer without the
// reader. They read s.Limits once, to state the bounds in their
// descriptions and decode requests against them. The two writers are
// ReplayNever (a replayed create would add a schedule the model already
// has; a replayed cancel could end one created since) and Exclusive
// (two in one batch would race for one strand's live count); the
// listing is ReplaySafe, Concurrent and read-only. None asks the broker
// for anything. A nil s gives tools that refuse every call with
// CodeSchedulesUnavailable.
func Tools(s Schedules) []tool.Tool {
	var l Limits
	if s != nil {
		l = s.Limits()
	}
	l = l.Normalized()
	unavailable := func(name string) tool.Outcome {
		return refusalOutcome(name, Refuse(CodeSchedulesUnavailable, "this host keeps no schedules"))
	}
	create := tool.Typed(tool.Tool{
		Name:  CreateToolName,
		Title: "Create a schedule",
		Description: fmt.Sprintf("Schedule a message to you, or to a sub-agent you spawned, with exactly one timing: every_seconds "+
			"(%d to %d), cron (five fields, UTC unless utc_offset), at (RFC 3339) or in_seconds. A repeating schedule expires "+
			"after expires_after_s (default and most %d) or max_fires (at most %d); at most %d live per target and per creator. "+
			"wake: true asks to start a run when the target is idle; the answer says what the host granted.",
			int64(l.MinInterval/time.Second), int64(l.MaxLifetime/time.Second), int64(l.MaxLifetime/time.Second), l.MaxFires, l.MaxLive),
		PromptSnippet: "schedule_create: have a message delivered later or on a cadence",
		Replay:        tool.ReplayNever,
		Mode:          tool.Exclusive,
	}, func(ctx context.Context, c *tool.Call, a Spec) tool.Outcome {
		if s == nil {
			return unavailable(CreateToolName)
		}
		r, err := Decode(a, c.Strand, c.Clock(), l)
		if err != nil {
			return refusalOutcome(CreateToolName, err)
		}
		cr, err := s.Create(ctx, r)
		if err != nil {
			return refusalOutcome(CreateToolName, err)
		}
		return tool.Success(renderCreated(r, cr)).WithDetails(CreateDetails{Created: cr, When: cr.Cadence.String()})
	})
	list := tool.Typed(tool.Tool{
		Name:          ListToolName,
		Title:         "List schedules",
		ReadOnly:      true,
		Description:   fmt.Sprintf("List the live schedules you or your sub-agents created, soonest first (at most %d).", MaxListed),
		PromptSnippet: "schedule_list: the schedules you created",
		Replay:        tool.ReplaySafe,
		Mode:          tool.Concurrent,
	}, func(ctx context.Context, c *tool.Call, _ struct{}) tool.Outcome {
		if s == nil {
			return unavailable(ListToolName)
		}
		ls, err := s.List(ctx, c.Strand)
		if err != nil {
			return refusalOutcome(ListToolName, err)
		}
		return renderListed(ls)
	})
	cancel := tool.Typed(tool.Tool{
		Name:          CancelToolName,
		Title:         "Cancel a schedule",
		Description:   "Cancel a schedule you or a sub-agent of yours created, by the id schedule_create or schedule_list answered.",
		PromptSnippet: "schedule_cancel: end a schedule",
		Replay:        tool.ReplayNever,
		Mode:          tool.Exclusive,
	}, func(ctx context.Context, c *tool.Call, a cancelArgs) tool.Outcome {
		if s == nil {
			return unavailable(CancelToolName)
		}
		if a.ID == "" {
			return refusalOutcome(CancelToolName, Refuse(CodeUnknownSchedule, "id is empty; give an id schedule_list shows"))
		}
		cd, err := s.Cancel(ctx, c.Strand, a.ID)
		if err != nil {
			return refusalOutcome(CancelToolName, err)
		}
		return tool.Success(fmt.Sprintf("Schedule %s for %s is cancelled after %d fires.", quote(cd.ID), quote(cd.Target), cd.Fires)).WithDetails(cd)
	})
	return []tool.Tool{create, list, cancel}
}

// renderCreated is the text schedule_create answers for r admitted as
// c, with the note on what a fire does to an idle target.
func renderCreated(r Request, c Created) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Schedule %s for %s: %s; first fire %s", quote(c.ID), quote(c.Target), c.Cadence, c.Next.UTC().Format(time.RFC3339))
	if c.MaxFires > 0 {
		fmt.Fprintf(&b, "; at most %d fires", c.MaxFires)
	}
	b.WriteString(".")
	b.WriteString(wakeNote(r, c))
	return b.String()
}

// wakeNote says what a fire does to an idle target when that may not be
// what the model expects: the policy granted less than it asked, or it
// scheduled itself without asking to be woken. A schedule on a
// sub-agent that did not ask gets no note.
func wakeNote(r Request, c Created) string {
	switch {
	case c.Wake == WakesIdle:
		return " A fire starts a run when the target is idle."
	case r.Wake == WakesIdle:
		return " You asked to wake, but the host's policy grants less: it will only steer, reaching the target's running turn or waiting for its next run, and never starting one."
	case c.Target == r.Strand:
		return " It will not start a run: while you are idle a fire waits for your next run. Pass wake: true to be woken."
	}
	return ""
}

// renderListed is schedule_list's answer for ls.
func renderListed(ls Listed) tool.Outcome {
	rows := ls.Schedules
	if len(rows) > MaxListed {
		ls.More += len(rows) - MaxListed
		rows = rows[:MaxListed]
	}
	d := ListDetails{Schedules: make([]ListedRow, 0, len(rows)), More: ls.More}
	var b strings.Builder
	if len(rows) == 0 {
		b.WriteString("No live schedules.")
	}
	for i, r := range rows {
		r.Message = clip(r.Message, MaxListedMessageBytes)
		d.Schedules = append(d.Schedules, ListedRow{Row: r, When: r.Cadence.String()})
		if i > 0 {
			b.WriteString("\n")
		}
		does := "steers"
		if r.Wake == WakesIdle {
			does = "wakes"
		}
		fmt.Fprintf(&b, "%s for %s (by %s): %s; next %s; fired %d", quote(r.ID), quote(r.Target), quote(r.Owner), r.Cadence,
			r.Next.UTC().Format(time.RFC3339), r.Fires)
		if r.MaxFires > 0 {
			fmt.Fprintf(&b, " of %d", r.MaxFires)
		}
		fmt.Fprintf(&b, "; %s; message %s", does, quote(r.Message))
	}
	if ls.More > 0 {
		fmt.Fprintf(&b, "\n%d more not shown.", ls.More)
	}
	return tool.Success(b.String()).WithDetails(d)
}
