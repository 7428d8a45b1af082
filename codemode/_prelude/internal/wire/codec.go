// Package wire is the program side of the capability channel's encoding:
// a small msgpack codec for the subset the channel carries, and the
// length-prefixed frames around it. Programs never import it (the vetter
// refuses cap/internal/...); the cap packages use it through the client.
//
// The subset: nil, bool, integers (encoded in the shortest form, as
// github.com/vmihailenco/msgpack/v5 does with compact ints), float64,
// str, bin, arrays and maps with string keys. Decoding yields nil, bool,
// int64 (uint64 only above math.MaxInt64), float64 (a float32 widened),
// string, []byte, []any and map[string]any. No ext, no timestamp.
package wire

import (
	"errors"
	"math"
	"slices"
	"strconv"
)

// smallMapKeys is how many keys a map may have for Append to sort them
// without allocating.
const smallMapKeys = 8

// MaxDepth is how deeply arrays and maps may nest in one value. A value
// nested deeper is refused by both Append and Decode.
const MaxDepth = 32

// msgpack type codes of the subset.
const (
	cNil     = 0xc0
	cFalse   = 0xc2
	cTrue    = 0xc3
	cBin8    = 0xc4
	cBin16   = 0xc5
	cBin32   = 0xc6
	cFloat32 = 0xca
	cFloat64 = 0xcb
	cUint8   = 0xcc
	cUint16  = 0xcd
	cUint32  = 0xce
	cUint64  = 0xcf
	cInt8    = 0xd0
	cInt16   = 0xd1
	cInt32   = 0xd2
	cInt64   = 0xd3
	cStr8    = 0xd9
	cStr16   = 0xda
	cStr32   = 0xdb
	cArray16 = 0xdc
	cArray32 = 0xdd
	cMap16   = 0xde
	cMap32   = 0xdf
)

// ErrDepth is returned for a value nested deeper than MaxDepth.
var ErrDepth = errors.New("msgpack value nested deeper than " + strconv.Itoa(MaxDepth))

// Append appends the msgpack encoding of v to b. v may be nil, bool,
// int, int64, uint64, float64, string, []byte, []string, []any,
// []map[string]any or map[string]any (keys written in sorted order), to
// any depth up to MaxDepth. A nil []byte, slice or map encodes as nil.
func Append(b []byte, v any) ([]byte, error) {
	return appendValue(b, v, 0)
}

func appendValue(b []byte, v any, depth int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, cNil), nil
	case bool:
		if v {
			return append(b, cTrue), nil
		}
		return append(b, cFalse), nil
	case int:
		return appendInt(b, int64(v)), nil
	case int64:
		return appendInt(b, v), nil
	case uint64:
		return appendUint(b, v), nil
	case float64:
		return append8(append(b, cFloat64), math.Float64bits(v)), nil
	case string:
		return append(appendStrLen(b, len(v)), v...), nil
	case []byte:
		if v == nil {
			return append(b, cNil), nil
		}
		return append(appendBinLen(b, len(v)), v...), nil
	case []string:
		if v == nil {
			return append(b, cNil), nil
		}
		b = appendLen(b, len(v), 0x90, 16, cArray16, cArray32)
		for _, s := range v {
			b = append(appendStrLen(b, len(s)), s...)
		}
		return b, nil
	case []any:
		return appendList(b, v, depth)
	case []map[string]any:
		return appendList(b, v, depth)
	case map[string]any:
		if v == nil {
			return append(b, cNil), nil
		}
		if depth >= MaxDepth {
			return nil, ErrDepth
		}
		var small [smallMapKeys]string
		keys := small[:0]
		if len(v) > smallMapKeys {
			keys = make([]string, 0, len(v))
		}
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = appendLen(b, len(v), 0x80, 16, cMap16, cMap32)
		for _, k := range keys {
			b = append(appendStrLen(b, len(k)), k...)
			var err error
			if b, err = appendValue(b, v[k], depth+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, errors.New("msgpack: cannot encode a value of this Go type")
}

// appendList appends list as an array of its elements (nil as nil), one
// level below depth.
func appendList[T any](b []byte, list []T, depth int) ([]byte, error) {
	if list == nil {
		return append(b, cNil), nil
	}
	if depth >= MaxDepth {
		return nil, ErrDepth
	}
	b = appendLen(b, len(list), 0x90, 16, cArray16, cArray32)
	for _, e := range list {
		var err error
		if b, err = appendValue(b, e, depth+1); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendUint(b, uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, cInt8, byte(n))
	case n >= math.MinInt16:
		return append2(append(b, cInt16), uint16(n))
	case n >= math.MinInt32:
		return append4(append(b, cInt32), uint32(n))
	}
	return append8(append(b, cInt64), uint64(n))
}

func appendUint(b []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(b, byte(n))
	case n <= math.MaxUint8:
		return append(b, cUint8, byte(n))
	case n <= math.MaxUint16:
		return append2(append(b, cUint16), uint16(n))
	case n <= math.MaxUint32:
		return append4(append(b, cUint32), uint32(n))
	}
	return append8(append(b, cUint64), n)
}

func appendStrLen(b []byte, n int) []byte {
	switch {
	case n < 32:
		return append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		return append(b, cStr8, byte(n))
	case n <= math.MaxUint16:
		return append2(append(b, cStr16), uint16(n))
	}
	return append4(append(b, cStr32), uint32(n))
}

func appendBinLen(b []byte, n int) []byte {
	switch {
	case n <= math.MaxUint8:
		return append(b, cBin8, byte(n))
	case n <= math.MaxUint16:
		return append2(append(b, cBin16), uint16(n))
	}
	return append4(append(b, cBin32), uint32(n))
}

// appendLen writes an array or map header: the fix form below fixMax,
// else the 16- or 32-bit form.
func appendLen(b []byte, n int, fix byte, fixMax int, c16, c32 byte) []byte {
	switch {
	case n < fixMax:
		return append(b, fix|byte(n))
	case n <= math.MaxUint16:
		return append2(append(b, c16), uint16(n))
	}
	return append4(append(b, c32), uint32(n))
}

func append2(b []byte, n uint16) []byte { return append(b, byte(n>>8), byte(n)) }

func append4(b []byte, n uint32) []byte {
	return append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func append8(b []byte, n uint64) []byte {
	return append4(append4(b, uint32(n>>32)), uint32(n))
}

// Decode decodes exactly one msgpack value filling all of b. It never
// panics: anything outside the subset, truncated, nested past MaxDepth,
// a map key that is not a string, a repeated map key or bytes left over
// is an error.
func Decode(b []byte) (any, error) {
	d := decoder{b: b}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.off != len(d.b) {
		return nil, errors.New("msgpack: " + strconv.Itoa(len(d.b)-d.off) + " bytes after the value")
	}
	return v, nil
}

// decoder reads from b at off.
type decoder struct {
	b   []byte
	off int
}

var errShort = errors.New("msgpack: value truncated")

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.off {
		return nil, errShort
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p, nil
}

func (d *decoder) uint(n int) (uint64, error) {
	p, err := d.take(n)
	if err != nil {
		return 0, err
	}
	var u uint64
	for _, c := range p {
		u = u<<8 | uint64(c)
	}
	return u, nil
}

func (d *decoder) value(depth int) (any, error) {
	p, err := d.take(1)
	if err != nil {
		return nil, err
	}
	c := p[0]
	switch {
	case c <= 0x7f:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	case c >= 0xa0 && c <= 0xbf:
		return d.str(int(c & 0x1f))
	case c >= 0x90 && c <= 0x9f:
		return d.array(int(c&0x0f), depth)
	case c >= 0x80 && c <= 0x8f:
		return d.dict(int(c&0x0f), depth)
	}
	switch c {
	case cNil:
		return nil, nil
	case cFalse:
		return false, nil
	case cTrue:
		return true, nil
	case cFloat32:
		u, err := d.uint(4)
		return float64(math.Float32frombits(uint32(u))), err
	case cFloat64:
		u, err := d.uint(8)
		return math.Float64frombits(u), err
	case cUint8, cUint16, cUint32, cUint64:
		u, err := d.uint(1 << (c - cUint8))
		if err != nil {
			return nil, err
		}
		if u > math.MaxInt64 {
			return u, nil
		}
		return int64(u), nil
	case cInt8:
		u, err := d.uint(1)
		return int64(int8(u)), err
	case cInt16:
		u, err := d.uint(2)
		return int64(int16(u)), err
	case cInt32:
		u, err := d.uint(4)
		return int64(int32(u)), err
	case cInt64:
		u, err := d.uint(8)
		return int64(u), err
	case cStr8, cStr16, cStr32:
		n, err := d.uint(1 << (c - cStr8))
		if err != nil {
			return nil, err
		}
		return d.str(int(min(n, math.MaxInt32)))
	case cBin8, cBin16, cBin32:
		n, err := d.uint(1 << (c - cBin8))
		if err != nil {
			return nil, err
		}
		p, err := d.take(int(min(n, math.MaxInt32)))
		if err != nil {
			return nil, err
		}
		return append([]byte{}, p...), nil
	case cArray16, cArray32:
		n, err := d.uint(2 << (c - cArray16))
		if err != nil {
			return nil, err
		}
		return d.array(int(min(n, math.MaxInt32)), depth)
	case cMap16, cMap32:
		n, err := d.uint(2 << (c - cMap16))
		if err != nil {
			return nil, err
		}
		return d.dict(int(min(n, math.MaxInt32)), depth)
	}
	return nil, errors.New("msgpack: type code 0x" + strconv.FormatUint(uint64(c), 16) + " is outside the channel's subset")
}

func (d *decoder) str(n int) (any, error) {
	p, err := d.take(n)
	if err != nil {
		return nil, err
	}
	return string(p), nil
}

func (d *decoder) array(n, depth int) (any, error) {
	if depth >= MaxDepth {
		return nil, ErrDepth
	}
	if n > len(d.b)-d.off {
		return nil, errShort
	}
	a := make([]any, n)
	for i := range a {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a[i] = v
	}
	return a, nil
}

func (d *decoder) dict(n, depth int) (any, error) {
	if depth >= MaxDepth {
		return nil, ErrDepth
	}
	if n > (len(d.b)-d.off)/2 {
		return nil, errShort
	}
	m := make(map[string]any, n)
	for range n {
		key, err := d.key()
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, errors.New("msgpack: map key " + strconv.Quote(key) + " repeated")
		}
		if m[key], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// key reads a map key, which must be a str.
func (d *decoder) key() (string, error) {
	p, err := d.take(1)
	if err != nil {
		return "", err
	}
	var n uint64
	switch c := p[0]; {
	case c >= 0xa0 && c <= 0xbf:
		n = uint64(c & 0x1f)
	case c == cStr8 || c == cStr16 || c == cStr32:
		if n, err = d.uint(1 << (c - cStr8)); err != nil {
			return "", err
		}
	default:
		return "", errors.New("msgpack: a map key is not a string")
	}
	k, err := d.take(int(min(n, math.MaxInt32)))
	return string(k), err
}
