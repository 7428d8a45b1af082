package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Bounds of a result schema.
const (
	// maxResultSchemaBytes bounds a result schema's JSON text.
	maxResultSchemaBytes = 8 << 10
	// maxResultFields bounds the properties of a result schema.
	maxResultFields = 32
	// maxFieldNameBytes bounds one property name.
	maxFieldNameBytes = 64
	// maxArrivedBytes bounds how much of a mismatched result a Mismatch
	// quotes back.
	maxArrivedBytes = 2 << 10
)

// FieldType is the closed set of types a result field may have.
type FieldType string

// The field types. Integer accepts only numbers without a fractional part.
const (
	TypeString  FieldType = "string"
	TypeNumber  FieldType = "number"
	TypeInteger FieldType = "integer"
	TypeBoolean FieldType = "boolean"
	TypeArray   FieldType = "array"
	TypeObject  FieldType = "object"
)

var fieldTypes = []FieldType{TypeString, TypeNumber, TypeInteger, TypeBoolean, TypeArray, TypeObject}

// ResultField is one property of a result contract.
type ResultField struct {
	// Name is the property's name.
	Name string
	// Type is the type its value must have.
	Type FieldType
	// Items is the element type of an array field; "" accepts any element.
	Items FieldType
	// Description says what the property holds; it may be empty.
	Description string
	// Required is true when the value must hold the property.
	Required bool
}

// ResultSchema is the contract a parent may demand of a child's result:
// an object of named properties with one closed-set type each. It is the
// subset of JSON Schema this package can enforce, and nothing wider.
// Fields are held in name order.
type ResultSchema struct {
	Fields []ResultField
}

// ParseResultSchema reads a result contract. It is total: anything outside
// the enforceable subset is refused with CodeMalformedSchema, naming the
// problem, rather than accepted and ignored. The accepted form is
//
//	{"type":"object","properties":{"name":{"type":"string","description":"..."}, ...},
//	 "required":["name", ...]}
//
// where each property's type is one of string, number, integer, boolean,
// array or object. An array property may give "items":{"type":...} with a
// non-array type. "description" and "title" are allowed anywhere, and
// "additionalProperties" may only be true (surplus fields are always
// fine). Without "required" every property is required. A JSON string
// holding such an object is read as the object.
func ParseResultSchema(raw json.RawMessage) (*ResultSchema, error) {
	bad := func(format string, args ...any) (*ResultSchema, error) {
		return nil, &Refusal{Code: CodeMalformedSchema,
			Reason: "result_schema: " + fmt.Sprintf(format, args...) + "; " + schemaShape}
	}
	if len(raw) > maxResultSchemaBytes {
		return bad("the schema is %d bytes, more than %d", len(raw), maxResultSchemaBytes)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var inner string
		if err := json.Unmarshal(raw, &inner); err != nil {
			return bad("the schema is not valid JSON")
		}
		raw = bytes.TrimSpace([]byte(inner))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return bad("the schema must be a JSON object")
	}
	for k := range top {
		switch k {
		case "type", "properties", "required", "description", "title", "additionalProperties", "$schema":
		default:
			return bad("keyword %s is not enforced here", quote(k))
		}
	}
	var typ string
	if err := json.Unmarshal(top["type"], &typ); err != nil || typ != "object" {
		return bad(`"type" must be "object"`)
	}
	if ap, ok := top["additionalProperties"]; ok {
		var b bool
		if json.Unmarshal(ap, &b) != nil || !b {
			return bad(`"additionalProperties" may only be true: surplus fields are always accepted`)
		}
	}
	if err := checkText(top, "description", "title", "$schema"); err != "" {
		return bad("%s", err)
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(top["properties"], &props); err != nil || len(props) == 0 {
		return bad(`"properties" must be a non-empty object`)
	}
	if len(props) > maxResultFields {
		return bad("%d properties, more than %d", len(props), maxResultFields)
	}
	s := &ResultSchema{}
	for name, p := range props {
		if !validFieldName(name) {
			return bad("property name %s must match [A-Za-z_][A-Za-z0-9_]* and be at most %d bytes", quote(name), maxFieldNameBytes)
		}
		f, why := parseField(name, p)
		if why != "" {
			return bad("property %q: %s", name, why)
		}
		s.Fields = append(s.Fields, f)
	}
	sort.Slice(s.Fields, func(i, j int) bool { return s.Fields[i].Name < s.Fields[j].Name })
	if req, ok := top["required"]; ok {
		var names []string
		if err := json.Unmarshal(req, &names); err != nil || names == nil {
			return bad(`"required" must be an array of property names`)
		}
		seen := map[string]bool{}
		for _, n := range names {
			i := s.index(n)
			if i < 0 {
				return bad("required name %s is not a property", quote(n))
			}
			if seen[n] {
				return bad("required name %s is listed twice", quote(n))
			}
			seen[n] = true
			s.Fields[i].Required = true
		}
	} else {
		for i := range s.Fields {
			s.Fields[i].Required = true
		}
	}
	return s, nil
}

const schemaShape = `expected {"type":"object","properties":{"<name>":{"type":"string|number|integer|boolean|array|object"}},"required":["<name>"]}`

func parseField(name string, raw json.RawMessage) (ResultField, string) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil || p == nil {
		return ResultField{}, "must be an object"
	}
	for k := range p {
		switch k {
		case "type", "description", "title", "items":
		default:
			return ResultField{}, fmt.Sprintf("keyword %s is not enforced here", quote(k))
		}
	}
	if why := checkText(p, "description", "title"); why != "" {
		return ResultField{}, why
	}
	t, ok := parseType(p["type"])
	if !ok {
		return ResultField{}, `"type" must be one of ` + typeList()
	}
	f := ResultField{Name: name, Type: t}
	if d, ok := p["description"]; ok {
		_ = json.Unmarshal(d, &f.Description)
	}
	if items, ok := p["items"]; ok {
		if t != TypeArray {
			return ResultField{}, `"items" is only allowed on an array`
		}
		var ip map[string]json.RawMessage
		if err := json.Unmarshal(items, &ip); err != nil || ip == nil {
			return ResultField{}, `"items" must be an object`
		}
		for k := range ip {
			if k != "type" && k != "description" {
				return ResultField{}, fmt.Sprintf("keyword %s in items is not enforced here", quote(k))
			}
		}
		if why := checkText(ip, "description"); why != "" {
			return ResultField{}, why
		}
		it, ok := parseType(ip["type"])
		if !ok || it == TypeArray {
			return ResultField{}, `"items.type" must be one of string, number, integer, boolean, object`
		}
		f.Items = it
	}
	return f, ""
}

func checkText(m map[string]json.RawMessage, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return fmt.Sprintf("%q must be a string", k)
			}
		}
	}
	return ""
}

func parseType(raw json.RawMessage) (FieldType, bool) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	for _, t := range fieldTypes {
		if FieldType(s) == t {
			return t, true
		}
	}
	return "", false
}

func typeList() string {
	parts := make([]string, len(fieldTypes))
	for i, t := range fieldTypes {
		parts[i] = string(t)
	}
	return strings.Join(parts, ", ")
}

func validFieldName(n string) bool {
	if n == "" || len(n) > maxFieldNameBytes {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func (s *ResultSchema) index(name string) int {
	for i, f := range s.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// JSON returns the schema in the canonical form ParseResultSchema reads;
// parsing it again yields an equal schema.
func (s *ResultSchema) JSON() json.RawMessage {
	type item struct {
		Type FieldType `json:"type"`
	}
	type prop struct {
		Type        FieldType `json:"type"`
		Description string    `json:"description,omitempty"`
		Items       *item     `json:"items,omitempty"`
	}
	props := make(map[string]prop, len(s.Fields))
	required := []string{}
	for _, f := range s.Fields {
		p := prop{Type: f.Type, Description: f.Description}
		if f.Items != "" {
			p.Items = &item{Type: f.Items}
		}
		props[f.Name] = p
		if f.Required {
			required = append(required, f.Name)
		}
	}
	b, _ := json.Marshal(struct {
		Type       string          `json:"type"`
		Properties map[string]prop `json:"properties"`
		Required   []string        `json:"required"`
	}{"object", props, required})
	return b
}

// String renders the schema compactly for a model: "{name: string,
// count: integer?, files: array of string}", a trailing '?' marking an
// optional field.
func (s *ResultSchema) String() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		t := string(f.Type)
		if f.Items != "" {
			t += " of " + string(f.Items)
		}
		if !f.Required {
			t += "?"
		}
		parts[i] = f.Name + ": " + t
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Mismatch says how a result failed its contract, naming both sides: the
// schema in full and what actually arrived.
type Mismatch struct {
	// Schema is the contract, rendered by ResultSchema.String.
	Schema string `json:"schema"`
	// Arrived is the value received, quoted up to 2 KiB.
	Arrived string `json:"arrived"`
	// Problems lists each violation, one per field, in field order.
	Problems []string `json:"problems"`
}

// Describe renders the mismatch as one paragraph a model can act on.
func (m *Mismatch) Describe() string {
	return fmt.Sprintf("the result did not meet its contract %s: %s; it was %s",
		m.Schema, strings.Join(m.Problems, "; "), m.Arrived)
}

// Validate checks value against the contract. It returns nil when the
// value is an object holding every required field with the right type;
// surplus fields are fine.
func (s *ResultSchema) Validate(value json.RawMessage) *Mismatch {
	arrived := string(value)
	if len(arrived) > maxArrivedBytes {
		arrived = arrived[:maxArrivedBytes] + "…(truncated)"
	}
	m := &Mismatch{Schema: s.String(), Arrived: arrived}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		m.Problems = []string{"the value is not JSON"}
		return m
	}
	obj, ok := v.(map[string]any)
	if !ok {
		m.Problems = []string{"the value is " + jsonTypeName(v) + ", not an object"}
		return m
	}
	for _, f := range s.Fields {
		fv, present := obj[f.Name]
		if !present {
			if f.Required {
				m.Problems = append(m.Problems, fmt.Sprintf("%s is missing (want %s)", f.Name, f.Type))
			}
			continue
		}
		if !hasType(fv, f.Type) {
			m.Problems = append(m.Problems, fmt.Sprintf("%s is %s, want %s", f.Name, jsonTypeName(fv), f.Type))
			continue
		}
		if f.Type == TypeArray && f.Items != "" {
			for i, e := range fv.([]any) {
				if !hasType(e, f.Items) {
					m.Problems = append(m.Problems, fmt.Sprintf("%s[%d] is %s, want %s", f.Name, i, jsonTypeName(e), f.Items))
					break
				}
			}
		}
	}
	if len(m.Problems) == 0 {
		return nil
	}
	return m
}

func hasType(v any, t FieldType) bool {
	switch t {
	case TypeString:
		_, ok := v.(string)
		return ok
	case TypeBoolean:
		_, ok := v.(bool)
		return ok
	case TypeNumber:
		_, ok := v.(json.Number)
		return ok
	case TypeInteger:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		if _, err := n.Int64(); err == nil {
			return true
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f) && !math.IsInf(f, 0)
	case TypeArray:
		_, ok := v.([]any)
		return ok
	case TypeObject:
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}

func jsonTypeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		if hasType(x, TypeInteger) {
			return "an integer"
		}
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "unknown"
}

// ResultKind says what became of a run's result contract.
type ResultKind string

const (
	// NoResultAsked: the spawn named no contract. The run's report is the
	// whole answer, exactly as without contracts.
	NoResultAsked ResultKind = "no_result_asked"
	// ResultValid: the result note met the contract; Value holds it.
	ResultValid ResultKind = "valid"
	// ResultMissing: the run ended without writing the result note.
	ResultMissing ResultKind = "missing"
	// ResultMismatched: the result note broke the contract; Mismatch
	// says how and Value holds what arrived.
	ResultMismatched ResultKind = "mismatched"
)

// TerminalResult is the verdict on a finished run's result contract. It
// travels beside the prose report, never instead of it.
type TerminalResult struct {
	// Kind is the verdict.
	Kind ResultKind
	// Value is the result note for ResultValid and ResultMismatched, nil
	// otherwise.
	Value json.RawMessage
	// Mismatch says how the note broke the contract, for
	// ResultMismatched only.
	Mismatch *Mismatch
}

// Judge returns the verdict of schema (nil = none asked) on a result note
// (nil = none written).
func Judge(schema *ResultSchema, note json.RawMessage) TerminalResult {
	switch {
	case schema == nil:
		return TerminalResult{Kind: NoResultAsked}
	case note == nil:
		return TerminalResult{Kind: ResultMissing}
	}
	if m := schema.Validate(note); m != nil {
		return TerminalResult{Kind: ResultMismatched, Value: note, Mismatch: m}
	}
	return TerminalResult{Kind: ResultValid, Value: note}
}
