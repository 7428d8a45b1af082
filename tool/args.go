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
	"unicode/utf8"

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

// ErrorCode returns e.Code as a string (see CodedError).
func (e *ArgError) ErrorCode() string { return string(e.Code) }

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
	types    map[string]string // property name → its schema type, "" when none
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
	types := make(map[string]string, len(s.Properties))
	for k, p := range s.Properties {
		known = append(known, k)
		types[k] = p.Type
	}
	sort.Strings(known)
	return &decoder{raw: raw, resolved: rs, known: known, types: types}, nil
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
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		reason := "arguments must be one JSON object"
		var se *json.SyntaxError
		if errors.As(err, &se) {
			reason += fmt.Sprintf(" (this is not valid JSON: %v at byte %d)", se, se.Offset)
		}
		return &ArgError{Code: CodeArgumentsNotObject, Known: d.known, Reason: reason}
	}
	var unknown []string
	for k := range fields {
		if !containsString(d.known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return &ArgError{Code: CodeUnknownProperty, Unknown: unknown, Known: d.known,
			Reason: "unknown property " + quoteAll(unknown)}
	}
	obj, err := d.values(fields)
	if err != nil {
		return err
	}
	if err := d.resolved.Validate(obj); err != nil {
		return &ArgError{Code: CodeInvalidArguments, Known: d.known, Reason: clipReason(cleanValidation(err))}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return &ArgError{Code: CodeInvalidArguments, Known: d.known, Reason: decodeReason(err)}
	}
	return nil
}

// values decodes each property's value, refusing a null (never needed:
// omitting an optional property says the same) and a number no JSON
// decoder can hold, each naming the property and what it accepts.
func (d *decoder) values(fields map[string]json.RawMessage) (map[string]any, error) {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	obj := make(map[string]any, len(fields))
	for _, k := range names {
		v := bytes.TrimSpace(fields[k])
		if bytes.Equal(v, []byte("null")) {
			want := "a value"
			if t := d.types[k]; t != "" {
				want = "a value of type " + t
			}
			return nil, &ArgError{Code: CodeInvalidArguments, Known: d.known,
				Reason: fmt.Sprintf("property %q is null; omit it or give %s", k, want)}
		}
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return nil, &ArgError{Code: CodeInvalidArguments, Known: d.known,
				Reason: fmt.Sprintf("property %q: %s", k, decodeReason(err))}
		}
		obj[k] = x
	}
	return obj, nil
}

// decodeReason renders a decoding failure of a value without repeating
// more of the value than MaxQuotedBytes.
func decodeReason(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		what := strings.TrimPrefix(te.Value, "number ")
		if te.Field != "" {
			return fmt.Sprintf("property %q: %s does not fit a %s", te.Field, quoted(what), te.Type)
		}
		return fmt.Sprintf("%s does not fit a %s", quoted(what), te.Type)
	}
	return clipReason(err.Error())
}

// MaxReasonBytes bounds the reason an argument refusal gives, so a value
// the validator quotes cannot make the answer as large as the arguments.
const MaxReasonBytes = 512

// clipReason cuts s to MaxReasonBytes on a rune boundary, saying so.
func clipReason(s string) string {
	if len(s) <= MaxReasonBytes {
		return s
	}
	cut := MaxReasonBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes cut)", len(s)-cut)
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
