package client

import "math"

// Fields reads a result map into typed values. The first missing or
// mistyped field is remembered and reported by Err as a bad_result
// *Error; later reads return zero values.
type Fields struct {
	m   map[string]any
	err *Error
}

// Read starts reading m.
func Read(m map[string]any) *Fields { return &Fields{m: m} }

// Err returns nil when every field read so far was present and of its
// type, else a bad_result *Error naming capName and the first bad field.
func (f *Fields) Err(capName string) error {
	if f.err == nil {
		return nil
	}
	return f.err.at(capName)
}

func (f *Fields) bad(key, want string) {
	if f.err == nil {
		f.err = &Error{Code: BadResult, Message: "the host's result field " + key + " is missing or not " + want}
	}
}

func (f *Fields) get(key, want string) (any, bool) {
	if f.err != nil {
		return nil, false
	}
	v, ok := f.m[key]
	if !ok {
		f.bad(key, want)
	}
	return v, ok
}

// Str reads a string field.
func (f *Fields) Str(key string) string {
	v, ok := f.get(key, "a string")
	if !ok {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		f.bad(key, "a string")
	}
	return s
}

// Bytes reads a byte field (bin, or str).
func (f *Fields) Bytes(key string) []byte {
	v, ok := f.get(key, "bytes")
	if !ok {
		return nil
	}
	switch b := v.(type) {
	case []byte:
		return b
	case string:
		return []byte(b)
	case nil:
		return nil
	}
	f.bad(key, "bytes")
	return nil
}

// Int reads an integer field.
func (f *Fields) Int(key string) int {
	v, ok := f.get(key, "an integer")
	if !ok {
		return 0
	}
	n, ok := v.(int64)
	if !ok || n > math.MaxInt || n < math.MinInt {
		f.bad(key, "an integer")
		return 0
	}
	return int(n)
}

// Has reports whether the result holds key, whatever its value.
func (f *Fields) Has(key string) bool {
	_, ok := f.m[key]
	return ok
}

// OptInt reads an integer field that may be absent.
func (f *Fields) OptInt(key string) (int, bool) {
	if _, ok := f.m[key]; !ok || f.err != nil {
		return 0, false
	}
	n := f.Int(key)
	return n, f.err == nil
}

// Bool reads a boolean field.
func (f *Fields) Bool(key string) bool {
	v, ok := f.get(key, "a boolean")
	if !ok {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		f.bad(key, "a boolean")
	}
	return b
}

// Strings reads a list of strings.
func (f *Fields) Strings(key string) []string {
	list := f.list(key, "a list of strings")
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			f.bad(key, "a list of strings")
			return nil
		}
		out = append(out, s)
	}
	return out
}

// Maps reads a list of maps, calling each for every element in order.
func (f *Fields) Maps(key string, each func(*Fields)) {
	for _, v := range f.list(key, "a list of maps") {
		m, ok := v.(map[string]any)
		if !ok {
			f.bad(key, "a list of maps")
			return
		}
		sub := &Fields{m: m}
		each(sub)
		if sub.err != nil {
			f.err = &Error{Code: BadResult, Message: "in the list " + key + ": " + sub.err.Message}
			return
		}
	}
}

// Map reads a map field that may be absent or nil, calling each with it
// when present; it reports whether it was.
func (f *Fields) Map(key string, each func(*Fields)) bool {
	v, ok := f.m[key]
	if !ok || v == nil || f.err != nil {
		return false
	}
	m, ok := v.(map[string]any)
	if !ok {
		f.bad(key, "a map")
		return false
	}
	sub := &Fields{m: m}
	each(sub)
	if sub.err != nil {
		f.err = &Error{Code: BadResult, Message: "in the map " + key + ": " + sub.err.Message}
	}
	return true
}

func (f *Fields) list(key, want string) []any {
	v, ok := f.get(key, want)
	if !ok || v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		f.bad(key, want)
	}
	return l
}
