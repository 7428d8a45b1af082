package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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
		code string
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
	if d, ok := out.Details.(PanicDetails); !ok || d.Error != "tool_panicked" || d.Stack == "" {
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
		code       string // "" means success
		mention    []string
	}{
		{"ok", `{"say":"hi"}`, "", nil},
		{"optional given", `{"say":"hi","times":2}`, "", nil},
		{"unknown property names the known ones", `{"say":"hi","tiems":2}`, "unknown_property", []string{`"tiems"`, "say, times"}},
		{"missing required", `{}`, "invalid_arguments", []string{"say"}},
		{"null means empty object", `null`, "invalid_arguments", []string{"say"}},
		{"wrong type", `{"say":3}`, "invalid_arguments", []string{"say"}},
		{"not an object", `[1,2]`, "arguments_not_object", []string{"one JSON object"}},
		{"broken json", `{"say":`, "arguments_not_object", nil},
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
			if !out.IsError || !ok || d.Error != tc.code {
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

func TestArgumentsTooLarge(t *testing.T) {
	r, _ := NewRegistry(echoTool("echo"))
	at := `{"say":"` + strings.Repeat("a", MaxArgumentBytes-10) + `"}`
	if out := r.Dispatch(context.Background(), nil, "echo", json.RawMessage(at)); out.IsError {
		t.Fatalf("arguments of exactly the bound refused: %.200s", out.Text)
	}
	over := `{"say":"` + strings.Repeat("a", MaxArgumentBytes-9) + `"}`
	out := r.Dispatch(context.Background(), nil, "echo", json.RawMessage(over))
	if d, _ := out.Details.(ArgErrorDetails); d.Error != "arguments_too_large" {
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
