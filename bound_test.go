package loom_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/todo"
	"github.com/agentloom/loom/tool"
)

// probeBytes is the size of the value TestBoundEveryStringProperty sends
// in a string property.
const probeBytes = 1 << 20

// echoBytes is the longest piece of a model's value an answer may hold:
// a refusal quotes at most tool.MaxReasonBytes of it, so an answer
// holding this much of it echoes the value instead of quoting it.
const echoBytes = 4 << 10

// schemaNode is the part of a JSON schema the string walk reads.
// Constructs it does not read (references, combinators, schemas of
// additional properties) fail the test, so a schema that hides a string
// from the walk cannot pass unprobed.
type schemaNode struct {
	Type       json.RawMessage        `json:"type"`
	Enum       []json.RawMessage      `json:"enum"`
	Properties map[string]*schemaNode `json:"properties"`
	Required   []string               `json:"required"`
	Items      *schemaNode            `json:"items"`

	Ref                  string          `json:"$ref"`
	Defs                 json.RawMessage `json:"$defs"`
	AnyOf                json.RawMessage `json:"anyOf"`
	OneOf                json.RawMessage `json:"oneOf"`
	AllOf                json.RawMessage `json:"allOf"`
	PrefixItems          json.RawMessage `json:"prefixItems"`
	PatternProperties    json.RawMessage `json:"patternProperties"`
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
}

// itemStep is the path step into an array's items.
const itemStep = "[]"

// types returns the node's JSON types; none listed means any.
func (n *schemaNode) types(t *testing.T) []string {
	if len(n.Type) == 0 {
		return []string{"string", "number", "boolean", "object", "array", "null"}
	}
	var one string
	if json.Unmarshal(n.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	if err := json.Unmarshal(n.Type, &many); err != nil {
		t.Fatalf("schema type %s", n.Type)
	}
	return many
}

// stringPaths returns the path of every place under n a string may go:
// n itself, its properties at any depth and its array items.
func stringPaths(t *testing.T, tool string, n *schemaNode, at []string) [][]string {
	t.Helper()
	if n.Ref != "" || n.Defs != nil || n.AnyOf != nil || n.OneOf != nil || n.AllOf != nil || n.PrefixItems != nil || n.PatternProperties != nil {
		t.Fatalf("%s %v: the schema uses a construct the string walk does not read; teach it", tool, at)
	}
	if a := string(n.AdditionalProperties); a != "" && a != "false" && a != "true" {
		t.Fatalf("%s %v: additionalProperties is a schema the string walk does not read; teach it", tool, at)
	}
	var out [][]string
	ty := n.types(t)
	if slices.Contains(ty, "string") {
		out = append(out, slices.Clone(at))
	}
	names := make([]string, 0, len(n.Properties))
	for name := range n.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		out = append(out, stringPaths(t, tool, n.Properties[name], append(slices.Clone(at), name))...)
	}
	if n.Items != nil {
		out = append(out, stringPaths(t, tool, n.Items, append(slices.Clone(at), itemStep))...)
	}
	return out
}

// fill returns a small value n accepts as far as its type, enum and
// required properties go.
func fill(t *testing.T, n *schemaNode) any {
	if len(n.Enum) > 0 {
		var v any
		if err := json.Unmarshal(n.Enum[0], &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	switch n.types(t)[0] {
	case "object":
		m := map[string]any{}
		for _, r := range n.Required {
			if p := n.Properties[r]; p != nil {
				m[r] = fill(t, p)
			}
		}
		return m
	case "array":
		return []any{}
	case "integer", "number":
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	}
	return "x"
}

// put returns v with the string at path (below n) set to probe, making
// the objects and one-item arrays on the way, their required properties
// filled.
func put(t *testing.T, n *schemaNode, v any, path []string, probe string) any {
	if len(path) == 0 {
		return probe
	}
	if path[0] == itemStep {
		arr, _ := v.([]any)
		if len(arr) == 0 {
			arr = []any{fill(t, n.Items)}
		}
		arr[0] = put(t, n.Items, arr[0], path[1:], probe)
		return arr
	}
	m, ok := v.(map[string]any)
	if !ok {
		m = map[string]any{}
		for _, r := range n.Required {
			if p := n.Properties[r]; p != nil {
				m[r] = fill(t, p)
			}
		}
	}
	p := n.Properties[path[0]]
	m[path[0]] = put(t, p, m[path[0]], path[1:], probe)
	return m
}

// probeValue is size random letters from seed: each call's own, so no
// answer holds it by way of an earlier call (a file fs_write made).
func probeValue(seed uint64, size int) string {
	r := rand.New(rand.NewPCG(seed, 0x10a7))
	b := make([]byte, size)
	for i := range b {
		b[i] = 'a' + byte(r.IntN(26))
	}
	return string(b)
}

// answerBytes is an outcome as a host sends it on: its text and its
// details' JSON (json.Marshal, as hosts encode them).
func answerBytes(o tool.Outcome) (text, details string, err error) {
	if o.Details == nil {
		return o.Text, "", nil
	}
	b, err := json.Marshal(o.Details)
	return o.Text, string(b), err
}

// overBound says how o exceeds the outcome bounds, or "".
func overBound(o tool.Outcome) string {
	text, details, err := answerBytes(o)
	var why []string
	if err != nil {
		why = append(why, fmt.Sprintf("details do not encode: %v", err))
	}
	if len(text) > tool.MaxOutcomeBytes {
		why = append(why, fmt.Sprintf("text is %d bytes", len(text)))
	}
	if len(details) > tool.MaxOutcomeBytes {
		why = append(why, fmt.Sprintf("details are %d bytes", len(details)))
	}
	images := 0
	for _, img := range o.Images {
		images += len(img.Data)
	}
	if len(o.Images) > tool.MaxOutcomeImages || images > tool.MaxOutcomeImageBytes {
		why = append(why, fmt.Sprintf("%d images of %d bytes", len(o.Images), images))
	}
	return strings.Join(why, "; ")
}

// echoes says where o holds more than echoBytes of probe, or "".
func echoes(o tool.Outcome, probe string) string {
	text, details, _ := answerBytes(o)
	var why []string
	for part, s := range map[string]string{"text": text, "details": details} {
		if strings.Contains(s, probe[:echoBytes]) || strings.Contains(s, probe[len(probe)-echoBytes:]) {
			why = append(why, part+" echo the value")
		}
	}
	slices.Sort(why)
	return strings.Join(why, "; ")
}

// recorded wraps every tool of r so the outcome its Run answered, before
// Dispatch bounds it, is kept in *raw; the wrapped registry dispatches as
// r does.
func recorded(t *testing.T, r *tool.Registry, raw *tool.Outcome) *tool.Registry {
	t.Helper()
	var tools []tool.Tool
	for _, tl := range r.Registered() {
		run := tl.Run
		tl.Run = func(ctx context.Context, c *tool.Call, args json.RawMessage) tool.Outcome {
			o := run(ctx, c, args)
			*raw = o
			return o
		}
		tools = append(tools, tl)
	}
	w, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// boundPlane assembles every family (the agent tools over a runner that
// answers at once, code mode with a cache of its own), its workspace,
// stores and caches under a fresh directory of /var/tmp, where the
// jail's private /tmp does not hide them.
func boundPlane(t *testing.T) *plane.Plane {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "loom-bound-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := plane.New(plane.Config{
		Workspace:     ws,
		BlobDir:       filepath.Join(root, "blobs"),
		HistoryPath:   filepath.Join(root, "history", "index.sqlite"),
		Scratch:       filepath.Join(root, "scratch"),
		BrokerOptions: broker.Options{HelperPath: jailtest.HostHelper(t)},
		Runner:        agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "done", nil }),
		CodeMode:      codemode.BuilderOptions{CacheDir: filepath.Join(root, "codemode")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	names := p.Registry.Names()
	for _, want := range []string{"fs_read", tool.GrepTool().Name, job.BashTool(nil).Name, job.PollToolName,
		history.SearchToolName, agent.SpawnToolName, agent.TodoToolName, codemode.ToolName} {
		if !slices.Contains(names, want) {
			t.Fatalf("the plane holds no %s: %v", want, names)
		}
	}
	return p
}

// TestBoundEveryStringProperty: a value of probeBytes in each string
// property of every tool of every family (found by walking each tool's
// schema: properties at any depth, array items, so a new tool or
// property is probed without a change here), and in all of a tool's at
// once, is answered within the outcome bounds by Dispatch, and by the
// tool itself without echoing the value. The control is a tool that
// echoes: its own answer fails both checks, Dispatch's passes the bound.
func TestBoundEveryStringProperty(t *testing.T) {
	p := boundPlane(t)
	var raw tool.Outcome
	reg := recorded(t, p.Registry, &raw)
	calls := uint64(0)
	next := func() string { calls++; return probeValue(calls, probeBytes) }
	call := func(t *testing.T, name string, args any, probe string) {
		t.Helper()
		doc, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = tool.Outcome{}
		out := reg.Dispatch(context.Background(), p.Call.At("op-bound", fmt.Sprint("step-", calls), 0), name, doc)
		if why := overBound(out); why != "" {
			t.Errorf("Dispatch answered past the bound: %s", why)
		}
		if why := overBound(raw); why != "" {
			t.Errorf("the tool answered past the bound (Dispatch cut it): %s", why)
		}
		if why := echoes(raw, probe); why != "" {
			t.Errorf("the tool's answer holds the value whole: %s (%s, %.200q…)", why, raw.Code, raw.Text)
		}
	}
	for _, tl := range reg.Registered() {
		var root schemaNode
		if err := json.Unmarshal(tl.Schema, &root); err != nil {
			t.Fatalf("%s: %v", tl.Name, err)
		}
		paths := stringPaths(t, tl.Name, &root, nil)
		t.Run(tl.Name, func(t *testing.T) {
			all, allProbe := fill(t, &root), next()
			for _, path := range paths {
				probe := next()
				t.Run(strings.Join(path, "."), func(t *testing.T) {
					call(t, tl.Name, put(t, &root, fill(t, &root), path, probe), probe)
				})
				all = put(t, &root, all, path, allProbe)
			}
			if len(paths) > 0 {
				t.Run("every string", func(t *testing.T) { call(t, tl.Name, all, allProbe) })
			}
		})
	}
	t.Run("control: a tool that echoes", func(t *testing.T) {
		echo := tool.Tool{Name: "echo", Schema: json.RawMessage(`{"type":"object","properties":{"say":{"type":"string"}}}`),
			Run: func(_ context.Context, _ *tool.Call, args json.RawMessage) tool.Outcome {
				var a struct{ Say string }
				json.Unmarshal(args, &a)
				return tool.Fail(tool.CodeNotFound, strings.Repeat(a.Say, 3)).WithDetails(map[string]string{"say": a.Say + a.Say + a.Say})
			}}
		var raw tool.Outcome
		r, err := tool.NewRegistry(echo)
		if err != nil {
			t.Fatal(err)
		}
		reg := recorded(t, r, &raw)
		var root schemaNode
		json.Unmarshal(echo.Schema, &root)
		probe := probeValue(0, probeBytes)
		paths := stringPaths(t, "echo", &root, nil)
		if !slices.EqualFunc(paths, [][]string{{"say"}}, slices.Equal) {
			t.Fatalf("the walk found %v", paths)
		}
		doc, _ := json.Marshal(put(t, &root, fill(t, &root), paths[0], probe))
		out := reg.Dispatch(context.Background(), nil, "echo", doc)
		if overBound(raw) == "" || echoes(raw, probe) == "" {
			t.Fatalf("the checks missed the echoing tool: bound %q, echo %q", overBound(raw), echoes(raw, probe))
		}
		if why := overBound(out); why != "" || out.Code != tool.CodeNotFound {
			t.Fatalf("Dispatch: %s, code %q", why, out.Code)
		}
		if _, ok := out.Details.(tool.OmittedDetails); !ok {
			t.Errorf("details: %T, want tool.OmittedDetails", out.Details)
		}
	})
}

// TestBoundAboveEveryFamilysMaximum: the largest answer each family
// states it gives, from its own bounds (plus a stated allowance for the
// lines around them), fits the outcome bounds Dispatch holds every
// answer to, so the structural bound never cuts a built-in tool's
// answer. A bound raised in one family without the outcome bounds fails
// here. (code_mode's bounds are its own: package codemode's
// TestAnswerFitsTheOutcomeBound holds its answer to the same bound, as
// package agent's TestAnswersFitTheOutcomeBound and package job's
// TestAnswerFitsTheOutcomeBound hold theirs.)
func TestBoundAboveEveryFamilysMaximum(t *testing.T) {
	// frame allows for an answer's headlines and notes; item for one
	// listed entry's key, state and JSON punctuation.
	const frame, item = 16 << 10, 512
	for _, tc := range []struct {
		answer string
		bytes  int
	}{
		{"fs_read window", tool.MaxWindowBytes + frame},
		{"grep inline matches", blob.OverflowThreshold + frame},
		{"history_search inline", blob.OverflowThreshold + frame},
		{"todo", todo.MaxTasks*(todo.MaxTextBytes+todo.MaxReasonBytes+item) + frame},
	} {
		if tc.bytes > tool.MaxOutcomeBytes {
			t.Errorf("%s: up to %d bytes, over tool.MaxOutcomeBytes (%d)", tc.answer, tc.bytes, tool.MaxOutcomeBytes)
		}
	}
	if tool.MaxFileBytes > tool.MaxOutcomeImageBytes || tool.MaxOutcomeImages < 1 {
		t.Errorf("fs_read answers one image of up to %d bytes; the bounds allow %d images of %d bytes", tool.MaxFileBytes, tool.MaxOutcomeImages, tool.MaxOutcomeImageBytes)
	}
}

// TestBoundOmittedDetailsIsSnakeCase: the marker Dispatch puts in place
// of oversize Details reads like every other Details.
func TestBoundOmittedDetailsIsSnakeCase(t *testing.T) {
	b, err := json.Marshal(tool.OmittedDetails{Type: "x", Bytes: 1, Error: "e"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for k := range m {
		if !snakeCase.MatchString(k) {
			t.Errorf("OmittedDetails field %q is not snake_case", k)
		}
	}
}
