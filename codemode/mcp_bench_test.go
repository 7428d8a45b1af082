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

	"github.com/agentloom/loom/tool"
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

// BenchmarkMCPRouteHostSide: the host's part of one MCP call alone, in
// process: the router, the gate, decoding the arguments, the bound and
// shaping the answer, over a server that answers at once. With
// -benchmem it counts what the host allocates per call.
//
//	go test -run '^$' -bench MCPRouteHostSide -benchmem ./codemode/
func BenchmarkMCPRouteHostSide(b *testing.B) {
	reg, err := tool.NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	f := &quickMCP{fakeMCP{name: "d", tools: []MCPTool{fakeTool("d", "echo", "echoes")}}}
	registerModelTools(b, reg, &f.fakeMCP)
	set := newMCPSet([]MCPServer{f}, reg, nil)
	if len(set.pkgs) != 1 {
		b.Fatalf("left out: %+v", set.refused)
	}
	h := &seamHost{seam: Seam{Name: "workspace", Packages: []string{"cap/mcp/d"}}, mcp: set, reg: reg, call: &tool.Call{Strand: "main"}}
	ctx := context.Background()
	args := []byte(`{"text":"x"}`)
	for b.Loop() {
		if _, err := h.route(ctx, "mcp.d.echo", map[string]any{"arguments": args}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMCPCallsInMemory: a program makes 1,000 calls of a tool of
// a server answering in the host's memory, and interleaved with them, in
// blocks of 50, 1,000 kv.get calls: code mode's own part of an MCP call
// (the channel both ways, a routed call's goroutine, the router, the
// call record, the generated package's encoding) with no server process,
// beside the channel's cheapest call. It reports the median µs of each
// and their difference.
//
//	go test -run '^$' -bench MCPCallsInMemory -benchtime 5x ./codemode/
func BenchmarkMCPCallsInMemory(b *testing.B) {
	f := &quickMCP{fakeMCP{name: "fake", tools: []MCPTool{fakeTool("fake", "echo", "echoes")}}}
	s := newSession(b, nil)
	registerModelTools(b, s.reg, &f.fakeMCP)
	s.withMCP(b, f)
	ctx := context.Background()
	src := mainWith([]string{"context", "fmt", "sort", "time", "cap/kv", "cap/mcp/fake"}, `ctx := context.Background()
	text := "x"
	in := fake.EchoInput{Text: &text}
	var mcp, kvs []time.Duration
	for range 20 {
		for range 50 {
			t0 := time.Now()
			if _, err := fake.Echo(ctx, in); err != nil {
				panic(err)
			}
			mcp = append(mcp, time.Since(t0))
		}
		for range 50 {
			t0 := time.Now()
			if _, _, err := kv.Get(ctx, "k"); err != nil {
				panic(err)
			}
			kvs = append(kvs, time.Since(t0))
		}
	}
	sort.Slice(mcp, func(i, j int) bool { return mcp[i] < mcp[j] })
	sort.Slice(kvs, func(i, j int) bool { return kvs[i] < kvs[j] })
	fmt.Println(mcp[len(mcp)/2].Nanoseconds(), kvs[len(kvs)/2].Nanoseconds())`)
	run := func() (mcp, kv time.Duration) {
		x, err := s.eng.Execute(ctx, s.call, Request{Source: []byte(src), Within: maxWithin})
		if err != nil || x.Run.Code != "" {
			b.Fatalf("%v %+v", err, x.Run)
		}
		f := strings.Fields(x.Run.Stdout)
		m, _ := strconv.ParseInt(f[0], 10, 64)
		k, _ := strconv.ParseInt(f[1], 10, 64)
		return time.Duration(m), time.Duration(k)
	}
	run() // the build, kept
	var mcps, kvs []time.Duration
	for b.Loop() {
		m, k := run()
		mcps, kvs = append(mcps, m), append(kvs, k)
	}
	m, k := median(mcps), median(kvs)
	b.ReportMetric(float64(m)/float64(time.Microsecond), "mcp-p50-µs")
	b.ReportMetric(float64(k)/float64(time.Microsecond), "kv-p50-µs")
	b.ReportMetric(float64(m-k)/float64(time.Microsecond), "mcp-over-kv-µs")
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("loadavg %s", strings.TrimSpace(string(load)))
	}
}

// quickMCP is a fakeMCP whose calls answer the text alone, without
// counting them: the cheapest server there is.
type quickMCP struct{ fakeMCP }

func (q *quickMCP) Call(context.Context, string, json.RawMessage) (MCPResult, error) {
	return MCPResult{Text: "x"}, nil
}
