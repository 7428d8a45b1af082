package stored

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/tool"
)

// TestRefusals: each refusal keeps its code and sentence, keeps the
// cause it wraps, and quotes a value cut to tool.MaxQuotedBytes.
func TestRefusals(t *testing.T) {
	cause := errors.New("disk I/O error")
	long := "a" + strings.Repeat("é", tool.MaxQuotedBytes/2) // the cut falls inside a rune
	cut := "a" + strings.Repeat("é", tool.MaxQuotedBytes/2-1) + "…"
	tests := []struct {
		name   string
		err    error
		code   tool.Code
		reason string
		cause  error
	}{
		{"unknown", Unknown("sch-9"), schedule.CodeUnknownSchedule,
			`no live schedule "sch-9" that you or a sub-agent of yours created; schedule_list shows them`, nil},
		{"unknown long", Unknown(long), schedule.CodeUnknownSchedule,
			`no live schedule "` + cut + `" that you or a sub-agent of yours created; schedule_list shows them`, nil},
		{"target full", TargetFull("sub:root/a", 16), schedule.CodeScheduleLimit,
			`"sub:root/a" already holds 16 live schedules, the most allowed; cancel one first`, nil},
		{"owner full", OwnerFull(16), schedule.CodeScheduleLimit,
			"you already created 16 live schedules, the most allowed; cancel one first", nil},
		{"closed", Closed(), schedule.CodeSchedulesUnavailable, "the scheduler is closed", nil},
		{"cancelled", Cancelled(context.Canceled), tool.CodeCancelled,
			"the call's context ended before the schedules answered", context.Canceled},
		{"unavailable", Unavailable("the schedules file failed", cause), schedule.CodeSchedulesUnavailable,
			"the schedules file failed: disk I/O error", cause},
		{"unavailable long", Unavailable("x", errors.New(long)), schedule.CodeSchedulesUnavailable, "x: " + cut, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *schedule.Refusal
			if !errors.As(tt.err, &r) {
				t.Fatalf("%T is no *schedule.Refusal", tt.err)
			}
			if r.Code != tt.code || r.Reason != tt.reason {
				t.Errorf("got %s: %s\nwant %s: %s", r.Code, r.Reason, tt.code, tt.reason)
			}
			if tt.cause != nil && !errors.Is(tt.err, tt.cause) {
				t.Errorf("%v does not wrap %v", tt.err, tt.cause)
			}
		})
	}
}

// TestClip: a value up to tool.MaxQuotedBytes stays whole; a longer one
// is cut there, less a rune split by the cut, and marked.
func TestClip(t *testing.T) {
	exact := strings.Repeat("a", tool.MaxQuotedBytes)
	tests := []struct{ in, want string }{
		{"", ""},
		{exact, exact},
		{exact + "b", exact + "…"},
		{strings.Repeat("a", tool.MaxQuotedBytes-1) + "é", strings.Repeat("a", tool.MaxQuotedBytes-1) + "…"},
	}
	for _, tt := range tests {
		if got := clip(tt.in); got != tt.want {
			t.Errorf("clip(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
