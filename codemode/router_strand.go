package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentloom/loom/agent"
)

// Bounds of cap/strand.
const (
	// maxMapItems bounds the items of one strand.map: one spawn each, all
	// joined by one wait (at most agent.MaxWaitHandles handles).
	maxMapItems = 16
	// maxStrandWait bounds the wait of one strand.wait or strand.map,
	// below maxCallTimeout so its answer arrives before the call's own
	// deadline; the Agency's MaxWaitMs bounds it too.
	maxStrandWait = 60 * time.Second
)

// caller is the Agency's Caller for a call of this execution: the
// code_mode call's own identity and coordinates (agent.CallerOf), never
// anything the program sent.
func (h *seamHost) caller() agent.Caller { return agent.CallerOf(h.call) }

// strandCall serves strand.spawn, strand.send, strand.wait,
// strand.roster and strand.map onto the Agency. None of them asks the
// broker for anything.
func (h *seamHost) strandCall(ctx context.Context, a *capArgs) (any, error) {
	cap := a.cap
	if h.agency == nil {
		return nil, &CapError{Code: agent.CodeAgencyUnavailable, Message: "this host offers no agency, so " + cap + " cannot be served"}
	}
	var res any
	var err error
	switch cap {
	case "strand.spawn":
		res, err = h.strandSpawn(ctx, a)
	case "strand.send":
		res, err = h.strandSend(ctx, a)
	case "strand.wait":
		res, err = h.strandWait(ctx, a)
	case "strand.roster":
		res, err = h.strandRoster(ctx, a)
	default:
		res, err = h.strandMap(ctx, a)
	}
	return res, fromAgency(err)
}

// fromAgency words an Agency's refusal for a program: its code and its
// reason, the sentence a model can act on. Other errors pass unchanged.
func fromAgency(err error) error {
	var r *agent.Refusal
	if errors.As(err, &r) {
		return &CapError{Code: r.Code, Message: r.Reason}
	}
	return err
}

// spawnOptions reads the options every spawn of one call shares: tools
// (absent: the default set; a list, even empty, replaces it), model,
// result (a result contract, JSON), deadline_ms and detach.
func spawnOptions(a *capArgs) (agent.SpawnRequest, error) {
	var req agent.SpawnRequest
	if _, ok := a.m["tools"]; ok {
		req.Tools = a.strings("tools", false)
		if req.Tools == nil {
			req.Tools = []string{}
		}
	}
	req.Model = a.str("model", false)
	contract := a.bytes("result", false)
	req.Deadline = time.Duration(a.integer("deadline_ms", 0, 0, time.Duration(1<<62).Milliseconds())) * time.Millisecond
	req.Detach = a.boolean("detach")
	if a.err != nil {
		return req, a.err
	}
	if len(contract) > 0 {
		s, err := agent.ParseResultSchema(json.RawMessage(contract))
		if err != nil {
			return req, err
		}
		req.Result = s
	}
	return req, nil
}

// spawnOne admits one spawn against the ceiling and asks the Agency for
// it under the program ordinal its admission number is.
func (h *seamHost) spawnOne(ctx context.Context, cap string, req agent.SpawnRequest) (agent.Spawned, error) {
	if err := req.Check(); err != nil {
		return agent.Spawned{}, err
	}
	ordinal, err := h.adm.admit(admitSpawn, cap)
	if err != nil {
		return agent.Spawned{}, err
	}
	c := h.caller()
	c.Minter = agent.ProgramMinter(ordinal)
	return h.agency.Spawn(ctx, c, req)
}

func spawnedMap(sp agent.Spawned) map[string]any {
	m := map[string]any{"handle": sp.Handle.String(), "strand": sp.Handle.Strand, "purpose": sp.Purpose, "reconciled": sp.Reconciled, "model": sp.Model}
	if sp.Tools != nil {
		m["tools"] = sp.Tools
	}
	return m
}

func (h *seamHost) strandSpawn(ctx context.Context, a *capArgs) (any, error) {
	purpose, prompt := a.str("purpose", true), a.str("prompt", true)
	req, err := spawnOptions(a)
	if err == nil {
		err = a.done()
	}
	if err != nil {
		return nil, err
	}
	req.Purpose, req.Prompt = purpose, prompt
	sp, err := h.spawnOne(ctx, "strand.spawn", req)
	if err != nil {
		return nil, err
	}
	return spawnedMap(sp), nil
}

func (h *seamHost) strandSend(ctx context.Context, a *capArgs) (any, error) {
	to, msg := strings.TrimSpace(a.str("to", true)), a.str("message", true)
	budget := a.integer("budget_ms", 0, 0, time.Duration(1<<62).Milliseconds())
	if err := a.done(); err != nil {
		return nil, err
	}
	if strings.ContainsAny(to, "#@") {
		hd, err := agent.ParseHandle(to)
		if err != nil {
			return nil, err
		}
		to = hd.Strand
	}
	req := agent.SendRequest{To: to, Message: msg, Budget: time.Duration(budget) * time.Millisecond}
	if err := req.Check(); err != nil {
		return nil, err
	}
	if _, err := h.adm.admit(admitSend, "strand.send"); err != nil {
		return nil, err
	}
	d, err := h.agency.Send(ctx, h.caller(), req)
	if err != nil {
		return nil, err
	}
	return map[string]any{"kind": string(d.Kind), "handle": d.Handle.String()}, nil
}

// strandWaitBound is the longest wait strand.wait and strand.map grant
// on agency: maxStrandWait, or less where the Agency's MaxWaitMs is.
func strandWaitBound(agency agent.Agency) time.Duration {
	return min(maxStrandWait, time.Duration(agency.MaxWaitMs())*time.Millisecond)
}

// waitFor is the wait a program asked for, in milliseconds, bounded by
// maxStrandWait and the Agency's MaxWaitMs.
func (h *seamHost) waitFor(a *capArgs) time.Duration {
	bound := strandWaitBound(h.agency)
	ms := a.integer("wait_ms", bound.Milliseconds(), 0, time.Duration(1<<62).Milliseconds())
	return min(time.Duration(ms)*time.Millisecond, bound)
}

func waitedMap(w agent.Waited) map[string]any {
	m := map[string]any{"handle": w.Handle.String(), "strand": w.Handle.Strand, "ready": w.Ready, "state": string(w.State),
		"report": w.Report, "abort_reason": string(w.AbortReason), "result_kind": string(w.Result.Kind), "result": []byte(w.Result.Value), "mismatch": ""}
	if w.Result.Mismatch != nil {
		m["mismatch"] = strings.Join(w.Result.Mismatch.Problems, "; ")
	}
	return m
}

func (h *seamHost) strandWait(ctx context.Context, a *capArgs) (any, error) {
	raw := a.strings("handles", true)
	wait := h.waitFor(a)
	if err := a.done(); err != nil {
		return nil, err
	}
	handles := make([]agent.Handle, len(raw))
	for i, s := range raw {
		hd, err := agent.ParseHandle(s)
		if err != nil {
			return nil, err
		}
		handles[i] = hd
	}
	ws, err := h.agency.Wait(ctx, h.caller(), handles, wait)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(ws))
	for i, w := range ws {
		out[i] = waitedMap(w)
	}
	return map[string]any{"outcomes": out}, nil
}

func (h *seamHost) strandRoster(ctx context.Context, a *capArgs) (any, error) {
	if err := a.done(); err != nil {
		return nil, err
	}
	peers, err := h.agency.Roster(ctx, h.caller())
	if err != nil {
		return nil, err
	}
	out := make([]any, len(peers))
	for i, p := range peers {
		out[i] = map[string]any{"strand": p.Strand, "relation": string(p.Relation), "parent": p.Parent, "purpose": p.Purpose,
			"depth": p.Depth, "latest": p.Latest.String(), "state": string(p.State), "runs": p.Runs}
	}
	return map[string]any{"peers": out}, nil
}

// strandMap spawns one child per item (its purpose and prompt, the
// shared options), each admitted against the spawn ceiling in order,
// then waits for every child spawned against one deadline. Each item's
// outcome is reported in order: a refused spawn (the ceiling, the
// Agency's fan-out) is that item's error, and so is a failed wait.
func (h *seamHost) strandMap(ctx context.Context, a *capArgs) (any, error) {
	items := a.list("items", true)
	req, err := spawnOptions(a)
	wait := h.waitFor(a)
	if err == nil {
		err = a.done()
	}
	if err != nil {
		return nil, err
	}
	if len(items) == 0 || len(items) > maxMapItems {
		return nil, &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("strand.map takes 1 to %d items (got %d)", maxMapItems, len(items))}
	}
	reqs := make([]agent.SpawnRequest, len(items))
	for i, it := range items {
		im, ok := it.(map[string]any)
		if !ok {
			return nil, &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("items[%d] must be {purpose, prompt}", i)}
		}
		ia := newCapArgs(fmt.Sprintf("strand.map items[%d]", i), im)
		r := req
		r.Purpose, r.Prompt = ia.str("purpose", true), ia.str("prompt", true)
		if err := ia.done(); err != nil {
			return nil, err
		}
		reqs[i] = r
	}
	out := make([]map[string]any, len(reqs))
	var handles []agent.Handle
	var spawned []int
	for i, r := range reqs {
		out[i] = map[string]any{"purpose": r.Purpose, "code": "", "message": ""}
		sp, err := h.spawnOne(ctx, "strand.map", r)
		if err != nil {
			setItemError(out[i], err)
			continue
		}
		for k, v := range spawnedMap(sp) {
			out[i][k] = v
		}
		handles = append(handles, sp.Handle)
		spawned = append(spawned, i)
	}
	if len(handles) > 0 {
		ws, err := h.agency.Wait(ctx, h.caller(), handles, wait)
		for j, i := range spawned {
			switch {
			case err != nil:
				setItemError(out[i], err)
			case j < len(ws):
				for k, v := range waitedMap(ws[j]) {
					out[i][k] = v
				}
			}
		}
	}
	list := make([]any, len(out))
	for i, m := range out {
		list[i] = m
	}
	return map[string]any{"items": list}, nil
}

// setItemError records err as one strand.map item's outcome, under the
// code a program would have met calling strand.spawn for it.
func setItemError(m map[string]any, err error) {
	err = fromAgency(err)
	m["code"] = string(codeOf(err))
	var ce *CapError
	if errors.As(err, &ce) {
		m["message"] = ce.Message
	} else {
		m["message"] = err.Error()
	}
}
