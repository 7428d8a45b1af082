package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect serves srv over an in-memory transport and returns a connected
// client session; both end with the test.
func connect(t testing.TB, srv *Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx, st)
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

type noArgs struct{}

// fixed returns a tool that always answers o.
func fixed(name string, o tool.Outcome) tool.Tool {
	return tool.Typed(tool.Tool{Name: name, Description: "answers a fixed outcome"},
		func(context.Context, *tool.Call, noArgs) tool.Outcome { return o })
}

func newServer(t testing.TB, session *tool.Call, opts *Options, tools ...tool.Tool) *Server {
	t.Helper()
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	srv, err := New(reg, session, o)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func TestListToolsMatchesRegistry(t *testing.T) {
	tools := append(tool.FileTools(), tool.GrepTool())
	srv := newServer(t, nil, nil, tools...)
	cs := connect(t, srv, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != len(tools) {
		t.Fatalf("listed %d tools, registry holds %d", len(res.Tools), len(tools))
	}
	byName := map[string]*mcp.Tool{}
	for _, lt := range res.Tools {
		byName[lt.Name] = lt
	}
	for _, want := range tools {
		got, ok := byName[want.Name]
		if !ok {
			t.Errorf("%s is not listed", want.Name)
			continue
		}
		if got.Description != want.Description {
			t.Errorf("%s: description differs", want.Name)
		}
		var wantSchema any
		if err := json.Unmarshal(want.Schema, &wantSchema); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(wantSchema, got.InputSchema); d != "" {
			t.Errorf("%s: listed schema differs from the registry's (-want +got):\n%s", want.Name, d)
		}
		if got.Annotations == nil || got.Annotations.IdempotentHint != (want.Replay == tool.ReplaySafe) {
			t.Errorf("%s: idempotentHint does not follow Replay %v", want.Name, want.Replay)
		}
	}
	if got := srv.Tools(); len(got) != len(tools) || got[0].Name != tools[0].Name {
		t.Errorf("Tools() = %d tools starting %q; want registration order", len(got), got[0].Name)
	}
}

func TestResultMapping(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	cases := []struct {
		name       string
		out        tool.Outcome
		texts      []string
		images     int
		structured any // decoded structuredContent; nil = absent
		terminate  bool
	}{
		{name: "text", out: tool.Success("hello"), texts: []string{"hello"}},
		{name: "empty", out: tool.Outcome{}, texts: []string{""}},
		{name: "error", out: tool.Fail("bad_thing", "it broke"), texts: []string{"it broke"}},
		{name: "image_and_text", out: tool.Outcome{Text: "img", Images: []tool.Image{{MIME: "image/png", Data: png}}},
			texts: []string{"img"}, images: 1},
		{name: "image_only", out: tool.Outcome{Images: []tool.Image{{MIME: "image/png", Data: png}, {MIME: "image/png", Data: png}}},
			images: 2},
		{name: "details_object", out: tool.Outcome{Text: "x", Details: map[string]int{"n": 3}}, texts: []string{"x"},
			structured: map[string]any{"n": 3.0}},
		{name: "details_string", out: tool.Outcome{Text: "x", Details: "not an object"}, texts: []string{"x"}},
		{name: "details_slice", out: tool.Outcome{Text: "x", Details: []int{1, 2}}, texts: []string{"x"}},
		// Dispatch replaces Details that do not encode with tool.OmittedDetails.
		{name: "details_unencodable", out: tool.Outcome{Text: "x", Details: make(chan int)}, texts: []string{"x"},
			structured: map[string]any{"type": "chan int", "error": "json: unsupported type: chan int"}},
		{name: "details_nil_pointer", out: tool.Outcome{Text: "x", Details: (*tool.ReadDetails)(nil)}, texts: []string{"x"}},
		{name: "terminate", out: tool.Outcome{Text: "bye", Terminate: true}, texts: []string{"bye"}, terminate: true},
		{name: "error_and_terminate", out: tool.Outcome{Text: "no", IsError: true, Code: "bad_thing", Terminate: true}, texts: []string{"no"}, terminate: true},
	}
	var tools []tool.Tool
	for _, c := range cases {
		tools = append(tools, fixed(c.name, c.out))
	}
	cs := connect(t, newServer(t, nil, nil, tools...), nil)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.name})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != c.out.IsError {
				t.Errorf("isError = %v, want %v", res.IsError, c.out.IsError)
			}
			var texts []string
			images := 0
			for _, ct := range res.Content {
				switch ct := ct.(type) {
				case *mcp.TextContent:
					texts = append(texts, ct.Text)
				case *mcp.ImageContent:
					images++
					if ct.MIMEType != "image/png" || string(ct.Data) != string(png) {
						t.Errorf("image content = %s %q", ct.MIMEType, ct.Data)
					}
				default:
					t.Errorf("unexpected content %T", ct)
				}
			}
			if d := cmp.Diff(c.texts, texts); d != "" {
				t.Errorf("texts (-want +got):\n%s", d)
			}
			if images != c.images {
				t.Errorf("%d images, want %d", images, c.images)
			}
			if d := cmp.Diff(c.structured, res.StructuredContent); d != "" {
				t.Errorf("structuredContent (-want +got):\n%s", d)
			}
			if got, _ := res.Meta[MetaCodeKey].(string); got != string(c.out.Code) {
				t.Errorf("code meta = %q, want %q", got, c.out.Code)
			}
			if got := res.Meta[MetaTerminate] == true; got != c.terminate {
				t.Errorf("terminate meta = %v, want %v", got, c.terminate)
			}
		})
	}
}

type seen struct {
	Strand, OpID, StepID, Workspace string
	SourceIndex                     int
}

func TestCallCoordinates(t *testing.T) {
	var mu sync.Mutex
	var calls []seen
	rec := tool.Typed(tool.Tool{Name: "rec", Description: "records its call"},
		func(_ context.Context, c *tool.Call, _ noArgs) tool.Outcome {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, seen{c.Strand, c.OpID, c.StepID, c.Workspace, c.SourceIndex})
			return tool.Success("ok")
		})
	cases := []struct {
		name    string
		session *tool.Call
		opts    *Options
		want    []seen
	}{
		{name: "nil_session", want: []seen{{"mcp", "mcp/1", "1", "", 0}, {"mcp", "mcp/2", "1", "", 0}}},
		{name: "template", session: &tool.Call{Workspace: "/w", Strand: "main", OpID: "ignored", StepID: "ignored", SourceIndex: 7},
			want: []seen{{"main", "main/1", "1", "/w", 0}, {"main", "main/2", "1", "/w", 0}}},
		{name: "prefix", session: &tool.Call{Workspace: "/w"}, opts: &Options{OpPrefix: "sess-a"},
			want: []seen{{"mcp", "sess-a/1", "1", "/w", 0}, {"mcp", "sess-a/2", "1", "/w", 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls = nil
			var tmpl tool.Call
			if c.session != nil {
				tmpl = *c.session
			}
			cs := connect(t, newServer(t, c.session, c.opts, rec), nil)
			for range c.want {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rec"}); err != nil {
					t.Fatal(err)
				}
			}
			if d := cmp.Diff(c.want, calls); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
			if c.session != nil && (c.session.OpID != tmpl.OpID || c.session.StepID != tmpl.StepID || c.session.SourceIndex != tmpl.SourceIndex || c.session.Strand != tmpl.Strand) {
				t.Errorf("the session template was modified: %+v", *c.session)
			}
		})
	}
}

func TestCancellationReachesTool(t *testing.T) {
	started := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	block := tool.Typed(tool.Tool{Name: "block", Description: "waits for cancellation"},
		func(ctx context.Context, _ *tool.Call, _ noArgs) tool.Outcome {
			started <- struct{}{}
			<-ctx.Done()
			stopped <- ctx.Err()
			return tool.Fail("cancelled", "cancelled")
		})
	cs := connect(t, newServer(t, nil, nil, block, fixed("after", tool.Success("still here"))), nil)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block"})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("CallTool after cancel = %v, want context.Canceled", err)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("tool saw %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tool's context was never cancelled")
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "after"})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "still here" {
		t.Fatalf("call after cancellation = %v, %v", res, err)
	}
}

// chatty observes n growing tails, pausing between them.
func chatty(n int, pause time.Duration) tool.Tool {
	return tool.Typed(tool.Tool{Name: "chatty", Description: "emits output"},
		func(_ context.Context, c *tool.Call, _ noArgs) tool.Outcome {
			var total int64
			for i := range n {
				line := fmt.Sprintf("line %d\n", i)
				total += int64(len(line))
				stream := "stdout"
				if i%3 == 2 {
					stream = "stderr"
				}
				c.Observe(tool.OutputTail{Stream: stream, Tail: line, TotalBytes: total})
				time.Sleep(pause)
			}
			return tool.Success("done")
		})
}

func TestProgressCarriesTail(t *testing.T) {
	var mu sync.Mutex
	var notes []*mcp.ProgressNotificationParams
	copts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, r.Params)
	}}
	var hostSaw int
	session := &tool.Call{ObserveOutput: func(tool.OutputTail) { mu.Lock(); hostSaw++; mu.Unlock() }}
	cs := connect(t, newServer(t, session, &Options{ProgressInterval: time.Millisecond}, chatty(20, 2*time.Millisecond)), copts)

	params := &mcp.CallToolParams{Name: "chatty"}
	params.SetProgressToken("tok-1")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	// Round-trip once more so every notification sent has been handled.
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) == 0 {
		t.Fatal("no progress notification arrived")
	}
	if hostSaw != 20 {
		t.Errorf("the host's own observer saw %d tails, want 20", hostSaw)
	}
	prev := 0.0
	for _, n := range notes {
		if n.ProgressToken != "tok-1" {
			t.Errorf("token = %v", n.ProgressToken)
		}
		if n.Progress <= prev {
			t.Errorf("progress %v does not increase past %v", n.Progress, prev)
		}
		prev = n.Progress
		if !strings.HasPrefix(n.Message, "line ") {
			t.Errorf("message %q is not an output tail", n.Message)
		}
		if s := n.Meta[MetaStream]; s != "stdout" && s != "stderr" {
			t.Errorf("stream meta = %v", s)
		}
	}
}

// On the wire, no progress notification follows a call's result.
func TestNoProgressAfterResult(t *testing.T) {
	r := startRaw(t, newServer(t, nil, &Options{ProgressInterval: time.Millisecond}, chatty(30, time.Millisecond)), 0)
	for i := range 5 {
		id := fmt.Sprint("c", i)
		r.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"chatty","arguments":{},"_meta":{"progressToken":"p` + id + `"}}}`)
		progress := 0
		for {
			m := r.next()
			if m["method"] == "notifications/progress" {
				progress++
				continue
			}
			if m["id"] != id {
				t.Fatalf("expected the result of %s, got %v", id, m)
			}
			break
		}
		if progress == 0 {
			t.Errorf("call %s: no progress before its result", id)
		}
		r.ping("p" + id)
	}
}

func TestNoProgressWithoutToken(t *testing.T) {
	var got int
	var mu sync.Mutex
	copts := &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got++
		mu.Unlock()
	}}
	cs := connect(t, newServer(t, nil, &Options{ProgressInterval: time.Millisecond}, chatty(5, time.Millisecond)), copts)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chatty"}); err != nil {
		t.Fatal(err)
	}
	// Round-trip once more so any notification sent before it has arrived.
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got != 0 {
		t.Errorf("%d progress notifications without a progress token", got)
	}
}

func TestConcurrentCalls(t *testing.T) {
	cs := connect(t, newServer(t, nil, nil, fixed("a", tool.Success("a"))), nil)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a"})
			if err == nil && res.IsError {
				err = errors.New("error result")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestNewRefusesUnservableTool(t *testing.T) {
	ok := fixed("ok", tool.Success(""))
	withName := func(n string) tool.Tool { x := ok; x.Name = n; return x }
	withSchema := func(s string) tool.Tool { x := ok; x.Name = "s"; x.Schema = json.RawMessage(s); return x }
	cases := []struct {
		name string
		t    tool.Tool
		code string // "" = accepted
	}{
		{"name_at_bound", withName(strings.Repeat("n", maxToolNameBytes)), ""},
		{"name_past_bound", withName(strings.Repeat("n", maxToolNameBytes+1)), "bad_name"},
		{"name_punctuation", withName("a.b-c_D9"), ""},
		{"name_space", withName("a b"), "bad_name"},
		{"name_slash", withName("a/b"), "bad_name"},
		{"name_unicode", withName("fs_lire_é"), "bad_name"},
		{"schema_bad_pattern", withSchema(`{"type":"object","properties":{"p":{"type":"string","pattern":"("}}}`), "bad_schema"},
		{"schema_bad_type", withSchema(`{"type":"object","properties":{"p":{"type":"strung"}}}`), "bad_schema"},
		{"schema_bad_ref", withSchema(`{"type":"object","properties":{"p":{"$ref":"#/$defs/missing"}}}`), "bad_schema"},
		{"schema_minimal", withSchema(`{"type":"object"}`), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg, err := tool.NewRegistry(c.t)
			if err != nil {
				t.Fatalf("registry refused the tool: %v", err)
			}
			_, err = New(reg, nil, Options{})
			var te *ToolError
			switch {
			case c.code == "" && err != nil:
				t.Errorf("New refused a servable tool: %v", err)
			case c.code != "" && !errors.As(err, &te):
				t.Errorf("New = %v, want a *ToolError %s", err, c.code)
			case c.code != "" && (te.Code != c.code || te.Tool != c.t.Name || te.Unwrap() == nil):
				t.Errorf("ToolError = %+v, want code %s for %q", te, c.code, c.t.Name)
			}
		})
	}
	if _, err := New(nil, nil, Options{}); !errors.Is(err, errNilRegistry) {
		t.Error("New(nil registry) succeeded")
	}
}

func TestNewUsesOptions(t *testing.T) {
	srv := newServer(t, nil, &Options{Name: "n", Version: "v9", Instructions: "read first"}, fixed("a", tool.Success("")))
	cs := connect(t, srv, nil)
	init := cs.InitializeResult()
	if init.ServerInfo.Name != "n" || init.ServerInfo.Version != "v9" || init.Instructions != "read first" {
		t.Errorf("initialize result = %+v %q", init.ServerInfo, init.Instructions)
	}
	if init.Capabilities.Tools == nil {
		t.Error("the tools capability is not advertised")
	}
	def := connect(t, newServer(t, nil, nil, fixed("a", tool.Success(""))), nil).InitializeResult().ServerInfo
	if def.Name != DefaultName || def.Version != DefaultVersion {
		t.Errorf("default server info = %+v", def)
	}
}
