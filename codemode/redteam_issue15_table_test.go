package codemode

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentloom/loom/tool"
)

// TestRedteamExecutionTableUnderAHostileModel: launches racing from
// goroutines on one call site are admitted exactly to maxLiveExecutions,
// each under a handle and a broker step of its own; another strand's
// handle reads exactly as one never minted; a send before Ready, to an
// unregistered endpoint and past maxQueuedInputs is refused with its
// code, and what a refusal quotes of model text stays bounded.
func TestRedteamExecutionTableUnderAHostileModel(t *testing.T) {
	t.Parallel()
	tab := newExecutions(nil, nil)
	c := &tool.Call{Strand: "main", OpID: "op", StepID: "step"}
	var mu sync.Mutex
	var got []*execution
	ceilings := 0
	var wg sync.WaitGroup
	for range 3 * maxLiveExecutions {
		wg.Go(func() {
			x, err := tab.reserve(c)
			mu.Lock()
			defer mu.Unlock()
			var ce *CapError
			switch {
			case err == nil:
				got = append(got, x)
			case errors.As(err, &ce) && ce.Code == CodeExecutionCeiling:
				ceilings++
			default:
				t.Errorf("reserve: %v", err)
			}
		})
	}
	wg.Wait()
	if len(got) != maxLiveExecutions || ceilings != 2*maxLiveExecutions {
		t.Fatalf("%d launches admitted, %d refused; want %d and %d", len(got), ceilings, maxLiveExecutions, 2*maxLiveExecutions)
	}
	handles, steps := map[string]bool{}, map[string]bool{}
	for _, x := range got {
		handles[x.handle], steps[x.key.StepID] = true, true
		if !handlePattern.MatchString(x.handle) {
			t.Errorf("handle %q is not of the minted shape", x.handle)
		}
	}
	if len(handles) != maxLiveExecutions || len(steps) != maxLiveExecutions {
		t.Errorf("%d handles and %d steps for %d launches of one call site", len(handles), len(steps), maxLiveExecutions)
	}

	x := got[0]
	_, theirs := tab.lookup("other", x.handle)
	never := "exec-" + tab.epoch + "-000000000000"
	_, unminted := tab.lookup("other", never)
	var a, b *CapError
	if !errors.As(theirs, &a) || !errors.As(unminted, &b) || a.Code != CodeUnknownExecution ||
		strings.ReplaceAll(a.Message, x.handle, never) != b.Message {
		t.Errorf("another strand's handle: %v; one never minted: %v", theirs, unminted)
	}

	huge := strings.Repeat("e", 1<<20)
	for _, c := range []struct {
		endpoint string
		code     tool.Code
	}{
		{defaultEndpoint, CodeExecutionNotReady},
		{huge, CodeUnknownEndpoint},
	} {
		if c.code == CodeUnknownEndpoint {
			if err := tab.register(x, defaultEndpoint, true); err != nil {
				t.Fatal(err)
			}
		}
		_, err := tab.send(x, c.endpoint, []byte("in"))
		var ce *CapError
		if !errors.As(err, &ce) || ce.Code != c.code || len(ce.Message) > 4*maxArgumentQuoteBytes+maxEndpoints*maxEndpointNameBytes {
			t.Errorf("send to %.16q: %v", c.endpoint, err)
		}
	}
	if _, err := tab.lookup("main", huge); err == nil || len(err.Error()) > 2*maxLiveExecutions*len(x.handle)+4*maxArgumentQuoteBytes {
		t.Errorf("a huge handle is quoted unbounded (%d bytes)", len(err.Error()))
	}
	for i := range maxQueuedInputs {
		if _, err := tab.send(x, defaultEndpoint, []byte{byte(i)}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	var ce *CapError
	if _, err := tab.send(x, defaultEndpoint, []byte("one more")); !errors.As(err, &ce) || ce.Code != CodeInboxFull {
		t.Errorf("send past maxQueuedInputs: %v", err)
	}
	in, ok, err := tab.receive(context.Background(), x, defaultEndpoint, 0)
	if err != nil || !ok || len(in) != 1 || in[0] != 0 {
		t.Errorf("receive: %v %v %v", in, ok, err)
	}
}
