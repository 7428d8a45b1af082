package mcpserve

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/agentloom/loom/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

// maxToolNameBytes is the longest tool name MCP accepts.
const maxToolNameBytes = 128

// ToolError is a tool the bridge cannot serve over MCP.
type ToolError struct {
	// Code is "bad_name" (empty, longer than the 128 bytes MCP accepts, or holding
	// a character outside [A-Za-z0-9_.-]) or "bad_schema" (not a JSON
	// Schema object that github.com/google/jsonschema-go resolves).
	Code string
	// Tool is the tool's name.
	Tool string
	// Err is the underlying reason.
	Err error
}

// Error names the tool, the code and the reason.
func (e *ToolError) Error() string {
	return fmt.Sprintf("mcpserve: tool %q cannot be served (%s): %v", e.Tool, e.Code, e.Err)
}

// Unwrap returns the underlying reason.
func (e *ToolError) Unwrap() error { return e.Err }

// ErrorCode returns e.Code, so tool.CodeOf reads it (see
// tool.CodedError).
func (e *ToolError) ErrorCode() string { return e.Code }

// CheckTool reports whether t can be served over MCP: its name is one
// MCP accepts and its Schema is a JSON Schema of type "object" that
// github.com/google/jsonschema-go (the library the MCP Go SDK validates
// with) parses and resolves. The error, if any, is a *ToolError.
func CheckTool(t tool.Tool) error {
	if err := checkName(t.Name); err != nil {
		return &ToolError{Code: "bad_name", Tool: t.Name, Err: err}
	}
	if _, err := resolveSchema(t.Schema); err != nil {
		return &ToolError{Code: "bad_schema", Tool: t.Name, Err: err}
	}
	return nil
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("the name is empty")
	}
	if len(name) > maxToolNameBytes {
		return fmt.Errorf("the name is %d bytes; at most %d are allowed", len(name), maxToolNameBytes)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("the name holds %q; only letters, digits, '_', '-' and '.' are allowed", r)
		}
	}
	return nil
}

// resolveSchema parses raw as a JSON Schema object and resolves it.
func resolveSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("the tool has no schema")
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("the schema is not a JSON Schema: %w", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("the schema's type is %q; MCP requires \"object\"", s.Type)
	}
	if err := checkTypes(&s, "#"); err != nil {
		return nil, err
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("the schema does not resolve: %w", err)
	}
	return rs, nil
}

// jsonTypes are the type names JSON Schema defines.
var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

var (
	schemaPtr   = reflect.TypeFor[*jsonschema.Schema]()
	schemaSlice = reflect.TypeFor[[]*jsonschema.Schema]()
	schemaMap   = reflect.TypeFor[map[string]*jsonschema.Schema]()
)

// checkTypes refuses a type name JSON Schema does not define anywhere in
// s (jsonschema-go resolves such a schema, but clients reject it).
func checkTypes(s *jsonschema.Schema, at string) error {
	for _, t := range append([]string{s.Type}, s.Types...) {
		if t != "" && !slices.Contains(jsonTypes, t) {
			return fmt.Errorf("the schema at %s has type %q; JSON Schema types are %s", at, t, strings.Join(jsonTypes, ", "))
		}
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		switch f.Type() {
		case schemaPtr:
			if c := f.Interface().(*jsonschema.Schema); c != nil {
				if err := checkTypes(c, at+"/"+name); err != nil {
					return err
				}
			}
		case schemaSlice:
			for j, c := range f.Interface().([]*jsonschema.Schema) {
				if c != nil {
					if err := checkTypes(c, fmt.Sprintf("%s/%s/%d", at, name, j)); err != nil {
						return err
					}
				}
			}
		case schemaMap:
			m := f.Interface().(map[string]*jsonschema.Schema)
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if c := m[k]; c != nil {
					if err := checkTypes(c, at+"/"+name+"/"+k); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
