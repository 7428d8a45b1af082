package codemode

import (
	"context"
	"time"
)

// executionCall serves cap/execution: execution.ready,
// execution.register and execution.receive, open to every program (no
// tool authorizes them: they reach nothing outside the execution). In a
// foreground run (h.exec nil) nothing can send, so ready and register
// answer and change nothing and receive is codeNotBackground.
func (h *seamHost) executionCall(ctx context.Context, a *capArgs) (any, error) {
	cap := a.cap
	switch cap {
	case "execution.ready":
		if err := a.done(); err != nil {
			return nil, err
		}
		if h.exec != nil {
			if err := h.execs.register(h.exec, defaultEndpoint, true); err != nil {
				return nil, err
			}
		}
		return map[string]any{"background": h.exec != nil}, nil
	case "execution.register":
		name := a.str("endpoint", true)
		if err := a.done(); err != nil {
			return nil, err
		}
		if err := endpointError(cap, name); err != nil {
			return nil, err
		}
		if h.exec != nil {
			if err := h.execs.register(h.exec, name, false); err != nil {
				return nil, err
			}
		}
		return map[string]any{"background": h.exec != nil}, nil
	}
	name := a.str("endpoint", true)
	wait := time.Duration(a.integer("wait_ms", 0, 0, maxReceiveWait.Milliseconds())) * time.Millisecond
	if err := a.done(); err != nil {
		return nil, err
	}
	if err := endpointError(cap, name); err != nil {
		return nil, err
	}
	if h.exec == nil {
		return nil, &CapError{Code: codeNotBackground, Message: "this program runs in the foreground (mode run), where nothing can send to it; launch it (mode launch) to receive input"}
	}
	in, ok, err := h.execs.receive(ctx, h.exec, name, wait)
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = []byte{}
	}
	return map[string]any{"input": in, "received": ok}, nil
}
