package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseResultSchema(t *testing.T) {
	props := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`"f%d":{"type":"string"}`, i)
		}
		return `{"type":"object","properties":{` + strings.Join(parts, ",") + `}}`
	}
	ok := []struct {
		name, in string
		want     ResultSchema
	}{
		{"all required by default", `{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string","description":"d"}}}`,
			ResultSchema{Fields: []ResultField{{Name: "a", Type: TypeString, Description: "d", Required: true}, {Name: "b", Type: TypeInteger, Required: true}}}},
		{"explicit required", `{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"number"}},"required":["b"]}`,
			ResultSchema{Fields: []ResultField{{Name: "a", Type: TypeBoolean}, {Name: "b", Type: TypeNumber, Required: true}}}},
		{"array items", `{"type":"object","properties":{"files":{"type":"array","items":{"type":"string"}}}}`,
			ResultSchema{Fields: []ResultField{{Name: "files", Type: TypeArray, Items: TypeString, Required: true}}}},
		{"stringified", `"{\"type\":\"object\",\"properties\":{\"o\":{\"type\":\"object\"}}}"`,
			ResultSchema{Fields: []ResultField{{Name: "o", Type: TypeObject, Required: true}}}},
		{"additionalProperties true", `{"type":"object","additionalProperties":true,"properties":{"o":{"type":"object"}}}`,
			ResultSchema{Fields: []ResultField{{Name: "o", Type: TypeObject, Required: true}}}},
	}
	for _, tt := range ok {
		got, err := ParseResultSchema(json.RawMessage(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, *got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tt.name, diff)
		}
		again, err := ParseResultSchema(got.JSON())
		if err != nil || !cmp.Equal(got, again) {
			t.Errorf("%s: JSON() does not parse back: %v %s", tt.name, err, cmp.Diff(got, again))
		}
	}
	if _, err := ParseResultSchema(json.RawMessage(props(maxResultFields))); err != nil {
		t.Errorf("%d fields refused: %v", maxResultFields, err)
	}
	bad := map[string]string{
		"one field past the cap": props(maxResultFields + 1),
		"not json":               `{`,
		"array":                  `[]`,
		"null":                   `null`,
		"wrong type":             `{"type":"array","properties":{"a":{"type":"string"}}}`,
		"no properties":          `{"type":"object"}`,
		"empty properties":       `{"type":"object","properties":{}}`,
		"unknown keyword":        `{"type":"object","properties":{"a":{"type":"string"}},"minProperties":1}`,
		"field keyword":          `{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}`,
		"type list":              `{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
		"unknown field type":     `{"type":"object","properties":{"a":{"type":"date"}}}`,
		"no field type":          `{"type":"object","properties":{"a":{}}}`,
		"closed object":          `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`,
		"required unknown":       `{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`,
		"required twice":         `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"]}`,
		"required not list":      `{"type":"object","properties":{"a":{"type":"string"}},"required":"a"}`,
		"bad name":               `{"type":"object","properties":{"a-b":{"type":"string"}}}`,
		"items on string":        `{"type":"object","properties":{"a":{"type":"string","items":{"type":"string"}}}}`,
		"nested array":           `{"type":"object","properties":{"a":{"type":"array","items":{"type":"array"}}}}`,
		"description not text":   `{"type":"object","description":1,"properties":{"a":{"type":"string"}}}`,
		"too large":              `{"type":"object","description":"` + strings.Repeat("x", maxResultSchemaBytes) + `","properties":{"a":{"type":"string"}}}`,
	}
	for name, in := range bad {
		if _, err := ParseResultSchema(json.RawMessage(in)); codeOf(err) != CodeMalformedSchema {
			t.Errorf("%s: err = %v, want %s", name, err, CodeMalformedSchema)
		}
	}
}

func TestValidateResult(t *testing.T) {
	s, err := ParseResultSchema(json.RawMessage(`{"type":"object","properties":{
		"files":{"type":"array","items":{"type":"string"}},"count":{"type":"integer"},"note":{"type":"string"}},
		"required":["files","count"]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		value    string
		problems []string
	}{
		{`{"files":["a"],"count":1}`, nil},
		{`{"files":[],"count":2.0,"surplus":true}`, nil},
		{`{"files":["a"],"count":1,"note":"n"}`, nil},
		{`{"files":["a"]}`, []string{"count is missing (want integer)"}},
		{`{"files":"a","count":1.5}`, []string{"count is a number, want integer", "files is a string, want array"}},
		{`{"files":["a",2],"count":1}`, []string{"files[1] is an integer, want string"}},
		{`{"files":[],"count":1,"note":null}`, []string{"note is null, want string"}},
		{`[1]`, []string{"the value is an array, not an object"}},
		{`nope`, []string{"the value is not JSON"}},
	}
	for _, tt := range tests {
		m := s.Validate(json.RawMessage(tt.value))
		var got []string
		if m != nil {
			got = m.Problems
			if m.Schema != s.String() || m.Arrived != tt.value {
				t.Errorf("%s: mismatch does not name both sides: %+v", tt.value, m)
			}
			if d := m.Describe(); !strings.Contains(d, s.String()) || !strings.Contains(d, tt.value) {
				t.Errorf("Describe() = %q", d)
			}
		}
		if diff := cmp.Diff(tt.problems, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tt.value, diff)
		}
	}
}

func TestJudge(t *testing.T) {
	s, _ := ParseResultSchema(json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`))
	cases := []struct {
		schema *ResultSchema
		note   string
		want   ResultKind
	}{
		{nil, `{"ok":true}`, NoResultAsked},
		{s, "", ResultMissing},
		{s, `{"ok":true}`, ResultValid},
		{s, `{"ok":"yes"}`, ResultMismatched},
	}
	for _, c := range cases {
		var note json.RawMessage
		if c.note != "" {
			note = json.RawMessage(c.note)
		}
		if got := Judge(c.schema, note); got.Kind != c.want {
			t.Errorf("Judge(%v, %s) = %s, want %s", c.schema, c.note, got.Kind, c.want)
		}
	}
}

func TestMismatchQuotesAtMostMaxArrivedBytes(t *testing.T) {
	s, _ := ParseResultSchema(json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`))
	big := `{"pad":"` + strings.Repeat("x", maxArrivedBytes) + `"}`
	m := s.Validate(json.RawMessage(big))
	if m == nil || len(m.Arrived) > maxArrivedBytes+len("…(truncated)") {
		t.Fatalf("arrived not bounded: %d bytes", len(m.Arrived))
	}
}

func FuzzParseResultSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"]}`,
		`"{\"type\":\"object\"}"`, `{}`, `[]`, `"x"`, `{"type":"object","properties":{"a":{"type":"string"}},"required":[]}`,
	} {
		f.Add([]byte(s), []byte(`{"a":"x"}`))
	}
	f.Fuzz(func(t *testing.T, schema, value []byte) {
		s, err := ParseResultSchema(schema)
		if err != nil {
			if codeOf(err) != CodeMalformedSchema {
				t.Fatalf("error %v has code %s", err, codeOf(err))
			}
			return
		}
		if len(s.Fields) == 0 || len(s.Fields) > maxResultFields {
			t.Fatalf("accepted %d fields", len(s.Fields))
		}
		again, err := ParseResultSchema(s.JSON())
		if err != nil || !cmp.Equal(s, again) {
			t.Fatalf("canonical form does not parse back: %v", err)
		}
		_ = Judge(s, value) // must not panic
	})
}
