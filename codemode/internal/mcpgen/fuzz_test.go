package mcpgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzGenerate feeds arbitrary schemas, tool names and server names:
// Generate never panics, and either refuses the server with a coded
// *Error, or returns a package that passes the vetting and the type
// check, every tool it left out refused with a code, and whose API page
// is UTF-8, no larger than its source and shows every function.
func FuzzGenerate(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		`{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"required":["n"]}}}`,
		`{"$ref":"#"}`,
		`{"type":"object","properties":{"x":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}}}`,
		`{"type":"object","properties":{"e":{"enum":["a","b","a-b","a_b"]},"o":{"oneOf":[{"type":"string"},{"type":"null"}]}}}`,
		`{"type":"object","properties":{"-":{"type":"string"},"a,b":{}},"description":"//go:linkname x y\n*/"}`,
		`{"type":["object","null"]}`,
		`{"type":"object","additionalProperties":{"type":"array","items":{"type":"integer"}}}`,
		`{"type":"string"}`,
		`true`,
		`{"type":`,
	} {
		f.Add("tool", "srv", []byte(s), []byte(s))
	}
	f.Add("2fa/..\u202e", "main", []byte(`{}`), []byte(nil))
	f.Fuzz(func(t *testing.T, name, server string, in, out []byte) {
		tools := []Tool{{Name: name, Description: name, InputSchema: in, OutputSchema: out}}
		if json.Valid(in) {
			tools = append(tools, Tool{Name: name + "_x", InputSchema: []byte(`{"type":"object","properties":{"x":` + string(in) + `,"y":{"type":"array","items":` + string(in) + `}},"required":["x"]}`)})
		}
		p, err := Generate(server, tools)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" {
				t.Fatalf("Generate refused without a code: %v", err)
			}
			return
		}
		for _, r := range p.Refused {
			if r.Code == "" {
				t.Fatalf("a tool refused without a code: %v", r)
			}
		}
		if len(p.Source) > MaxSourceBytes {
			t.Fatalf("the source is %d bytes", len(p.Source))
		}
		if len(p.API) > len(p.Source) || !utf8.Valid(p.API) {
			t.Fatalf("the API page is %d bytes (the source %d), or not UTF-8:\n%s", len(p.API), len(p.Source), p.API)
		}
		for _, c := range p.Capabilities {
			if !bytes.Contains(p.API, []byte("func "+c.Func+"(ctx context.Context, in ")) {
				t.Fatalf("the API page does not show %s:\n%s", c.Func, p.API)
			}
		}
		if err := vetGenerated(p.Source); err != nil {
			t.Fatalf("vetting: %v\n%s", err, p.Source)
		}
		if err := typeCheck(p.Name, p.Source); err != nil {
			t.Fatalf("type check: %v\n%s", err, p.Source)
		}
	})
}
