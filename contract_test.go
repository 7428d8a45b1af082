package loom_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/codemode"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// everyTool registers every family the module ships, each over an absent
// seam: a bad argument must be refused before any seam is asked.
func everyTool(t *testing.T) *tool.Registry {
	t.Helper()
	tools := append(tool.FileTools(), tool.GrepTool(), job.BashTool(job.NoPlane()))
	tools = append(tools, job.Tools(job.NoPlane())...)
	tools = append(tools, agent.Tools(nil)...)
	tools = append(tools, history.SearchTool(nil, nil), history.RememberTool(nil, nil))
	r, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	// code_mode over a broker no call of these tests reaches: bad input is
	// refused before any stage runs.
	b := broker.New(broker.Options{})
	t.Cleanup(func() { b.Close() })
	eng, err := codemode.New(codemode.Options{Registry: r, Broker: b})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(eng.Tool()); err != nil {
		t.Fatal(err)
	}
	return r
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// maxRefusalBytes bounds what a refusal of bad arguments may say.
const maxRefusalBytes = 4 << 10

// propertyTypes returns each property of a tool's schema with its
// "type": a name or a list of names, as JSON.
func propertyTypes(t *testing.T, schema json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]json.RawMessage, len(s.Properties))
	for name, p := range s.Properties {
		out[name] = p.Type
	}
	return out
}

// badInputs returns, for one tool's schema, argument documents each of
// which the tool must refuse: not an object, an unknown property, and
// every property given a value of the wrong type.
func badInputs(t *testing.T, schema json.RawMessage) map[string]string {
	props := propertyTypes(t, schema)
	in := map[string]string{
		"array":            `[1]`,
		"unknown property": `{"no_such_property_anywhere":1}`,
	}
	for name, ty := range props {
		wrong := `{"x":1}`
		if bytes.Contains(ty, []byte(`"object"`)) {
			wrong = `"not an object"`
		}
		in["wrong type for "+name] = fmt.Sprintf(`{%q:%s}`, name, wrong)
	}
	return in
}

// TestEveryToolRefusesBadInputWithOneCode holds the failure contract
// for every tool of every family: a bad argument is an error outcome
// whose code is read in one place, Outcome.Code, snake_case, with
// bounded text and Details that do not repeat it.
func TestEveryToolRefusesBadInputWithOneCode(t *testing.T) {
	r := everyTool(t)
	names := r.Names()
	sort.Strings(names)
	if len(names) < 18 {
		t.Fatalf("only %d tools registered: %v", len(names), names)
	}
	for _, name := range names {
		tl, _ := r.Lookup(name)
		for what, args := range badInputs(t, tl.Schema) {
			t.Run(name+"/"+what, func(t *testing.T) {
				o := r.Dispatch(context.Background(), &tool.Call{Workspace: t.TempDir(), Strand: "main"}, name, json.RawMessage(args))
				checkRefusal(t, o)
			})
		}
	}
	t.Run("unknown tool", func(t *testing.T) {
		o := r.Dispatch(context.Background(), nil, "no_such_tool", json.RawMessage(`{}`))
		checkRefusal(t, o)
		if o.Code != tool.CodeUnknownTool {
			t.Errorf("code %q, want %q", o.Code, tool.CodeUnknownTool)
		}
	})
}

func checkRefusal(t *testing.T, o tool.Outcome) {
	t.Helper()
	if !o.IsError || o.Code == "" || !snakeCase.MatchString(string(o.Code)) {
		t.Fatalf("outcome %.300q: IsError %v, code %q", o.Text, o.IsError, o.Code)
	}
	if o.Text == "" || len(o.Text) > maxRefusalBytes {
		t.Errorf("refusal text is %d bytes: %.300q", len(o.Text), o.Text)
	}
	if o.Details != nil {
		raw, err := json.Marshal(o.Details)
		if err != nil {
			t.Fatalf("details do not encode: %v", err)
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) == nil {
			if _, dup := fields["error"]; dup || bytes.Contains(raw, []byte(`"code"`)) {
				t.Errorf("details repeat the code: %s", raw)
			}
		}
	}
}

// TestEveryRefusalIsBoundedWhateverTheValue: a megabyte in any string
// property of any tool never comes back whole in a refusal.
func TestEveryRefusalIsBoundedWhateverTheValue(t *testing.T) {
	r := everyTool(t)
	huge := strings.Repeat("v", 1<<20)
	for _, name := range r.Names() {
		tl, _ := r.Lookup(name)
		for prop, ty := range propertyTypes(t, tl.Schema) {
			if !bytes.Equal(ty, []byte(`"string"`)) {
				continue
			}
			t.Run(name+"/"+prop, func(t *testing.T) {
				args, _ := json.Marshal(map[string]string{prop: huge})
				o := r.Dispatch(context.Background(), &tool.Call{Workspace: t.TempDir(), Strand: "main"}, name, args)
				if o.IsError && len(o.Text) > maxRefusalBytes {
					t.Errorf("%s refused %s with %d bytes: %.200q…", name, prop, len(o.Text), o.Text)
				}
			})
		}
	}
}
