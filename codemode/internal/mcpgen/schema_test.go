package mcpgen

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
)

// fieldOf generates a tool whose input has the one property x of
// schema (required or not), and returns x's Go type, its tag, its doc
// and the whole source.
func fieldOf(t *testing.T, schema string, required bool) (typ, tag, doc string, src []byte) {
	t.Helper()
	req := ""
	if required {
		req = `,"required":["x"]`
	}
	p := mustGenerate(t, "srv", []Tool{{Name: "t", InputSchema: []byte(`{"type":"object","properties":{"x":` + schema + `}` + req + `}`)}})
	return structField(t, p.Source, "TInput", "X")
}

// structField finds field of the struct type typeName in src.
func structField(t *testing.T, src []byte, typeName, field string) (typ, tag, doc string, _ []byte) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var found *ast.Field
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != typeName {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			t.Fatalf("%s is not a struct:\n%s", typeName, src)
		}
		for _, fl := range st.Fields.List {
			if fl.Names[0].Name == field {
				found = fl
			}
		}
		return false
	})
	if found == nil {
		t.Fatalf("no field %s.%s in\n%s", typeName, field, src)
	}
	var b bytes.Buffer
	printer.Fprint(&b, fset, found.Type)
	if found.Tag != nil {
		tag = found.Tag.Value
	}
	return b.String(), tag, found.Doc.Text(), src
}

func TestTypeMapping(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		schema   string
		required bool
		typ, tag string
		doc      string // a substring of the field's doc
		decl     string // a substring of the source
	}{
		{schema: `{"type":"string","description":"The name."}`, required: true, typ: "string", tag: "`json:\"x\"`", doc: "The name."},
		{schema: `{"type":"string"}`, typ: "*string", tag: "`json:\"x,omitempty\"`"},
		{schema: `{"type":"integer"}`, typ: "*int64"},
		{schema: `{"type":"number"}`, required: true, typ: "float64"},
		{schema: `{"type":"boolean"}`, typ: "*bool"},
		{schema: `{"type":"array","items":{"type":"integer"}}`, typ: "[]int64", tag: "`json:\"x,omitempty\"`"},
		{schema: `{"type":"array","items":{"type":"integer"}}`, required: true, typ: "[]int64", tag: "`json:\"x\"`"},
		{schema: `{"type":"array"}`, typ: "[]any"},
		{schema: `{"type":"array","items":[{"type":"string"},{"type":"integer"}]}`, typ: "[]any"},
		{schema: `{"items":{"type":"string"}}`, typ: "[]string"},
		{schema: `{"type":"object"}`, typ: "map[string]any"},
		{schema: `{"type":"object","additionalProperties":{"type":"integer"}}`, typ: "map[string]int64"},
		{schema: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, typ: "*TInputX", decl: "type TInputX struct {\n\tA string `json:\"a\"`\n}"},
		{schema: `{"type":"object","properties":{"a":{"type":"string"}}}`, required: true, typ: "TInputX"},
		{schema: `{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}}}}`, typ: "[]TInputXItem"},
		{schema: `{"type":["string","null"]}`, required: true, typ: "*string", tag: "`json:\"x\"`"},
		{schema: `{"type":"string","nullable":true}`, required: true, typ: "*string"},
		{schema: `{"type":["string","integer"]}`, typ: "any", doc: "Untyped: the value is any of the JSON types integer, string."},
		{schema: `{"enum":["open","closed","in-progress"]}`, typ: "*TInputX", decl: "TInputXInProgress TInputX = \"in-progress\""},
		{schema: `{"type":"string","enum":["b","a"]}`, required: true, typ: "TInputX", decl: "TInputXA TInputX = \"a\"\n\tTInputXB TInputX = \"b\""},
		{schema: `{"enum":["a-b","a_b"]}`, typ: "*string", doc: `One of "a-b", "a_b".`},
		{schema: `{"enum":["日本"]}`, typ: "*string", doc: `One of "日本".`},
		{schema: `{"type":"integer","enum":[2,1]}`, typ: "*int64", doc: "One of 1, 2."},
		{schema: `{"enum":[1,"a",null]}`, typ: "any", doc: `One of "a", 1, null.`},
		{schema: `{"const":"fixed"}`, required: true, typ: "TInputX", decl: "TInputXFixed TInputX = \"fixed\""},
		{schema: `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, typ: "any", doc: "Untyped: the value is oneOf 2 schemas."},
		{schema: `{"anyOf":[{"type":"integer"},{"type":"null"}]}`, required: true, typ: "*int64", tag: "`json:\"x\"`"},
		{schema: `{"anyOf":[{"type":"string"}]}`, required: true, typ: "string"},
		{schema: `{"allOf":[{"type":"string"}]}`, typ: "*string"},
		{schema: `{"allOf":[{"type":"string"},{"minLength":1}]}`, typ: "any", doc: "allOf"},
		{schema: `{"$ref":"#/$defs/Missing"}`, typ: "any", doc: `refers to "#/$defs/Missing"`},
		{schema: `{"$ref":"https://example.com/s.json"}`, typ: "any", doc: "not one of its definitions"},
		{schema: `true`, typ: "any"},
		{schema: `false`, typ: "any", doc: "admits no value"},
		{schema: `{}`, typ: "any"},
		{schema: `{"type":"null"}`, typ: "any", doc: "Always null."},
		{schema: `{"type":"date"}`, typ: "any", doc: `type "date" is not a JSON type`},
		{schema: `{"type":"object","properties":{"a,b":{},"c":{}}}`, typ: "map[string]any", doc: "cannot name a struct field"},
		{schema: `{"type":"object","properties":{"-":{"type":"string"}},"required":["-"]}`, typ: "*TInputX", decl: "Field string `json:\"-,\"`"},
		{schema: `{"type":"string","description":"Evil.\n//go:linkname a b\n//line x.go:1\n*/"}`, typ: "*string", doc: "Evil."},
	} {
		typ, tag, doc, src := fieldOf(t, c.schema, c.required)
		if typ != c.typ || c.tag != "" && tag != c.tag || !strings.Contains(doc, c.doc) || !strings.Contains(string(src), c.decl) {
			t.Errorf("%s (required %v): %s %s // %q; want %s %s // %q and %q in\n%s", c.schema, c.required, typ, tag, doc, c.typ, c.tag, c.doc, c.decl, src)
		}
	}
}

// TestRecursion: a definition that refers to itself, two that refer to
// each other, one that refers to the root, and a chain of references
// with no object between all type-check; the chain is untyped.
func TestRecursion(t *testing.T) {
	t.Parallel()
	p := mustGenerate(t, "srv", []Tool{
		{Name: "list", InputSchema: []byte(`{"type":"object","properties":{"head":{"$ref":"#/$defs/Node"}},"required":["head"],
			"$defs":{"Node":{"type":"object","properties":{"value":{"type":"integer"},"next":{"$ref":"#/$defs/Node"},"kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["value","next"]}}}`)},
		{Name: "mutual", InputSchema: []byte(`{"type":"object","properties":{"a":{"$ref":"#/definitions/A"}},"required":["a"],
			"definitions":{"A":{"type":"object","properties":{"b":{"$ref":"#/definitions/B"}},"required":["b"]},"B":{"type":"object","properties":{"a":{"$ref":"#/definitions/A"}},"required":["a"]}}}`)},
		{Name: "tree", InputSchema: []byte(`{"type":"object","properties":{"child":{"$ref":"#"},"name":{"type":"string"}},"required":["child"]}`)},
		{Name: "loop", InputSchema: []byte(`{"type":"object","properties":{"x":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}}}`)},
		{Name: "alias", InputSchema: []byte(`{"$ref":"#/$defs/Args","$defs":{"Args":{"type":"object","properties":{"q":{"type":"string"}}}}}`)},
	})
	src := string(p.Source)
	for _, s := range []string{
		"Next  *ListNode  `json:\"next\"`", "Kids  []ListNode `json:\"kids,omitempty\"`", "Head ListNode `json:\"head\"`",
		"B MutualB `json:\"b\"`", "A *MutualA `json:\"a\"`",
		"Child *TreeInput `json:\"child\"`",
		"X any `json:\"x,omitempty\"`",
		"type AliasInput = AliasArgs",
	} {
		if !strings.Contains(src, s) {
			t.Errorf("the source lacks %q:\n%s", s, src)
		}
	}
}

// TestOutputTypes: a tool with an output schema returns its struct; one
// without returns Result; an empty input is the empty struct.
func TestOutputTypes(t *testing.T) {
	t.Parallel()
	p := mustGenerate(t, "srv", []Tool{
		{Name: "typed", InputSchema: []byte(`{"type":"object","properties":{}}`), OutputSchema: []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		{Name: "free", InputSchema: []byte(`{"type":"object","additionalProperties":{"type":"string"}}`), OutputSchema: []byte(`{"type":"object"}`)},
		{Name: "plain"},
		{Name: "null", OutputSchema: []byte(`{"type":["object","null"],"properties":{"n":{"type":"integer"}}}`)},
	})
	src := string(p.Source)
	for _, s := range []string{
		"func Typed(ctx context.Context, in TypedInput) (TypedOutput, error)", "type TypedInput struct{}", "N int64 `json:\"n\"`",
		"func Free(ctx context.Context, in FreeInput) (FreeOutput, error)", "type FreeInput map[string]string", "type FreeOutput struct{}",
		"func Plain(ctx context.Context, in PlainInput) (Result, error)", "type Result struct",
		"func Null(ctx context.Context, in NullInput) (NullOutput, error)", "type NullOutput struct {",
	} {
		if !strings.Contains(src, s) {
			t.Errorf("the source lacks %q:\n%s", s, src)
		}
	}
	p = mustGenerate(t, "srv", []Tool{{Name: "typed", OutputSchema: []byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}})
	if strings.Contains(string(p.Source), "type Result") {
		t.Errorf("a package whose every tool declares its output declares Result:\n%s", p.Source)
	}
}

// TestRefusals: each bound and malformation is refused with its code,
// errors.As-findable; a refused tool leaves the others offered.
func TestRefusals(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"type":"array","items":`, MaxSchemaDepth) + `{}` + strings.Repeat(`}`, MaxSchemaDepth)
	var many strings.Builder
	many.WriteString(`{"type":"object","properties":{`)
	for i := range MaxTypesPerTool + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"p` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `_` + strconv.Itoa(i) + `":{"type":"object","properties":{"a":{"type":"string"}}}`)
	}
	many.WriteString(`}}`)
	huge := `{"type":"object","description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`
	for _, c := range []struct {
		tool Tool
		code tool.Code
	}{
		{Tool{Name: "t", InputSchema: []byte(`{"type":`)}, CodeSchemaInvalid},
		{Tool{Name: "t", InputSchema: []byte(`[1]`)}, CodeSchemaInvalid},
		{Tool{Name: "t", InputSchema: []byte(`{"type":"string"}`)}, CodeSchemaInvalid},
		{Tool{Name: "t", OutputSchema: []byte(`{"type":["object","array"]}`)}, CodeSchemaInvalid},
		{Tool{Name: "t", InputSchema: []byte(`{"type":"object","properties":{"x":` + deep + `}}`)}, CodeSchemaTooDeep},
		{Tool{Name: "t", InputSchema: []byte(huge)}, CodeSchemaTooLarge},
		{Tool{Name: "t", InputSchema: []byte(many.String())}, CodeSchemaTooLarge},
		{Tool{Name: ""}, CodeToolNameInvalid},
		{Tool{Name: strings.Repeat("n", MaxToolNameBytes+1)}, CodeToolNameInvalid},
		{Tool{Name: "bad\xff"}, CodeToolNameInvalid},
	} {
		p := mustGenerate(t, "srv", []Tool{c.tool, {Name: "ok"}})
		if len(p.Refused) != 1 || p.Refused[0].Code != c.code || p.Refused[0].Tool != c.tool.Name {
			t.Errorf("%.60q: refused %v, want one %s", c.tool.InputSchema, p.Refused, c.code)
		}
		if len(p.Capabilities) != 1 || p.Capabilities[0].Tool != "ok" {
			t.Errorf("%.60q: capabilities %v, want the tool ok", c.tool.InputSchema, p.Capabilities)
		}
	}
	p := mustGenerate(t, "srv", []Tool{{Name: "dup"}, {Name: "ok"}, {Name: "dup", Description: "the other"}})
	if len(p.Refused) != 1 || p.Refused[0].Code != CodeToolNameDuplicate || len(p.Capabilities) != 1 {
		t.Errorf("duplicates: refused %v, capabilities %v", p.Refused, p.Capabilities)
	}
	tools := make([]Tool, MaxTools+1)
	var wide strings.Builder // 200 properties, each with a description of MaxDocBytes
	wide.WriteString(`{"type":"object","properties":{`)
	for i := range 200 {
		if i > 0 {
			wide.WriteString(",")
		}
		wide.WriteString(`"p` + strconv.Itoa(i) + `":{"type":"string","description":"` + strings.Repeat("d", MaxDocBytes) + `"}`)
	}
	wide.WriteString(`}}`)
	var big []Tool
	for i := range MaxSourceBytes / (200 * MaxDocBytes) {
		big = append(big, Tool{Name: "t" + strconv.Itoa(i), InputSchema: []byte(wide.String())})
	}
	for _, c := range []struct {
		server string
		tools  []Tool
		code   tool.Code
	}{
		{"srv", tools, CodeTooManyTools},
		{"srv", big, CodeSourceTooLarge},
		{"", nil, CodeServerNameInvalid},
		{"日本", nil, CodeServerNameInvalid},
	} {
		_, err := Generate(c.server, c.tools)
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code || tool.CodeOf(err) != c.code {
			t.Errorf("Generate(%q, %d tools) = %v, want %s", c.server, len(c.tools), err, c.code)
		}
	}
}
