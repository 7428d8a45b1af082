package codemode

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/wire"
)

// TestRedteamUnreadAnswersStayBounded: a program that sends calls and
// never reads its channel. A call left the in-flight set as soon as its
// router returned, before its answer was written, so once the socket
// filled every further call still got a goroutine, was routed, and then
// waited (holding its result) for the writer: no bound at all on the
// goroutines and memory a program could pin in the host until its wall
// deadline (up to maxWithin), e.g. 8 MiB fs.read results by the
// thousand. The bound now holds until the answer is written: the host
// never has more than maxCallsInFlight routed calls whose answers are
// not yet on the wire.
func TestRedteamUnreadAnswersStayBounded(t *testing.T) {
	t.Parallel()
	const slack = 16 // answers the socket's buffer may have taken
	const calls = 2048
	answer := strings.Repeat("x", 64<<10) // a few of these fill the socket
	var entered atomic.Int64
	over := make(chan int64, 1)
	route := func(context.Context, string, map[string]any) (any, error) {
		if n := entered.Add(1); n == maxCallsInFlight+slack+1 {
			over <- n
		}
		return map[string]any{"content": answer}, nil
	}
	g, finish := testChannel(t, route)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range uint64(calls) {
			if wire.WriteFrame(g.conn, call(i+1, "fs.list", nil)) != nil {
				return
			}
		}
	}()
	// Nothing is read: the host must stop routing once maxCallsInFlight
	// answers wait for the wire. The bound below only ends a run that
	// holds the invariant; a broken host breaks it within milliseconds.
	select {
	case n := <-over:
		t.Errorf("%d calls were routed while the program read no answer; at most %d may wait for the wire", n, maxCallsInFlight+slack)
	case <-time.After(3 * time.Second):
	}
	// Drain, so every call is answered and serve sees the end.
	go func() {
		for {
			if _, err := wire.ReadFrame(g.conn); err != nil {
				return
			}
		}
	}()
	<-sent
	g.conn.Close()
	if err, _ := finish(); err != nil {
		t.Fatalf("serve: %v", err)
	}
}
