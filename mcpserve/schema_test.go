package mcpserve

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

// builtins are the built-in tools this package serves.
func builtins() []tool.Tool {
	return append(tool.FileTools(), job.BashTool(nil), tool.GrepTool())
}

// unknownKeywords lists keywords of s and its subschemas that
// jsonschema-go does not know (it keeps them in Extra).
func unknownKeywords(s *jsonschema.Schema) []string {
	out := slices.Sorted(maps.Keys(s.Extra))
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i).Interface().(type) {
		case *jsonschema.Schema:
			if f != nil {
				out = append(out, unknownKeywords(f)...)
			}
		case []*jsonschema.Schema:
			for _, c := range f {
				out = append(out, unknownKeywords(c)...)
			}
		case map[string]*jsonschema.Schema:
			for _, c := range f {
				out = append(out, unknownKeywords(c)...)
			}
		}
	}
	return out
}

func TestBuiltinSchemasAreValidJSONSchema(t *testing.T) {
	for _, bt := range builtins() {
		t.Run(bt.Name, func(t *testing.T) {
			if err := CheckTool(bt); err != nil {
				t.Fatal(err)
			}
			var s jsonschema.Schema
			if err := json.Unmarshal(bt.Schema, &s); err != nil {
				t.Fatal(err)
			}
			if u := unknownKeywords(&s); len(u) > 0 {
				t.Errorf("keywords jsonschema-go does not know: %v", u)
			}
			if s.AdditionalProperties == nil || s.AdditionalProperties.Not == nil {
				t.Errorf("root additionalProperties = %v, want false (unknown properties are refused)", s.AdditionalProperties)
			}
			rs, err := s.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			// The schema refuses what the tool's decoder refuses.
			if err := rs.Validate(map[string]any{"no_such_property_xyz": 1}); err == nil {
				t.Error("the schema accepts an unknown property")
			}
			for name, p := range s.Properties {
				if p.Type == "" && len(p.Types) == 0 && p.Ref == "" && len(p.AnyOf) == 0 && len(p.OneOf) == 0 && len(p.Enum) == 0 {
					t.Errorf("property %s has no type", name)
				}
			}
		})
	}
}

func TestCheckTypesRefusesNestedUnknownType(t *testing.T) {
	cases := []struct {
		name, schema string
		ok           bool
	}{
		{"items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"thing"}}}}`, false},
		{"anyOf", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"nul"}]}}}`, false},
		{"defs", `{"type":"object","$defs":{"d":{"type":"obj"}}}`, false},
		{"types_list", `{"type":"object","properties":{"a":{"type":["string","null"]}}}`, true},
		{"types_list_bad", `{"type":"object","properties":{"a":{"type":["string","nothing"]}}}`, false},
		{"all_types", `{"type":"object","properties":{"a":{"type":["array","boolean","integer","null","number","object","string"]}}}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := resolveSchema(json.RawMessage(c.schema))
			if (err == nil) != c.ok {
				t.Errorf("resolveSchema = %v, want ok=%v", err, c.ok)
			}
		})
	}
}
