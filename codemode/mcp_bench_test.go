package codemode

import (
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPCallsFromAProgram: a program makes 1,000 calls of the
// cheapest tool (echo) of a local stdio server (mcpclient's fake, jailed
// by mcpclient) through cap/mcp/fake, timing its own loop; interleaved
// with it, the go-sdk's client calls the same server binary directly in
// the host process (unjailed, CommandTransport) 1,000 times, and
// mcpclient calls the jailed server the program reaches 1,000 times. It
// reports calls/s of each and the program's ratio to both (goal >= 0.8
// against the go-sdk), and µs per whole execution (vet, cached build,
// jail, 1,000 calls).
//
//	go test -run '^$' -bench MCPCallsFromAProgram -benchtime 5x ./codemode/
func BenchmarkMCPCallsFromAProgram(b *testing.B) {
	s, c := jailedMCPSession(b)
	bin, _ := fakeServerBinary()
	ctx := context.Background()
	sdk := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil)
	cs, err := sdk.Connect(ctx, &mcp.CommandTransport{Command: osexec.Command(bin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	const calls = 1000
	src := mainWith([]string{"context", "fmt", "time", "cap/mcp/fake"}, `ctx := context.Background()
	text := "x"
	in := fake.EchoInput{Text: &text}
	t0 := time.Now()
	for range 1000 {
		if _, err := fake.Echo(ctx, in); err != nil {
			panic(err)
		}
	}
	fmt.Println(time.Since(t0).Nanoseconds())`)
	run := func() (loop, whole time.Duration) {
		t0 := time.Now()
		x, err := s.eng.Execute(ctx, s.call, Request{Source: []byte(src), Within: maxWithin})
		whole = time.Since(t0)
		if err != nil || x.Run.Code != "" {
			b.Fatalf("%v %+v", err, x.Run)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(x.Run.Stdout), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		return time.Duration(ns), whole
	}
	run() // the build, kept
	args := json.RawMessage(`{"text":"x"}`)
	params := &mcp.CallToolParams{Name: "echo", Arguments: args}
	var prog, whole, direct, client time.Duration
	for b.Loop() {
		l, w := run()
		prog += l
		whole += w
		t0 := time.Now()
		for range calls {
			if _, err := cs.CallTool(ctx, params); err != nil {
				b.Fatal(err)
			}
		}
		direct += time.Since(t0)
		t0 = time.Now()
		for range calls {
			if _, err := c.Call(ctx, "echo", args); err != nil {
				b.Fatal(err)
			}
		}
		client += time.Since(t0)
	}
	n := float64(b.N * calls)
	rate := func(d time.Duration) float64 { return n / d.Seconds() }
	b.ReportMetric(rate(prog), "program-calls/s")
	b.ReportMetric(rate(direct), "go-sdk-direct-calls/s")
	b.ReportMetric(rate(client), "mcpclient-jailed-calls/s")
	b.ReportMetric(rate(prog)/rate(direct), "ratio-vs-go-sdk")
	b.ReportMetric(rate(prog)/rate(client), "ratio-vs-mcpclient")
	b.ReportMetric(float64(whole.Microseconds())/float64(b.N), "µs/execution")
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("loadavg %s", strings.TrimSpace(string(load)))
	}
}
