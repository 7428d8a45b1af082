package mcpgen

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// maxEnumConsts bounds the constants one enum yields; a longer enum is a
// plain string whose doc lists the values.
const maxEnumConsts = 256

// maxNoteBytes bounds a note's listing of values.
const maxNoteBytes = 256

// goType is the Go type a schema maps to.
type goType struct {
	expr string // "string", "[]FooItem", "map[string]any", "*int64", "FooBar"
	// nillable: a slice, map or interface, which is absent when nil and
	// needs no pointer to be optional.
	nillable bool
	ptr      bool  // expr is a pointer ("*T")
	decl     *decl // the named type it is, when one of this package's
	// note is a sentence for the field's doc: why it is untyped, which
	// values it takes.
	note string
}

// untyped is the type of a value the schema does not let the generator
// type: any, with note saying why.
func untyped(note string) goType { return goType{expr: "any", nillable: true, note: note} }

// nullable is t made to also hold JSON null: a pointer, unless t is
// nillable already.
func nullable(t goType) goType {
	if t.nillable || t.ptr {
		return t
	}
	t.expr, t.ptr = "*"+t.expr, true
	return t
}

// The kinds of a named type.
const (
	declStruct = iota
	declEnum   // a defined type over a basic type, with constants
	declOther  // a defined type over another type expression
	declAlias  // an alias of another named type
)

// decl is one named type the package declares.
type decl struct {
	name string
	kind int
	doc  []string
	// desc is the schema's own description on one line, and the note on
	// its type, for the API page; "" when none.
	desc   string
	fields []field     // declStruct
	base   string      // declEnum, declOther, declAlias: the underlying type
	consts []enumConst // declEnum
	done   bool        // declStruct: its fields are all filled in
}

// field is one field of a struct.
type field struct {
	name     string
	json     string
	t        goType
	required bool
	doc      []string
}

// enumConst is one constant of an enum type.
type enumConst struct{ name, value string }

// schemaDoc maps the types of one schema document: an input or output
// schema, whose "#" and "#/$defs/..." references resolve within it.
type schemaDoc struct {
	t      *toolGen
	root   any
	prefix string             // the tool's function name: definitions' names start with it
	refs   map[string]*goType // the types of the references resolved so far
	busy   map[string]bool    // references being resolved
}

// schemaDepth returns how deeply b's arrays and objects nest, scanning
// at most MaxSchemaDepth+1 levels; b need not be valid JSON.
func schemaDepth(b []byte) int {
	depth, most := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			most = max(most, depth)
			if most > MaxSchemaDepth {
				return most
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return most
}

// decodeSchema decodes one schema, refusing one over the bounds or one
// that is not a JSON object.
func decodeSchema(raw json.RawMessage, which string) (map[string]any, *Error) {
	if len(raw) > MaxSchemaBytes {
		return nil, &Error{Code: CodeSchemaTooLarge, Message: "the " + which + " schema is " + strconv.Itoa(len(raw)) + " bytes, over the bound of " + strconv.Itoa(MaxSchemaBytes)}
	}
	if d := schemaDepth(raw); d > MaxSchemaDepth {
		return nil, &Error{Code: CodeSchemaTooDeep, Message: "the " + which + " schema nests deeper than " + strconv.Itoa(MaxSchemaDepth) + " levels"}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, &Error{Code: CodeSchemaInvalid, Message: "the " + which + " schema is not JSON: " + err.Error()}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{Code: CodeSchemaInvalid, Message: "the " + which + " schema is not a JSON object"}
	}
	types, null := schemaTypes(m)
	if len(types) > 0 && !(len(types) == 1 && types[0] == "object") {
		return nil, &Error{Code: CodeSchemaInvalid, Message: "the " + which + " schema's type is " + strings.Join(types, ", ") + ", not object: a tool's " + which + " is a JSON object"}
	}
	if null { // a tool's input and output are objects, never null
		m["type"] = "object"
		delete(m, "nullable")
	}
	return m, nil
}

// schemaTypes returns the JSON types m's "type" names, "null" left out,
// and whether null is among them (or OpenAPI's "nullable" is true).
func schemaTypes(m map[string]any) (types []string, null bool) {
	switch t := m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	}
	out := types[:0]
	for _, t := range types {
		if t == "null" {
			null = true
			continue
		}
		if !contains(out, t) {
			out = append(out, t)
		}
	}
	if b, _ := m["nullable"].(bool); b {
		null = true
	}
	sort.Strings(out)
	return out, null
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// description is m's description, or "".
func description(m map[string]any) string {
	s, _ := m["description"].(string)
	return s
}

// rootType maps the schema's root, an object, to the named type name: a
// struct when it has properties, else a map type.
func (d *schemaDoc) rootType(name, doc string) *decl {
	m := d.root.(map[string]any)
	desc := oneLine(description(m), MaxDocBytes)
	var t goType
	if props, ok := structProps(m); ok {
		dc := d.t.newDecl(name, declStruct)
		dc.doc, dc.desc = commentLines(doc, MaxDocBytes), desc
		d.refs["#"] = &goType{expr: dc.name, decl: dc}
		d.fillStruct(dc, m, props)
		return dc
	}
	if noArguments(m) {
		dc := d.t.newDecl(name, declStruct)
		dc.doc, dc.desc = commentLines(doc, MaxDocBytes), desc
		dc.done = true
		return dc
	}
	t = d.typeOf(m, name+"Value")
	if t.decl != nil && t.decl.kind == declStruct && !t.ptr {
		dc := d.t.newDecl(name, declAlias)
		dc.doc, dc.desc = commentLines(doc, MaxDocBytes), desc
		dc.base = t.expr
		return dc
	}
	if !strings.HasPrefix(t.expr, "map[") {
		t = untyped(t.note)
		t.expr = "map[string]any"
	}
	dc := d.t.newDecl(name, declOther)
	dc.doc, dc.desc = commentLines(doc, MaxDocBytes), desc
	if t.note != "" {
		dc.doc = appendNote(dc.doc, t.note)
		dc.desc = strings.TrimSpace(desc + " " + t.note)
	}
	dc.base = t.expr
	return dc
}

// noArguments reports whether the root m admits only the empty object,
// or leaves its properties undeclared without asking for others: no
// properties, no additionalProperties schema (or true), no reference or
// combination. Its type is the empty struct.
func noArguments(m map[string]any) bool {
	for _, k := range []string{"$ref", "enum", "const", "anyOf", "oneOf", "allOf", "patternProperties"} {
		if _, ok := m[k]; ok {
			return false
		}
	}
	if props, _ := m["properties"].(map[string]any); len(props) > 0 {
		return false
	}
	switch ap := m["additionalProperties"].(type) {
	case map[string]any:
		return false
	case bool:
		return !ap
	}
	return true
}

// appendNote appends note to doc as a paragraph of its own.
func appendNote(doc []string, note string) []string {
	if len(doc) > 0 {
		doc = append(doc, "")
	}
	return append(doc, note)
}

// structProps returns m's properties when m maps to a struct: an object
// (by its type, or by having properties), not nullable, neither enum,
// const, reference nor combination, with at least one property, every
// property's name one encoding/json can carry in a struct tag.
func structProps(m map[string]any) (map[string]any, bool) {
	for _, k := range []string{"$ref", "enum", "const", "anyOf", "oneOf", "allOf"} {
		if _, ok := m[k]; ok {
			return nil, false
		}
	}
	types, null := schemaTypes(m)
	if null || !(len(types) == 1 && types[0] == "object" || len(types) == 0) {
		return nil, false
	}
	props, _ := m["properties"].(map[string]any)
	if len(props) == 0 {
		return nil, false
	}
	for k := range props {
		if !validTag(k) {
			return nil, false
		}
	}
	return props, true
}

// validTag reports whether encoding/json takes name as a field's JSON
// name in a struct tag (its isValidTag), and it is at most 256 bytes.
func validTag(name string) bool {
	if name == "" || len(name) > 256 {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// fillStruct fills dc's fields from props, in the order of their JSON
// names.
func (d *schemaDoc) fillStruct(dc *decl, m map[string]any, props map[string]any) {
	required := map[string]bool{}
	if list, ok := m["required"].([]any); ok {
		for _, e := range list {
			if s, ok := e.(string); ok {
				required[s] = true
			}
		}
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fieldNames := newNames()
	for _, k := range keys {
		if d.t.err != nil {
			return
		}
		d.t.count(1)
		f := field{json: k, required: required[k]}
		f.name = fieldNames.claim(exportedIdent(k, "Field"), nil)
		f.t = d.typeOf(props[k], dc.name+f.name)
		if f.t.decl != nil && f.t.decl.kind == declStruct && !f.t.decl.done && !f.t.ptr {
			f.t = nullable(f.t) // a recursive type holds itself through a pointer
		}
		if !f.required && !f.t.nillable && !f.t.ptr {
			f.t = nullable(f.t)
		}
		if pm, ok := props[k].(map[string]any); ok {
			f.doc = commentLines(description(pm), MaxDocBytes)
		}
		if f.t.note != "" {
			f.doc = appendNote(f.doc, f.t.note)
		}
		dc.fields = append(dc.fields, f)
	}
	dc.done = true
}

// typeOf maps schema s to a Go type; name is what a named type made for
// it is called.
func (d *schemaDoc) typeOf(s any, name string) goType {
	if d.t.err != nil {
		return untyped("")
	}
	m, ok := s.(map[string]any)
	if !ok {
		if b, ok := s.(bool); ok && !b {
			return untyped("The schema admits no value here.")
		}
		return untyped("")
	}
	if ref, ok := m["$ref"].(string); ok {
		return d.ref(ref, name)
	}
	types, null := schemaTypes(m)
	if e, ok := m["enum"].([]any); ok {
		return d.enum(e, types, null, name)
	}
	if c, ok := m["const"]; ok {
		return d.enum([]any{c}, types, null, name)
	}
	if len(types) == 0 {
		for _, k := range []string{"anyOf", "oneOf"} {
			if list, ok := m[k].([]any); ok {
				return d.union(k, list, name)
			}
		}
		if list, ok := m["allOf"].([]any); ok {
			if len(list) == 1 {
				return d.typeOf(list[0], name)
			}
			return untyped("Untyped: the schema combines " + strconv.Itoa(len(list)) + " schemas with allOf.")
		}
		switch {
		case m["properties"] != nil || m["additionalProperties"] != nil:
			types = []string{"object"}
		case m["items"] != nil:
			types = []string{"array"}
		case null:
			return untyped("Always null.")
		default:
			return untyped("")
		}
	}
	if len(types) > 1 {
		return untyped("Untyped: the value is any of the JSON types " + strings.Join(types, ", ") + ".")
	}
	var t goType
	switch types[0] {
	case "string":
		t = goType{expr: "string"}
	case "integer":
		t = goType{expr: "int64"}
	case "number":
		t = goType{expr: "float64"}
	case "boolean":
		t = goType{expr: "bool"}
	case "array":
		item := d.typeOf(m["items"], name+"Item")
		if _, ok := m["items"].([]any); ok {
			item = untyped("")
		}
		t = goType{expr: "[]" + item.expr, nillable: true, note: item.note}
	case "object":
		t = d.object(m, name)
	default:
		return untyped("Untyped: the schema's type " + strconv.Quote(types[0]) + " is not a JSON type.")
	}
	if null {
		t = nullable(t)
	}
	return t
}

// object maps an object schema: a struct when it has properties, else a
// map.
func (d *schemaDoc) object(m map[string]any, name string) goType {
	if props, ok := structProps(m); ok {
		dc := d.t.newDecl(name, declStruct)
		d.fillStruct(dc, m, props)
		return goType{expr: dc.name, decl: dc}
	}
	if props, _ := m["properties"].(map[string]any); len(props) > 0 {
		return goType{expr: "map[string]any", nillable: true, note: "Untyped: a property's name cannot name a struct field, so the object is a map."}
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		v := d.typeOf(ap, name+"Value")
		return goType{expr: "map[string]" + v.expr, nillable: true, note: v.note}
	}
	return goType{expr: "map[string]any", nillable: true}
}

// union maps anyOf or oneOf: a schema and null is that schema, nullable;
// one schema is that schema; anything else is untyped.
func (d *schemaDoc) union(kw string, list []any, name string) goType {
	var rest []any
	null := false
	for _, e := range list {
		if em, ok := e.(map[string]any); ok && len(em) == 1 {
			if t, _ := em["type"].(string); t == "null" {
				null = true
				continue
			}
		}
		rest = append(rest, e)
	}
	if len(rest) != 1 {
		return untyped("Untyped: the value is " + kw + " " + strconv.Itoa(len(list)) + " schemas.")
	}
	t := d.typeOf(rest[0], name)
	if null {
		t = nullable(t)
	}
	return t
}

// enum maps an enum: strings are a string type with a constant per value
// when every value names a distinct identifier; other values are their
// type, or untyped, with the values listed in the note.
func (d *schemaDoc) enum(values []any, types []string, null bool, name string) goType {
	allStrings := len(values) > 0
	for _, v := range values {
		if _, ok := v.(string); !ok {
			allStrings = false
		}
	}
	var t goType
	switch {
	case allStrings && (len(types) == 0 || len(types) == 1 && types[0] == "string"):
		t = d.stringEnum(values, name)
	case len(types) == 1 && types[0] == "integer":
		t = goType{expr: "int64", note: listValues(values)}
	case len(types) == 1 && types[0] == "number":
		t = goType{expr: "float64", note: listValues(values)}
	case len(types) == 1 && types[0] == "boolean":
		t = goType{expr: "bool", note: listValues(values)}
	default:
		return untyped(listValues(values))
	}
	if null {
		t = nullable(t)
	}
	return t
}

// stringEnum is an enum of string values: a named type with a constant
// per value when the values name distinct identifiers, else a string.
func (d *schemaDoc) stringEnum(values []any, name string) goType {
	seen := map[string]bool{}
	var list []string
	for _, v := range values {
		if s := v.(string); !seen[s] {
			seen[s] = true
			list = append(list, s)
		}
	}
	sort.Strings(list)
	idents := map[string]bool{}
	clean := len(list) <= maxEnumConsts
	for _, s := range list {
		id := exportedIdent(s, "")
		if id == "" || idents[id] {
			clean = false
			break
		}
		idents[id] = true
	}
	if !clean {
		return goType{expr: "string", note: listValues(values)}
	}
	dc := d.t.newDecl(name, declEnum)
	dc.base = "string"
	dc.doc = []string{dc.name + " is one of the constants " + dc.name + "*."}
	for _, s := range list {
		d.t.count(1)
		dc.consts = append(dc.consts, enumConst{name: d.t.g.names.claim(dc.name+exportedIdent(s, ""), nil), value: s})
	}
	return goType{expr: dc.name, decl: dc}
}

// listValues is a note listing the values an enum admits, bounded.
func listValues(values []any) string {
	var parts []string
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		parts = append(parts, string(b))
	}
	sort.Strings(parts)
	s := "One of " + strings.Join(parts, ", ")
	if len(s) > maxNoteBytes {
		return oneLine(s, maxNoteBytes)
	}
	return s + "."
}

// ref resolves a reference to the root ("#") or to one of the document's
// definitions ("#/$defs/X", "#/definitions/X"); any other is untyped.
func (d *schemaDoc) ref(ref, name string) goType {
	target, defName, ok := d.resolve(ref)
	if !ok {
		return untyped("Untyped: the schema refers to " + oneLine(strconv.Quote(ref), maxNoteBytes) + ", which is not one of its definitions.")
	}
	if t, ok := d.refs[ref]; ok {
		return *t
	}
	if d.busy[ref] {
		return untyped("Untyped: the definition refers to itself without an object between.")
	}
	name = d.prefix + exportedIdent(defName, "Def")
	if m, ok := target.(map[string]any); ok {
		if props, ok := structProps(m); ok {
			dc := d.t.newDecl(name, declStruct)
			dc.doc = commentLines(description(m), MaxDocBytes)
			dc.desc = oneLine(description(m), MaxDocBytes)
			t := goType{expr: dc.name, decl: dc}
			d.refs[ref] = &t
			d.fillStruct(dc, m, props)
			return t
		}
	}
	d.busy[ref] = true
	t := d.typeOf(target, name)
	delete(d.busy, ref)
	d.refs[ref] = &t
	return t
}

// resolve finds the schema ref names and the name its type takes.
func (d *schemaDoc) resolve(ref string) (any, string, bool) {
	if ref == "#" {
		return d.root, "Self", true
	}
	for _, p := range []string{"#/$defs/", "#/definitions/"} {
		rest, ok := strings.CutPrefix(ref, p)
		if !ok || strings.Contains(rest, "/") {
			continue
		}
		rest = strings.ReplaceAll(strings.ReplaceAll(rest, "~1", "/"), "~0", "~")
		defs, _ := d.root.(map[string]any)[p[2:len(p)-1]].(map[string]any)
		if s, ok := defs[rest]; ok {
			return s, rest, true
		}
	}
	return nil, "", false
}
