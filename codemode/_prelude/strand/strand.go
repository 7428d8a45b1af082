// Package strand directs sub-agents from a program: spawn children on
// tasks, message them, wait for their reports, read and write the
// session's notes, list them, and fan out one child per item with Map.
// It does what the agent_spawn, agent_send, agent_wait, agent_note,
// agent_notes and agent_roster tools do, on your authority: a call whose
// tool you do not hold fails with "tool_not_held".
//
// A child's final message is its report. With Options.Result (a JSON
// object schema of named properties, one type each) it must also write a
// matching result note, and Wait says whether it did (Outcome.ResultKind
// "valid", "missing" or "mismatched"; "no_result_asked" without one).
//
// The host counts calls per program: spawns (each Map item is one) at a
// ceiling that fails with "spawn_ceiling", sends, note writes and note
// reads with "admission_ceiling"; waiting frees no slot. Children of one
// program are told apart by their order of spawning, so a program run
// again by the same call reconciles onto the same children
// (Child.Reconciled). Other codes are the agent tools' ("fan_out",
// "not_descendant", "unknown_handle", "invalid_request",
// "malformed_schema" for an Options.Result that is not an object schema
// of named properties, ...).
//
// Safe to call from many goroutines at once.
//
// Example:
//
//	contract := `{"type":"object","properties":{"ok":{"type":"boolean"}}}`
//	c, err := strand.Spawn(ctx, "check docs", "Check the docs; note result {ok}", strand.Options{Result: contract})
//	if err != nil {
//		panic(err)
//	}
//	outs, err := strand.Wait(ctx, []string{c.Handle}, 20*time.Second)
//	if err != nil {
//		panic(err)
//	}
//	fmt.Println(outs[0].State, outs[0].ResultKind, string(outs[0].Result), outs[0].Report)
package strand

import (
	"context"
	"time"

	"cap/internal/client"
)

// Error is the error every cap package returns: strand.Error, fs.Error
// and the rest are one type. Fields: Cap (e.g. "strand.spawn"), Code (a
// stable snake_case word to switch on), Message.
type Error = client.Error

// Options are what a spawn asks beyond its purpose and prompt; the zero
// value takes the host's defaults.
type Options struct {
	Result   string        // a result contract, a JSON object schema; "" asks none
	Tools    []string      // the child's tools (tools you hold); nil: the default set
	Model    string        // a model the host offers; "": the host's choice
	Deadline time.Duration // the child's run budget; 0: the host's default
	Detach   bool          // keep running after this program's call ends
}

// Child is a spawned sub-agent.
type Child struct {
	Handle     string // its run: Wait on it
	Strand     string // its name
	Purpose    string // the purpose it was started for
	Reconciled bool   // this call already spawned it; nothing new started
}

// Outcome is one child's state after a Wait. Ready is false while it
// still runs (State "running"); State is then "completed", "failed" or
// "aborted" (AbortReason says why).
type Outcome struct {
	Handle, Strand string
	Ready          bool
	State          string
	Report         string // the final message, or what went wrong
	AbortReason    string
	ResultKind     string // "no_result_asked", "valid", "missing", "mismatched"
	Result         []byte // the result note (JSON), when one was written
	Mismatch       string // how it broke the contract, for "mismatched"
}

// Item is one task of a Map: a child's purpose and prompt.
type Item struct {
	Purpose, Prompt string
}

// MapResult is one Map item's outcome: the child and its Outcome, or Err
// when its spawn or the wait failed (a ceiling, the host's fan-out).
// When the spawn worked and only the wait failed, Child still names the
// child, which runs on: Wait for it, or Send to it.
type MapResult struct {
	Item    Item
	Child   Child
	Outcome Outcome
	Err     error
}

// Peer is one of your descendants.
type Peer struct {
	Strand, Relation, Parent, Purpose string
	Depth                             int
	Latest                            string // its latest run's handle
	State                             string
	Runs                              int
}

// Entry is one of the session's notes: Key is the full key,
// "agent/{strand}/{key}", Value JSON.
type Entry struct {
	Key   string
	Value []byte
}

func spawnArgs(o Options, args map[string]any) map[string]any {
	if o.Result != "" {
		args["result"] = o.Result
	}
	if o.Tools != nil {
		args["tools"] = o.Tools
	}
	if o.Model != "" {
		args["model"] = o.Model
	}
	if o.Deadline > 0 {
		args["deadline_ms"] = o.Deadline.Milliseconds()
	}
	if o.Detach {
		args["detach"] = true
	}
	return args
}

func readChild(r *client.Fields) Child {
	return Child{Handle: r.Str("handle"), Strand: r.Str("strand"), Purpose: r.Str("purpose"), Reconciled: r.Bool("reconciled")}
}

func readOutcome(r *client.Fields) Outcome {
	return Outcome{Handle: r.Str("handle"), Strand: r.Str("strand"), Ready: r.Bool("ready"), State: r.Str("state"),
		Report: r.Str("report"), AbortReason: r.Str("abort_reason"), ResultKind: r.Str("result_kind"),
		Result: r.Bytes("result"), Mismatch: r.Str("mismatch")}
}

// Spawn starts a child on one task and returns at once; Wait for its
// report. purpose is a few words (it names the child), prompt all it
// needs to know.
func Spawn(ctx context.Context, purpose, prompt string, o Options) (Child, error) {
	const name = "strand.spawn"
	m, err := client.Call(ctx, name, spawnArgs(o, map[string]any{"purpose": purpose, "prompt": prompt}))
	if err != nil {
		return Child{}, err
	}
	r := client.Read(m)
	c := readChild(r)
	return c, r.Err(name)
}

// Send messages a descendant (to is its handle or strand). A running one
// reads it next turn; a finished one starts a new run, whose handle is
// returned (wait on that one).
func Send(ctx context.Context, to, message string) (handle string, err error) {
	const name = "strand.send"
	m, err := client.Call(ctx, name, map[string]any{"to": to, "message": message})
	if err != nil {
		return "", err
	}
	r := client.Read(m)
	handle = r.Str("handle")
	return handle, r.Err(name)
}

// Wait waits up to wait for every handle against one deadline (the host
// bounds it) and returns one Outcome per handle, in order. A child still
// running is not an error: its Outcome is not Ready; wait again.
func Wait(ctx context.Context, handles []string, wait time.Duration) ([]Outcome, error) {
	const name = "strand.wait"
	m, err := client.Call(ctx, name, map[string]any{"handles": handles, "wait_ms": wait.Milliseconds()})
	if err != nil {
		return nil, err
	}
	r := client.Read(m)
	var outs []Outcome
	r.Maps("outcomes", func(f *client.Fields) { outs = append(outs, readOutcome(f)) })
	return outs, r.Err(name)
}

// Map spawns one child per item (all with o), then waits up to wait for
// all of them against one deadline, and returns each item's result in
// order, failures included. Each item counts against the spawn ceiling
// and the host's fan-out; the host bounds the items per call (the
// code_mode description says how many): more, or none, fails the whole
// call with "invalid_capability_arguments" and spawns nothing.
func Map(ctx context.Context, items []Item, o Options, wait time.Duration) ([]MapResult, error) {
	const name = "strand.map"
	list := make([]any, len(items))
	for i, it := range items {
		list[i] = map[string]any{"purpose": it.Purpose, "prompt": it.Prompt}
	}
	m, err := client.Call(ctx, name, spawnArgs(o, map[string]any{"items": list, "wait_ms": wait.Milliseconds()}))
	if err != nil {
		return nil, err
	}
	r := client.Read(m)
	var out []MapResult
	r.Maps("items", func(f *client.Fields) {
		res := MapResult{Item: Item{Purpose: f.Str("purpose")}}
		if i := len(out); i < len(items) {
			res.Item = items[i]
		}
		if f.Has("handle") {
			res.Child = readChild(f)
		}
		if code := f.Str("code"); code != "" {
			res.Err = &Error{Cap: name, Code: code, Message: f.Str("message")}
		} else {
			res.Outcome = readOutcome(f)
		}
		out = append(out, res)
	})
	return out, r.Err(name)
}

// Note writes value (one JSON value) under key in your own notes, as
// agent_note does; keys are write-once.
func Note(ctx context.Context, key string, value []byte) error {
	_, err := client.Call(ctx, "strand.note", map[string]any{"key": key, "value": value})
	return err
}

// Notes reads the session's notes whose full key starts with prefix
// (which starts with "agent/"; "" reads them all), in key order;
// truncated says more matched than the host returns at once.
func Notes(ctx context.Context, prefix string) (notes []Entry, truncated bool, err error) {
	const name = "strand.notes"
	m, err := client.Call(ctx, name, map[string]any{"prefix": prefix})
	if err != nil {
		return nil, false, err
	}
	r := client.Read(m)
	r.Maps("notes", func(f *client.Fields) { notes = append(notes, Entry{Key: f.Str("key"), Value: f.Bytes("value")}) })
	truncated = r.Bool("truncated")
	return notes, truncated, r.Err(name)
}

// Roster lists your descendants.
func Roster(ctx context.Context) ([]Peer, error) {
	const name = "strand.roster"
	m, err := client.Call(ctx, name, map[string]any{})
	if err != nil {
		return nil, err
	}
	r := client.Read(m)
	var peers []Peer
	r.Maps("peers", func(f *client.Fields) {
		peers = append(peers, Peer{Strand: f.Str("strand"), Relation: f.Str("relation"), Parent: f.Str("parent"), Purpose: f.Str("purpose"),
			Depth: f.Int("depth"), Latest: f.Str("latest"), State: f.Str("state"), Runs: f.Int("runs")})
	})
	return peers, r.Err(name)
}
