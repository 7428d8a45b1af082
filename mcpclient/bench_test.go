package mcpclient

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallJailedVsUnjailed: 1,000 calls of the cheapest tool (echo)
// of a local stdio server (the fake), through this client with the
// server jailed, against the go-sdk's own client calling the same server
// unjailed (CommandTransport), interleaved in blocks of 50 so both see
// the same machine; it reports µs per call of each and their ratio.
//
//	go test -run '^$' -bench CallJailedVsUnjailed -benchtime 3x ./mcpclient/
func BenchmarkCallJailedVsUnjailed(b *testing.B) {
	s := newSession(b)
	bin := fakeServer(b)
	ctx := context.Background()
	c := s.client(b, Server{Name: "fake", Command: bin})
	if _, _, err := c.Tools(ctx); err != nil {
		b.Fatal(err)
	}
	sdk := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil)
	cs, err := sdk.Connect(ctx, &mcp.CommandTransport{Command: exec(bin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := json.RawMessage(`{"text":"x"}`)
	params := &mcp.CallToolParams{Name: "echo", Arguments: args}
	const calls, block = 1000, 50
	var jailed, plain time.Duration
	for b.Loop() {
		for range calls / block {
			t0 := time.Now()
			for range block {
				if _, err := c.Call(ctx, "echo", args); err != nil {
					b.Fatal(err)
				}
			}
			jailed += time.Since(t0)
			t0 = time.Now()
			for range block {
				if _, err := cs.CallTool(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
			plain += time.Since(t0)
		}
	}
	n := float64(b.N * calls)
	b.ReportMetric(float64(jailed.Microseconds())/n, "jailed-µs/call")
	b.ReportMetric(float64(plain.Microseconds())/n, "unjailed-µs/call")
	b.ReportMetric(float64(jailed)/float64(plain), "ratio")
}
