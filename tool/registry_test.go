package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type echoArgs struct {
	Say   string `json:"say" jsonschema:"what to echo"`
	Times int    `json:"times,omitempty"`
}

func echoTool(name string) Tool {
	return Typed(Tool{Name: name, Description: "echo", PromptSnippet: name + ": echoes"},
		func(_ context.Context, _ *Call, a echoArgs) Outcome {
			return Success(strings.Repeat(a.Say, max(a.Times, 1)))
		})
}

func TestRegisterRefusals(t *testing.T) {
	good := echoTool("echo")
	noRun := good
	noRun.Run = nil
	badSchema := good
	badSchema.Name = "bad"
	badSchema.Schema = json.RawMessage(`{"type":"string"}`)
	unnamed := good
	unnamed.Name = ""
	cases := []struct {
		name string
		tool Tool
		code Code
	}{
		{"empty name", unnamed, "empty_name"},
		{"no run", noRun, "no_run"},
		{"bad schema", badSchema, "bad_schema"},
		{"duplicate", good, "duplicate_name"},
	}
	r, err := NewRegistry(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var re *RegisterError
			if err := r.Register(tc.tool); !errors.As(err, &re) || re.Code != tc.code {
				t.Fatalf("Register = %v, want code %s", err, tc.code)
			}
		})
	}
}

func TestRegistryOrders(t *testing.T) {
	r, err := NewRegistry(echoTool("zeta"), echoTool("alpha"), echoTool("mid"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alpha", "mid", "zeta"}, r.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	var order []string
	for _, tl := range r.Registered() {
		order = append(order, tl.Name)
	}
	if diff := cmp.Diff([]string{"zeta", "alpha", "mid"}, order); diff != "" {
		t.Errorf("Registered (-want +got):\n%s", diff)
	}
	snips := r.Snippets()
	if len(snips) != 3 || snips[0].Name != "zeta" || snips[0].Line != "zeta: echoes" {
		t.Errorf("Snippets = %+v", snips)
	}
}

func TestSnippetsOmitEmpty(t *testing.T) {
	quiet := echoTool("quiet")
	quiet.PromptSnippet = ""
	r, _ := NewRegistry(echoTool("loud"), quiet)
	if s := r.Snippets(); len(s) != 1 || s[0].Name != "loud" {
		t.Errorf("Snippets = %+v, want only loud", s)
	}
	if out := r.Dispatch(context.Background(), nil, "quiet", json.RawMessage(`{"say":"x"}`)); out.IsError || out.Text != "x" {
		t.Errorf("a tool without snippet must stay callable: %+v", out)
	}
}

func TestDeclarations(t *testing.T) {
	w := echoTool("w")
	w.Replay, w.Mode = ReplayNever, Exclusive
	r, _ := NewRegistry(echoTool("r"), w)
	d := r.Declarations()
	if got, ok := d.Declared("w"); !ok || got != (Declaration{ReplayNever, Exclusive}) {
		t.Errorf("Declared(w) = %+v, %v", got, ok)
	}
	if got, ok := d.Declared("r"); !ok || got != (Declaration{ReplaySafe, Concurrent}) {
		t.Errorf("Declared(r) = %+v, %v", got, ok)
	}
	r.Register(echoTool("later"))
	if _, ok := d.Declared("later"); ok {
		t.Error("a projection must not change after later registrations")
	}
}

func TestDispatchIsTotal(t *testing.T) {
	boom := Typed(Tool{Name: "boom"}, func(context.Context, *Call, struct{}) Outcome { panic("kaboom") })
	r, _ := NewRegistry(echoTool("echo"), boom)
	ctx := context.Background()

	out := r.Dispatch(ctx, nil, "nope", nil)
	if !out.IsError || out.Details != nil || !strings.Contains(out.Text, "boom, echo") {
		t.Errorf("unknown tool: %+v", out)
	}
	out = r.Dispatch(ctx, nil, "boom", nil)
	if !out.IsError || !strings.Contains(out.Text, "kaboom") {
		t.Errorf("panic: %+v", out)
	}
	if d, ok := out.Details.(PanicDetails); !ok || out.Code != CodeToolPanicked || d.Stack == "" {
		t.Errorf("panic details: %#v", out.Details)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if out := r.Dispatch(cctx, nil, "echo", json.RawMessage(`{"say":"x"}`)); !out.IsError {
		t.Errorf("cancelled context must not run the tool: %+v", out)
	}
}

func TestArguments(t *testing.T) {
	r, _ := NewRegistry(echoTool("echo"))
	cases := []struct {
		name, args string
		code       Code // "" means success
		mention    []string
	}{
		{"ok", `{"say":"hi"}`, "", nil},
		{"optional given", `{"say":"hi","times":2}`, "", nil},
		{"unknown property names the known ones", `{"say":"hi","tiems":2}`, "unknown_property", []string{`"tiems"`, "say, times"}},
		{"missing required", `{}`, "invalid_arguments", []string{"say"}},
		{"null means empty object", `null`, "invalid_arguments", []string{"say"}},
		{"wrong type", `{"say":3}`, "invalid_arguments", []string{"say"}},
		{"not an object", `[1,2]`, "arguments_not_object", []string{"one JSON object"}},
		{"broken json", `{"say":`, "arguments_not_object", []string{"not valid JSON"}},
		{"null property", `{"say":null}`, "invalid_arguments", []string{`"say" is null`, "omit it", "string"}},
		{"number out of range", `{"say":"x","times":1e309}`, "invalid_arguments", []string{`"times"`, "1e309", "does not fit"}},
		{"integer overflow", `{"say":"x","times":1e30}`, "invalid_arguments", []string{"times", "does not fit"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := r.Dispatch(context.Background(), nil, "echo", json.RawMessage(tc.args))
			if tc.code == "" {
				if out.IsError {
					t.Fatalf("unexpected error: %s", out.Text)
				}
				return
			}
			d, ok := out.Details.(ArgErrorDetails)
			if !out.IsError || !ok || out.Code != tc.code || (out.Code == CodeUnknownProperty && len(d.Unknown) == 0) {
				t.Fatalf("got %+v, want code %s", out, tc.code)
			}
			for _, m := range tc.mention {
				if !strings.Contains(out.Text, m) {
					t.Errorf("text %q does not mention %q", out.Text, m)
				}
			}
		})
	}
}

// TestArgumentRefusalsAreBounded: a huge value in the wrong place never
// comes back whole; the refusal still names the property.
func TestArgumentRefusalsAreBounded(t *testing.T) {
	r, _ := NewRegistry(echoTool("echo"))
	huge := strings.Repeat("z", 1<<20)
	for name, args := range map[string]string{
		"wrong type":     `{"say":["` + huge + `"]}`,
		"long number":    `{"say":"x","times":1` + strings.Repeat("0", 1<<20) + `}`,
		"unknown tool":   "",
		"broken json":    `{"say":"` + huge,
		"wrong int type": `{"say":"x","times":"` + huge + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			tool := "echo"
			if args == "" {
				tool, args = huge, "{}"
			}
			out := r.Dispatch(context.Background(), nil, tool, json.RawMessage(args))
			if !out.IsError || out.Code == "" {
				t.Fatalf("accepted: %.200s", out.Text)
			}
			if len(out.Text) > 2*MaxReasonBytes {
				t.Errorf("answer is %d bytes: %.300s…", len(out.Text), out.Text)
			}
		})
	}
}

func TestArgumentsTooLarge(t *testing.T) {
	r, _ := NewRegistry(echoTool("echo"))
	at := `{"say":"` + strings.Repeat("a", MaxArgumentBytes-10) + `"}`
	if out := r.Dispatch(context.Background(), nil, "echo", json.RawMessage(at)); out.IsError {
		t.Fatalf("arguments of exactly the bound refused: %.200s", out.Text)
	}
	over := `{"say":"` + strings.Repeat("a", MaxArgumentBytes-9) + `"}`
	out := r.Dispatch(context.Background(), nil, "echo", json.RawMessage(over))
	if _, ok := out.Details.(ArgErrorDetails); !ok || out.Code != CodeArgumentsTooLarge {
		t.Fatalf("one byte past the bound: %+v", out.Details)
	}
}

func TestSchemaComesFromTheStruct(t *testing.T) {
	var s struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
		Additional *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(echoTool("echo").Schema, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || !cmp.Equal(s.Required, []string{"say"}) || len(s.Properties) != 2 {
		t.Errorf("schema = %+v", s)
	}
	for _, tl := range FileTools() {
		if len(tl.Schema) == 0 {
			t.Errorf("%s has no schema", tl.Name)
		}
	}
}

// countingTool is a tool that records each run, so a test can tell a
// refused call from one that ran.
func countingTool(name string, runs *atomic.Int64) Tool {
	return Typed(Tool{Name: name, Description: "counts"}, func(context.Context, *Call, struct{}) Outcome {
		runs.Add(1)
		return Success("ran " + name)
	})
}

// TestDispatchGate: a gated registry runs a call only for a strand that
// holds the tool; a refusal names the tool, the strand and the held tools
// (bounded), and the tool never runs. No gate, or a gate removed, means
// every strand holds every tool.
func TestDispatchGate(t *testing.T) {
	t.Parallel()
	held := map[string][]string{
		"main":  nil, // every tool
		"child": {"read"},
		"none":  {},
	}
	gate := func(_ context.Context, strand, tool string) bool {
		tools, ok := held[strand]
		return ok && (tools == nil || slices.Contains(tools, tool))
	}
	cases := []struct {
		name     string
		gate     HoldsFunc
		strand   string
		tool     string
		ran      bool
		wantHeld []string
	}{
		{"no gate runs anything", nil, "child", "bash", true, nil},
		{"every tool held", gate, "main", "bash", true, nil},
		{"held tool", gate, "child", "read", true, nil},
		{"tool not held", gate, "child", "bash", false, []string{"read"}},
		{"strand holding nothing", gate, "none", "read", false, []string{}},
		{"unknown strand fails closed", gate, "stranger", "read", false, []string{}},
		{"empty strand fails closed", gate, "", "read", false, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var runs atomic.Int64
			r, err := NewRegistry(countingTool("bash", &runs), countingTool("read", &runs))
			if err != nil {
				t.Fatal(err)
			}
			r.SetHolds(tc.gate)
			out := r.Dispatch(context.Background(), &Call{Strand: tc.strand}, tc.tool, json.RawMessage(`{}`))
			if got := runs.Load() == 1; got != tc.ran || out.IsError == tc.ran {
				t.Fatalf("ran=%v (outcome %+v), want ran=%v", got, out, tc.ran)
			}
			if tc.ran {
				return
			}
			d, ok := out.Details.(NotHeldDetails)
			if !ok || out.Code != CodeToolNotHeld || d.Tool != tc.tool || d.Strand != tc.strand || !slices.Equal(d.Held, tc.wantHeld) {
				t.Fatalf("details %#v, want tool_not_held for %s/%q holding %v", out.Details, tc.tool, tc.strand, tc.wantHeld)
			}
			for _, m := range append([]string{tc.tool, fmt.Sprintf("%q", tc.strand)}, tc.wantHeld...) {
				if !strings.Contains(out.Text, m) {
					t.Errorf("refusal %q does not mention %q", out.Text, m)
				}
			}
		})
	}
}

// TestDispatchGateUnknownAndRemoved: an unknown tool stays "unknown"
// under a gate, and SetHolds(nil) lifts the gate.
func TestDispatchGateUnknownAndRemoved(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	r, _ := NewRegistry(countingTool("bash", &runs))
	r.SetHolds(func(context.Context, string, string) bool { return false })
	if out := r.Dispatch(context.Background(), &Call{Strand: "s"}, "nope", nil); !out.IsError || out.Details != nil || !strings.Contains(out.Text, "unknown tool") {
		t.Fatalf("unknown tool under a gate: %+v", out)
	}
	if out := r.Dispatch(context.Background(), &Call{Strand: "s"}, "bash", json.RawMessage(`{}`)); !out.IsError || runs.Load() != 0 {
		t.Fatalf("gate closed: %+v, %d runs", out, runs.Load())
	}
	r.SetHolds(nil)
	if out := r.Dispatch(context.Background(), &Call{Strand: "s"}, "bash", json.RawMessage(`{}`)); out.IsError || runs.Load() != 1 {
		t.Fatalf("gate removed: %+v, %d runs", out, runs.Load())
	}
}

// TestDispatchGateListIsBounded: a refusal lists at most MaxHeldListed
// held tools and counts the rest.
func TestDispatchGateListIsBounded(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	var tools []Tool
	for i := range MaxHeldListed + 5 {
		tools = append(tools, countingTool(fmt.Sprintf("t%03d", i), &runs))
	}
	tools = append(tools, countingTool("withheld", &runs))
	r, err := NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	r.SetHolds(func(_ context.Context, _, tool string) bool { return tool != "withheld" })
	out := r.Dispatch(context.Background(), &Call{Strand: "s"}, "withheld", json.RawMessage(`{}`))
	d, ok := out.Details.(NotHeldDetails)
	if !ok || len(d.Held) != MaxHeldListed || d.HeldMore != 5 || runs.Load() != 0 {
		t.Fatalf("details %+v (%d runs), want %d listed and 5 more", out.Details, runs.Load(), MaxHeldListed)
	}
	if !strings.Contains(out.Text, "and 5 more") {
		t.Errorf("refusal %q does not count the tools left off", out.Text)
	}
}

// TestHoldsIsDispatchsCheck: Holds answers what Dispatch enforces, and
// nobody holds a tool the registry does not offer.
func TestHoldsIsDispatchsCheck(t *testing.T) {
	t.Parallel()
	r, err := NewRegistry(Tool{Name: "a", Schema: json.RawMessage(`{"type":"object"}`), Run: func(context.Context, *Call, json.RawMessage) Outcome { return Outcome{Text: "ran"} }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if !r.Holds(ctx, "s", "a") || r.Holds(ctx, "s", "b") {
		t.Fatal("ungated: every strand holds every registered tool, and no other")
	}
	r.SetHolds(func(_ context.Context, strand, _ string) bool { return strand == "main" })
	for _, strand := range []string{"main", "other"} {
		ran := !r.Dispatch(ctx, &Call{Strand: strand}, "a", json.RawMessage(`{}`)).IsError
		if held := r.Holds(ctx, strand, "a"); held != ran {
			t.Errorf("strand %s: Holds = %v, Dispatch ran = %v", strand, held, ran)
		}
	}
}
