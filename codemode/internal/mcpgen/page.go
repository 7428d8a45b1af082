package mcpgen

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// page writes the package's API page: what a model reads to call the
// tools (fs_read cap://mcp/<server>), smaller than the tools' own JSON
// Schemas. It shows each function's signature under its tool's
// description and hints (and its name, when the function's is not made
// of it alone), then the types its signature names, each struct field as
//
//	Name Type // json, optional: doc
//
// with its JSON name (unsaid when it is the field's name with a
// lower-case first letter), "optional" on an optional field that is not
// a pointer, and its doc on one line; a string enum's values are listed instead of its constants'
// declarations. Every piece of text from the server is cleaned as a doc
// comment is (commentLines). The page depends on the generation alone,
// so it is as deterministic as the source.
func (g *gen) page(server string) []byte {
	var b bytes.Buffer
	w := func(s ...string) {
		for _, p := range s {
			b.WriteString(p)
		}
	}
	quoted := oneLine(strconv.Quote(server), MaxDocBytes)
	w("package ", g.pkg, " // import \"cap/mcp/", g.pkg, "\"\n\n")
	w("// The MCP server ", quoted, ", one function per tool. A field is required\n",
		"// unless a pointer or said optional. Its JSON name is its own with the first\n",
		"// letter lower-cased unless its comment starts with another. \"a\" | \"b\" is a\n",
		"// string type taking those values. A tool that fails returns an *Error with\n",
		"// Code \"", string(CodeToolError), "\" and its text.\n",
		"type Error struct{ Cap, Code, Message string }\n")
	for _, t := range g.tools {
		if t.out == nil {
			w("type Result struct{ Structured map[string]any; Text string } // when no output schema\n")
			break
		}
	}
	for _, t := range g.tools {
		// The tool's name, unless its function's name is made of it
		// alone; never its title, which the description repeats.
		head := ""
		if t.fn != exportedIdent(t.tool.Name, "Tool") {
			head = "tool " + oneLine(strconv.Quote(t.tool.Name), MaxToolNameBytes*4)
		}
		lines := commentLines(t.tool.Description, MaxDocBytes)
		switch {
		case head == "":
		case len(lines) > 0:
			lines[0] = head + ": " + lines[0]
		default:
			lines = []string{head}
		}
		if h := shortHints(t.tool.Annotations); h != "" {
			if len(lines) == 0 {
				lines = []string{""}
			}
			lines[len(lines)-1] = strings.TrimSpace(lines[len(lines)-1] + " [" + h + "]")
		}
		w("\n")
		for _, l := range lines {
			if l == "" {
				w("//\n")
				continue
			}
			w("// ", l, "\n")
		}
		out := "Result"
		if t.out != nil {
			out = t.out.name
		}
		w("func ", t.fn, "(ctx context.Context, in ", t.in.name, ") (", out, ", error)\n")
		for _, d := range t.decls {
			pageDecl(&b, d)
		}
	}
	return b.Bytes()
}

// pageDecl writes one named type of the page.
func pageDecl(b *bytes.Buffer, d *decl) {
	desc := ""
	if d.desc != "" {
		desc = " // " + d.desc
	}
	switch d.kind {
	case declAlias:
		b.WriteString("type " + d.name + " = " + d.base + desc + "\n")
	case declOther:
		b.WriteString("type " + d.name + " " + d.base + desc + "\n")
	case declEnum:
		plain := true
		values := make([]string, len(d.consts))
		for i, c := range d.consts {
			values[i] = strconv.QuoteToASCII(c.value)
			if c.name != d.name+exportedIdent(c.value, "") {
				plain = false
			}
		}
		if plain {
			b.WriteString("type " + d.name + " " + d.base + " // " + strings.Join(values, " | ") + "\n")
			return
		}
		b.WriteString("type " + d.name + " " + d.base + "\nconst (\n")
		for i, c := range d.consts {
			b.WriteString("\t" + c.name + " " + d.name + " = " + values[i] + "\n")
		}
		b.WriteString(")\n")
	case declStruct:
		if desc != "" {
			b.WriteString("//" + desc[3:] + "\n")
		}
		if len(d.fields) == 0 {
			b.WriteString("type " + d.name + " struct{}\n")
			return
		}
		b.WriteString("type " + d.name + " struct {\n")
		for _, f := range d.fields {
			var say []string
			if f.json != lowerFirst(f.name) {
				say = append(say, f.json)
			}
			if !f.required && !f.t.ptr {
				say = append(say, "optional")
			}
			head := strings.Join(say, ", ")
			doc := strings.Join(nonEmpty(f.doc), " ")
			b.WriteString("\t" + f.name + " " + f.t.expr)
			switch {
			case head != "" && doc != "":
				b.WriteString(" // " + head + ": " + doc)
			case head != "" || doc != "":
				b.WriteString(" // " + head + doc)
			}
			b.WriteString("\n")
		}
		b.WriteString("}\n")
	}
}

// lowerFirst is name with its first letter lower-cased: the JSON name
// the page leaves unsaid.
func lowerFirst(name string) string {
	r, n := utf8.DecodeRuneInString(name)
	return string(unicode.ToLower(r)) + name[n:]
}

// nonEmpty is lines without its blank ones.
func nonEmpty(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// shortHints renders the annotations' hints as the page shows them,
// "" when none: "read-only" or "destructive", the two a model weighs
// before a call; the rest go unsaid.
func shortHints(raw json.RawMessage) string {
	var a map[string]any
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	if v, _ := a["readOnlyHint"].(bool); v {
		return "read-only"
	}
	if v, _ := a["destructiveHint"].(bool); v {
		return "destructive"
	}
	return ""
}
