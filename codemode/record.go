package codemode

import (
	"sync"
	"time"

	"github.com/agentloom/loom/tool"
)

// Bounds of the call record.
const (
	// maxRecordedCalls is how many calls the record itemises; past it
	// the counters stay exact and the entries stop.
	maxRecordedCalls = 128
	// maxCallSummaryBytes bounds one entry's summary.
	maxCallSummaryBytes = 160
)

// CallStatus is how one capability call ended.
type CallStatus string

// The ends of a capability call.
const (
	CallOK        CallStatus = "ok"
	CallFailed    CallStatus = "failed"
	CallCancelled CallStatus = "cancelled"
	// CallUnsettled: the execution ended while the call was in flight.
	CallUnsettled CallStatus = "unsettled"
)

// CallEntry is one capability call of an execution.
type CallEntry struct {
	// Cap is the capability called, as the cap_call names it ("fs.read").
	Cap    string     `json:"cap"`
	Status CallStatus `json:"status"`
	// Code is the failure code the program got ("" for CallOK): the
	// code of the tool behind the capability (tool.CodeNotFound,
	// tool.CodeToolNotHeld, ...) or a capability code the cap packages'
	// docs state (invalid_capability_arguments, spawn_ceiling, kv_full,
	// call_timeout, ...).
	Code tool.Code `json:"code,omitempty"`
	// DurationMs is measured by the host's clock from the call's arrival
	// to its answer; 0 for a call refused before it was served.
	DurationMs int64 `json:"duration_ms"`
	// Summary names what the call was about (a path, an argv, a key),
	// never a payload (file content, stdin, a value). It is at most 160
	// bytes.
	Summary string `json:"summary,omitempty"`
}

// CallRecord is what an execution's capability calls came to: the first
// 128 itemised in arrival order, and exact counters over all of them.
type CallRecord struct {
	Calls     []CallEntry `json:"calls"`
	Total     int         `json:"total"`
	OK        int         `json:"ok"`
	Failed    int         `json:"failed"`
	Cancelled int         `json:"cancelled"`
	Unsettled int         `json:"unsettled"`
	// Omitted counts the calls past the first 128, not itemised.
	Omitted int `json:"omitted,omitempty"`
}

// recorder builds a CallRecord from concurrent calls.
type recorder struct {
	mu      sync.Mutex
	rec     CallRecord
	open    map[int]time.Time // entry index → arrival, for calls in flight
	pending int               // calls in flight past the itemised ones
	now     func() time.Time
	// summarize is the summary of a call (nil: summary's, the table's
	// rows only).
	summarize func(cap string, m map[string]any) string
}

// summary is the call record's summary of a call of cap.
func (r *recorder) summary(cap string, m map[string]any) string {
	if r.summarize != nil {
		return r.summarize(cap, m)
	}
	return summary(cap, m)
}

func newRecorder(now func() time.Time) *recorder {
	return &recorder{rec: CallRecord{Calls: []CallEntry{}}, open: map[int]time.Time{}, now: now}
}

// callRef names one begun call: its entry index, or -1 past the bound.
type callRef int

// begin records a call's arrival; summary is asked for only when the
// call is itemised.
func (r *recorder) begin(cap string, summary func() string) callRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Total++
	if len(r.rec.Calls) >= maxRecordedCalls {
		r.rec.Omitted++
		r.pending++
		return -1
	}
	r.rec.Calls = append(r.rec.Calls, CallEntry{Cap: cap, Status: CallUnsettled, Summary: cutSummary(summary())})
	i := len(r.rec.Calls) - 1
	r.open[i] = r.now()
	return callRef(i)
}

// end records a begun call's end; refused says it was refused before it
// was served (no duration).
func (r *recorder) end(ref callRef, status CallStatus, code tool.Code, refused bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count(status)
	if ref < 0 {
		r.pending--
		return
	}
	e := &r.rec.Calls[ref]
	e.Status, e.Code = status, code
	if !refused {
		e.DurationMs = r.now().Sub(r.open[int(ref)]).Milliseconds()
	}
	delete(r.open, int(ref))
}

func (r *recorder) count(s CallStatus) {
	switch s {
	case CallOK:
		r.rec.OK++
	case CallFailed:
		r.rec.Failed++
	case CallCancelled:
		r.rec.Cancelled++
	case CallUnsettled:
		r.rec.Unsettled++
	}
}

// finish closes the record: every call still in flight is unsettled.
func (r *recorder) finish() CallRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Unsettled += len(r.open) + r.pending
	r.open, r.pending = map[int]time.Time{}, 0
	out := r.rec
	out.Calls = append([]CallEntry{}, r.rec.Calls...)
	return out
}

func cutSummary(s string) string {
	if len(s) <= maxCallSummaryBytes {
		return s
	}
	end := maxCallSummaryBytes - len("…")
	for end > 0 && s[end]&0xC0 == 0x80 {
		end--
	}
	return s[:end] + "…"
}
