package mcpgen

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// schemaNode is a random schema, held as an ordered list of keys so it
// can be written with its keys in any order.
type schemaNode struct {
	keys []string
	vals []any // string, []string, *schemaNode, []*schemaNode, bool, json.RawMessage
}

// genSchema draws a schema depth levels deep at most, from a small
// alphabet of names so names clash.
func genSchema(t *rapid.T, depth int, label string) *schemaNode {
	n := &schemaNode{}
	add := func(k string, v any) { n.keys, n.vals = append(n.keys, k), append(n.vals, v) }
	kinds := []string{"string", "integer", "number", "boolean", "enum", "nullable", "any", "ref", "oneOf"}
	if depth > 0 {
		kinds = append(kinds, "object", "object", "array", "map")
	}
	switch rapid.SampledFrom(kinds).Draw(t, label+"kind") {
	case "string", "integer", "number", "boolean":
		add("type", rapid.SampledFrom([]string{"string", "integer", "number", "boolean"}).Draw(t, label+"type"))
	case "enum":
		add("enum", rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a", "b", "in-progress", "in_progress", "x y", "日本", ""}), 1, 4, rapid.ID).Draw(t, label+"enum"))
	case "nullable":
		add("type", []string{"null", "string"})
	case "any":
	case "ref":
		add("$ref", rapid.SampledFrom([]string{"#/$defs/Node", "#/$defs/Leaf", "#/$defs/Missing", "#"}).Draw(t, label+"ref"))
	case "oneOf":
		add("oneOf", []*schemaNode{{keys: []string{"type"}, vals: []any{"string"}}, {keys: []string{"type"}, vals: []any{"null"}}})
	case "object":
		add("type", "object")
		props := &schemaNode{}
		names := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"id", "ID", "user_id", "userId", "a-b", "a_b", "type", "2x", "日本", "error", "result", "x"}), 0, 5, rapid.ID).Draw(t, label+"props")
		for i, p := range names {
			props.keys = append(props.keys, p)
			props.vals = append(props.vals, genSchema(t, depth-1, label+"."+strconv.Itoa(i)))
		}
		add("properties", props)
		if len(names) > 0 {
			add("required", names[:rapid.IntRange(0, len(names)).Draw(t, label+"req")])
		}
	case "array":
		add("type", "array")
		add("items", genSchema(t, depth-1, label+"[]"))
	case "map":
		add("type", "object")
		add("additionalProperties", genSchema(t, depth-1, label+"{}"))
	}
	if rapid.Bool().Draw(t, label+"desc") {
		add("description", "about "+label+"\n//go:noinline")
	}
	return n
}

// write writes n as JSON with its keys in the order perm draws.
func (n *schemaNode) write(t *rapid.T, b *bytes.Buffer, shuffle bool) {
	order := make([]int, len(n.keys))
	for i := range order {
		order[i] = i
	}
	if shuffle {
		order = rapid.Permutation(order).Draw(t, "perm")
	}
	b.WriteByte('{')
	for i, j := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(n.keys[j])
		b.Write(k)
		b.WriteByte(':')
		switch v := n.vals[j].(type) {
		case *schemaNode:
			v.write(t, b, shuffle)
		case []*schemaNode:
			b.WriteByte('[')
			for i, e := range v {
				if i > 0 {
					b.WriteByte(',')
				}
				e.write(t, b, shuffle)
			}
			b.WriteByte(']')
		default:
			e, _ := json.Marshal(v)
			b.Write(e)
		}
	}
	b.WriteByte('}')
}

// TestGenerateIsDeterministic: the same tools, in another order, with
// every schema's keys (properties among them) in another order, give
// the same bytes and capabilities; and every package type-checks.
func TestGenerateIsDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type toolSpec struct {
			name    string
			in, out *schemaNode
			hasOut  bool
		}
		names := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"get-user", "get_user", "GetUser", "list", "error", "result", "foo", "foo_input", "日本", "2fa", "a.b"}), 1, 6, rapid.ID).Draw(t, "tools")
		var specs []toolSpec
		for i, name := range names {
			defs := &schemaNode{keys: []string{"Node", "Leaf"}, vals: []any{genSchema(t, 2, "node"+strconv.Itoa(i)), genSchema(t, 0, "leaf"+strconv.Itoa(i))}}
			in := genSchema(t, 3, "in"+strconv.Itoa(i))
			in.keys, in.vals = append(in.keys, "$defs"), append(in.vals, defs)
			s := toolSpec{name: name, in: in}
			if s.hasOut = rapid.Bool().Draw(t, "hasOut"); s.hasOut {
				s.out = genSchema(t, 2, "out"+strconv.Itoa(i))
			}
			specs = append(specs, s)
		}
		build := func(shuffle bool) []Tool {
			order := make([]int, len(specs))
			for i := range order {
				order[i] = i
			}
			if shuffle {
				order = rapid.Permutation(order).Draw(t, "tool order")
			}
			var tools []Tool
			for _, i := range order {
				s := specs[i]
				var in, out bytes.Buffer
				s.in.write(t, &in, shuffle)
				tl := Tool{Name: s.name, Description: "tool " + s.name, InputSchema: in.Bytes()}
				if s.hasOut {
					s.out.write(t, &out, shuffle)
					tl.OutputSchema = out.Bytes()
				}
				tools = append(tools, tl)
			}
			return tools
		}
		a, errA := Generate("srv", build(false))
		b, errB := Generate("srv", build(true))
		if errA != nil || errB != nil {
			t.Fatalf("Generate: %v, %v", errA, errB)
		}
		if !bytes.Equal(a.Source, b.Source) {
			t.Fatalf("shuffled tools gave other bytes:\n%s\n----\n%s", a.Source, b.Source)
		}
		if !bytes.Equal(a.API, b.API) {
			t.Fatalf("shuffled tools gave another API page:\n%s\n----\n%s", a.API, b.API)
		}
		if !slices.Equal(a.Capabilities, b.Capabilities) || len(a.Refused) != len(b.Refused) {
			t.Fatalf("shuffled tools gave other capabilities: %v / %v", a.Capabilities, b.Capabilities)
		}
		if err := vetGenerated(a.Source); err != nil {
			t.Fatalf("vetting: %v\n%s", err, a.Source)
		}
		if err := typeCheck(a.Name, a.Source); err != nil {
			t.Fatalf("type check: %v\n%s", err, a.Source)
		}
	})
}
