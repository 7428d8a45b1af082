package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// MaxArgumentBytes bounds the raw JSON arguments of one call.
const MaxArgumentBytes = 16 << 20

// ArgError is a refusal of a call's arguments. It is always reported to the
// model in band, naming what was wrong and what is accepted.
type ArgError struct {
	// Code is CodeArgumentsNotObject, CodeUnknownProperty,
	// CodeInvalidArguments or CodeArgumentsTooLarge.
	Code Code
	// Unknown lists refused property names (for CodeUnknownProperty).
	Unknown []string
	// Known lists the properties the tool accepts.
	Known []string
	// Reason describes the problem in words.
	Reason string
}

func (e *ArgError) Error() string {
	s := e.Reason
	if len(e.Known) > 0 {
		s += "; accepted properties: " + strings.Join(e.Known, ", ")
	}
	return s
}

// TypeSchema makes every value of Type in an argument struct use Schema
// in place of the schema inferred for it (for example an enum of accepted
// strings, or a string form of a struct with its own JSON encoding).
type TypeSchema struct {
	Type   reflect.Type
	Schema *jsonschema.Schema
}

// Typed completes t with a Schema derived from A and a Run that decodes
// the arguments into A before calling run. A is a struct whose json tags
// name the properties; fields without omitempty are required; a
// `jsonschema:"..."` tag is the property's description; overrides replace
// the inferred schema of the types they name. Because the schema and the
// decoder come from the same struct they cannot drift.
//
// If A cannot be described as a schema, the returned Tool has no Schema
// and Registry.Register refuses it with the reason.
func Typed[A any](t Tool, run func(ctx context.Context, c *Call, args A) Outcome, overrides ...TypeSchema) Tool {
	d, err := newDecoder[A](overrides)
	if err != nil {
		t.Schema = nil
		t.Run = func(context.Context, *Call, json.RawMessage) Outcome {
			return Fail(CodeToolMisconfigured, fmt.Sprintf("tool %s has no usable schema: %v", t.Name, err))
		}
		return t
	}
	t.Schema = d.raw
	name := t.Name
	t.Run = func(ctx context.Context, c *Call, raw json.RawMessage) Outcome {
		var a A
		if err := d.decode(raw, &a); err != nil {
			var ae *ArgError
			errors.As(err, &ae)
			return Fail(ae.Code, fmt.Sprintf("invalid arguments for %s: %v", name, err)).
				WithDetails(ArgErrorDetails{Unknown: ae.Unknown, Known: ae.Known})
		}
		return run(ctx, c, a)
	}
	return t
}

// ArgErrorDetails is the Details of an argument refusal.
type ArgErrorDetails struct {
	Unknown []string `json:"unknown,omitempty"`
	Known   []string `json:"known,omitempty"`
}

// decoder holds one argument struct's schema, resolved once.
type decoder struct {
	raw      json.RawMessage
	resolved *jsonschema.Resolved
	known    []string
}

func newDecoder[A any](overrides []TypeSchema) (*decoder, error) {
	var fo jsonschema.ForOptions
	for _, o := range overrides {
		if fo.TypeSchemas == nil {
			fo.TypeSchemas = map[reflect.Type]*jsonschema.Schema{}
		}
		fo.TypeSchemas[o.Type] = o.Schema
	}
	s, err := jsonschema.For[A](&fo)
	if err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("arguments must be a struct, got schema type %q", s.Type)
	}
	dropNullable(s)
	if s.Properties == nil {
		// An object with no properties still says so explicitly; some
		// clients reject an object schema without "properties".
		s.Properties = map[string]*jsonschema.Schema{}
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	known := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		known = append(known, k)
	}
	sort.Strings(known)
	return &decoder{raw: raw, resolved: rs, known: known}, nil
}

// dropNullable rewrites the inferred type ["null", T] of slices and
// pointers to plain T. A model never needs to send null (omitting an
// optional property says the same), and several providers reject type
// arrays in tool schemas.
func dropNullable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		dropNullable(p)
	}
	dropNullable(s.Items)
	dropNullable(s.AdditionalProperties)
}

// decode checks raw against the schema and unmarshals it into dst.
func (d *decoder) decode(raw json.RawMessage, dst any) error {
	if len(raw) > MaxArgumentBytes {
		return &ArgError{Code: CodeArgumentsTooLarge, Reason: fmt.Sprintf("arguments are %d bytes; at most %d are accepted", len(raw), MaxArgumentBytes)}
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = json.RawMessage("{}")
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return &ArgError{Code: CodeArgumentsNotObject, Known: d.known, Reason: "arguments must be one JSON object"}
	}
	var unknown []string
	for k := range obj {
		if !containsString(d.known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return &ArgError{Code: CodeUnknownProperty, Unknown: unknown, Known: d.known,
			Reason: "unknown property " + quoteAll(unknown)}
	}
	if err := d.resolved.Validate(obj); err != nil {
		return &ArgError{Code: CodeInvalidArguments, Known: d.known, Reason: cleanValidation(err)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return &ArgError{Code: CodeInvalidArguments, Known: d.known, Reason: err.Error()}
	}
	return nil
}

func containsString(list []string, s string) bool {
	i := sort.SearchStrings(list, s)
	return i < len(list) && list[i] == s
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// cleanValidation shortens a validator error to its last, most specific
// clause, which names the property and the rule it broke.
func cleanValidation(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "validating root: ")
	return s
}
