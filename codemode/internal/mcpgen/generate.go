package mcpgen

import (
	"bytes"
	"encoding/json"
	"go/format"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentloom/loom/tool"
)

// Tool is one tool as an MCP server lists it (tools/list); its JSON
// names are MCP's, so a tools/list answer decodes into it.
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the tool's arguments, an object
	// schema; nil or empty takes no arguments.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema is the JSON Schema of its structured content, an
	// object schema; nil or empty declares none.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are the server's hints (readOnlyHint, destructiveHint,
	// idempotentHint, openWorldHint): shown in the doc, never trusted.
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// Package is the cap package generated for one server.
type Package struct {
	// Name is the Go package name (PackageName), Path its import path
	// ("cap/mcp/" and Name).
	Name, Path string
	// Source is the package's one file, gofmt-formatted, at most
	// MaxSourceBytes.
	Source []byte
	// Capabilities are the capabilities its functions call, one per tool
	// offered, sorted by name.
	Capabilities []Capability
	// Refused are the tools left out, each with why, sorted by tool name.
	Refused []*Error
	// API is the package's API page, what a model reads before calling
	// it: each function's signature, its tool's own words and the types
	// it names, with their fields' JSON names, whether each is optional
	// and its doc on one line; no larger than Source, and as
	// deterministic.
	API []byte
}

// Capability is one capability a generated package calls: the tool it
// reaches.
type Capability struct {
	Name string // "mcp.<package>.<function in snake case>"
	Tool string // the tool's name as the server gave it
	Func string // the Go function
}

// gen is one package's generation.
type gen struct {
	pkg   string
	names *names          // the package scope
	caps  map[string]bool // capability names taken
	tools []*toolGen
}

// toolGen is one tool's part of the package.
type toolGen struct {
	g       *gen
	tool    *Tool
	fn, cap string
	in, out *decl
	decls   []*decl
	types   int // named types made
	fields  int // fields and constants made
	err     *Error
}

func (t *toolGen) fail(code tool.Code, msg string) {
	if t.err == nil {
		t.err = &Error{Code: code, Tool: t.tool.Name, Message: msg}
	}
}

// newDecl declares a named type called name (or name with a suffix).
func (t *toolGen) newDecl(name string, kind int) *decl {
	t.types++
	if t.types > MaxTypesPerTool {
		t.fail(CodeSchemaTooLarge, "the schemas yield more than "+strconv.Itoa(MaxTypesPerTool)+" named types")
	}
	d := &decl{name: t.g.names.claim(name, nil), kind: kind}
	t.decls = append(t.decls, d)
	return d
}

// count counts n fields or constants made.
func (t *toolGen) count(n int) {
	t.fields += n
	if t.fields > MaxFieldsPerTool {
		t.fail(CodeSchemaTooLarge, "the schemas yield more than "+strconv.Itoa(MaxFieldsPerTool)+" fields and constants")
	}
}

// reservedNames are the package-level names every generated package
// declares or imports.
var reservedNames = []string{"Error", "Result", "context", "json", "client", "call", "decode"}

// Generate generates the package that offers server's tools. Tools are
// taken in the order of their names, whatever order they come in, so
// the result depends on the set of tools alone. A tool refused (a bad
// name, a name two share, a schema refused) is left out and listed in
// Refused; the error is for the whole server: CodeServerNameInvalid,
// CodeTooManyTools or CodeSourceTooLarge.
func Generate(server string, tools []Tool) (*Package, error) {
	pkg, err := PackageName(server)
	if err != nil {
		return nil, err
	}
	if len(tools) > MaxTools {
		return nil, &Error{Code: CodeTooManyTools, Message: "the server lists " + strconv.Itoa(len(tools)) + " tools, over the bound of " + strconv.Itoa(MaxTools)}
	}
	sorted := make([]*Tool, len(tools))
	for i := range tools {
		sorted[i] = &tools[i]
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	g := &gen{pkg: pkg, names: newNames(reservedNames...), caps: map[string]bool{}}
	p := &Package{Name: pkg, Path: "cap/mcp/" + pkg}
	var offered []*toolGen
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].Name == sorted[i].Name {
			j++
		}
		t := sorted[i]
		switch {
		case j-i > 1:
			p.Refused = append(p.Refused, &Error{Code: CodeToolNameDuplicate, Tool: t.Name, Message: strconv.Itoa(j-i) + " tools have this name; none is offered"})
		case t.Name == "" || len(t.Name) > MaxToolNameBytes || !utf8.ValidString(t.Name):
			p.Refused = append(p.Refused, &Error{Code: CodeToolNameInvalid, Tool: t.Name, Message: "a tool's name is 1 to " + strconv.Itoa(MaxToolNameBytes) + " bytes of UTF-8"})
		default:
			offered = append(offered, &toolGen{g: g, tool: t})
		}
		i = j
	}
	// Functions first, so a tool's function keeps its plain name before
	// another tool's types claim it.
	for _, t := range offered {
		t.fn = g.names.claim(exportedIdent(t.tool.Name, "Tool"), func(id string) bool { return !g.caps[snake(id)] })
		t.cap = "mcp." + pkg + "." + snake(t.fn)
		g.caps[snake(t.fn)] = true
	}
	for _, t := range offered {
		mark := g.names.mark()
		t.schemas()
		if t.err != nil {
			g.names.rollback(mark)
			p.Refused = append(p.Refused, t.err)
			continue
		}
		g.tools = append(g.tools, t)
		p.Capabilities = append(p.Capabilities, Capability{Name: t.cap, Tool: t.tool.Name, Func: t.fn})
	}
	sort.Slice(p.Capabilities, func(i, j int) bool { return p.Capabilities[i].Name < p.Capabilities[j].Name })
	sort.SliceStable(p.Refused, func(i, j int) bool { return p.Refused[i].Tool < p.Refused[j].Tool })
	src, err := g.emit(server)
	if err != nil {
		return nil, err
	}
	p.Source = src
	p.API = g.page(server)
	return p, nil
}

// schemas maps the tool's input and output schemas.
func (t *toolGen) schemas() {
	in := t.tool.InputSchema
	if len(bytes.TrimSpace(in)) == 0 || string(bytes.TrimSpace(in)) == "null" {
		in = json.RawMessage(`{"type":"object"}`)
	}
	m, err := decodeSchema(in, "input")
	if err != nil {
		err.Tool = t.tool.Name
		t.err = err
		return
	}
	d := &schemaDoc{t: t, root: m, prefix: t.fn, refs: map[string]*goType{}, busy: map[string]bool{}}
	t.in = d.rootType(t.fn+"Input", t.fn+"Input is the input of "+t.fn+".\n\n"+description(m))
	out := bytes.TrimSpace(t.tool.OutputSchema)
	if t.err != nil || len(out) == 0 || string(out) == "null" {
		return
	}
	m, err = decodeSchema(out, "output")
	if err != nil {
		err.Tool = t.tool.Name
		t.err = err
		return
	}
	d = &schemaDoc{t: t, root: m, prefix: t.fn, refs: map[string]*goType{}, busy: map[string]bool{}}
	t.out = d.rootType(t.fn+"Output", t.fn+"Output is the structured content of "+t.fn+"'s answer.\n\n"+description(m))
}

// emit writes the package's source.
func (g *gen) emit(server string) ([]byte, error) {
	var b bytes.Buffer
	w := func(s ...string) {
		for _, p := range s {
			b.WriteString(p)
		}
	}
	comment := func(lines []string) {
		for _, l := range lines {
			if l == "" {
				w("//\n")
				continue
			}
			w("// ", l, "\n")
		}
	}
	quoted := oneLine(strconv.Quote(server), MaxDocBytes)
	w("// Code generated by mcpgen from the tools of the MCP server ", quoted, ". DO NOT EDIT.\n\n")
	comment([]string{
		"Package " + g.pkg + " calls the tools of the MCP server " + quoted + ", one",
		"function per tool, each a round trip to the host, which calls the server",
		"and bounds the call as every capability call is bounded.",
		"",
		"A function takes its tool's input as a struct: a required property is a",
		"plain field, an optional one a pointer or an omitted nil. It returns the",
		"tool's structured content as a struct when the tool declares its shape,",
		"else a Result. A tool that reports failure returns an *Error with Code",
		"\"" + string(CodeToolError) + "\" and the tool's text as the Message; other codes are",
		"the host's (\"tool_not_held\", \"call_timeout\", ...) or the prelude's",
		"(\"cancelled\", \"channel_closed\", \"bad_result\", \"frame_too_large\").",
		"A value a schema does not let the package type is an any, its doc says why.",
	})
	w("package ", g.pkg, "\n\n")
	w("import (\n\t\"context\"\n\t\"encoding/json\"\n\n\t\"cap/internal/client\"\n)\n\n")
	w("// Error is the error every cap package returns (see fs.Error).\ntype Error = client.Error\n\n")
	needResult := false
	for _, t := range g.tools {
		if t.out == nil {
			needResult = true
		}
	}
	if needResult {
		w(`// Result is the answer of a tool that declares no output schema.
type Result struct {
	// Structured is the tool's structured content, nil when it sent none.
	Structured map[string]any
	// Text is the tool's text content.
	Text string
}

`)
	}
	w(`// call sends in, marshalled, to the capability name, and returns the
// structured content (nil when none) and the text of the answer.
func call(ctx context.Context, name string, in any) ([]byte, string, error) {
	args, err := json.Marshal(in)
	if err != nil {
		return nil, "", &Error{Cap: name, Code: "invalid_capability_arguments", Message: "the input does not marshal to JSON: " + err.Error()}
	}
	m, err := client.Call(ctx, name, map[string]any{"arguments": args})
	if err != nil {
		return nil, "", err
	}
	r := client.Read(m)
	structured, text := r.Bytes("structured"), r.Str("text")
	return structured, text, r.Err(name)
}

// decode decodes the structured content b of name's answer into v.
func decode(name string, b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return &Error{Cap: name, Code: client.BadResult, Message: "the tool's structured content does not decode: " + err.Error()}
	}
	return nil
}
`)
	for _, t := range g.tools {
		w("\n")
		g.emitFunc(&b, comment, t)
		for _, d := range t.decls {
			w("\n")
			emitDecl(&b, comment, d)
		}
	}
	if b.Len() > MaxSourceBytes {
		return nil, &Error{Code: CodeSourceTooLarge, Message: "the package's source is " + strconv.Itoa(b.Len()) + " bytes, over the bound of " + strconv.Itoa(MaxSourceBytes)}
	}
	src, err := format.Source(b.Bytes())
	if err != nil { // a generator bug: the source is built to parse
		return nil, &Error{Code: CodeGeneratorFault, Message: "the generated source does not parse: " + err.Error()}
	}
	if len(src) > MaxSourceBytes {
		return nil, &Error{Code: CodeSourceTooLarge, Message: "the package's source is " + strconv.Itoa(len(src)) + " bytes, over the bound of " + strconv.Itoa(MaxSourceBytes)}
	}
	return src, nil
}

// emitFunc writes t's function.
func (g *gen) emitFunc(b *bytes.Buffer, comment func([]string), t *toolGen) {
	head := t.fn + " calls the tool " + oneLine(strconv.Quote(t.tool.Name), MaxToolNameBytes*4)
	if title := oneLine(t.tool.Title, 200); title != "" {
		head += " (" + title + ")"
	}
	doc := []string{head + "."}
	if d := commentLines(t.tool.Description, MaxDocBytes); len(d) > 0 {
		doc = append(append(doc, ""), d...)
	}
	if h := hints(t.tool.Annotations); h != "" {
		doc = append(doc, "", h)
	}
	comment(doc)
	out := "Result"
	if t.out != nil {
		out = t.out.name
	}
	b.WriteString("func " + t.fn + "(ctx context.Context, in " + t.in.name + ") (" + out + ", error) {\n")
	b.WriteString("\tconst name = " + strconv.Quote(t.cap) + "\n")
	if t.out == nil {
		b.WriteString("\tstructured, text, err := call(ctx, name, in)\n\tif err != nil {\n\t\treturn Result{}, err\n\t}\n")
		b.WriteString("\tres := Result{Text: text}\n\tif structured != nil {\n\t\tif err := decode(name, structured, &res.Structured); err != nil {\n\t\t\treturn Result{}, err\n\t\t}\n\t}\n\treturn res, nil\n}\n")
		return
	}
	b.WriteString("\tvar out " + out + "\n\tstructured, _, err := call(ctx, name, in)\n\tif err != nil {\n\t\treturn out, err\n\t}\n")
	b.WriteString("\tif structured == nil {\n\t\treturn out, &Error{Cap: name, Code: client.BadResult, Message: \"the tool declares an output schema but answered no structured content\"}\n\t}\n")
	b.WriteString("\treturn out, decode(name, structured, &out)\n}\n")
}

// hints renders the annotations' hints as a sentence, "" when none.
func hints(raw json.RawMessage) string {
	var a map[string]any
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	var parts []string
	for _, h := range []struct{ key, yes, no string }{
		{"readOnlyHint", "read-only", "writes"},
		{"destructiveHint", "destructive", "not destructive"},
		{"idempotentHint", "idempotent", "not idempotent"},
		{"openWorldHint", "reaches the outside world", "closed world"},
	} {
		if v, ok := a[h.key].(bool); ok {
			if v {
				parts = append(parts, h.yes)
			} else {
				parts = append(parts, h.no)
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "The server's hints, not enforced: " + strings.Join(parts, ", ") + "."
}

// emitDecl writes one named type.
func emitDecl(b *bytes.Buffer, comment func([]string), d *decl) {
	doc := d.doc
	if len(doc) == 0 || !strings.HasPrefix(doc[0], d.name+" ") {
		doc = append([]string{d.name + " is a type of the tool's schema."}, doc...)
		if len(doc) > 1 {
			doc = append(doc[:1], append([]string{""}, doc[1:]...)...)
		}
	}
	comment(doc)
	switch d.kind {
	case declAlias:
		b.WriteString("type " + d.name + " = " + d.base + "\n")
	case declOther:
		b.WriteString("type " + d.name + " " + d.base + "\n")
	case declEnum:
		b.WriteString("type " + d.name + " " + d.base + "\n\n")
		b.WriteString("// The values of " + d.name + ".\nconst (\n")
		for _, c := range d.consts {
			b.WriteString("\t" + c.name + " " + d.name + " = " + strconv.QuoteToASCII(c.value) + "\n")
		}
		b.WriteString(")\n")
	case declStruct:
		if len(d.fields) == 0 {
			b.WriteString("type " + d.name + " struct{}\n")
			return
		}
		b.WriteString("type " + d.name + " struct {\n")
		for _, f := range d.fields {
			for _, l := range f.doc {
				if l == "" {
					b.WriteString("\t//\n")
				} else {
					b.WriteString("\t// " + l + "\n")
				}
			}
			b.WriteString("\t" + f.name + " " + f.t.expr + " `json:\"" + tagName(f) + "\"`\n")
		}
		b.WriteString("}\n")
	}
}

// tagName is the value of f's json tag.
func tagName(f field) string {
	name := f.json
	if f.required {
		if name == "-" {
			return "-,"
		}
		return name
	}
	return name + ",omitempty"
}
