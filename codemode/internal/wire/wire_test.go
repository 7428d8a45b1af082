package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/agentloom/loom/codemode/internal/wire/wiretest"
	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"
)

// mp encodes a sequence of raw msgpack pieces: each piece is either a
// []byte copied verbatim or a value encoded by vmihailenco (compact ints).
func mp(t testing.TB, pieces ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	enc.SetSortMapKeys(true)
	for _, p := range pieces {
		if raw, ok := p.(raw); ok {
			buf.Write(raw)
			continue
		}
		if err := enc.Encode(p); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// raw is msgpack written verbatim by mp.
type raw []byte

// framed prefixes body with its 4-byte length.
func framed(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// frameMap is a frame body: a map header of n entries, then the pieces.
func frameMap(t testing.TB, n int, pieces ...any) []byte {
	return framed(mp(t, append([]any{raw{0x80 | byte(n)}}, pieces...)...))
}

func TestReadFrameAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []byte
		want Frame
	}{
		{"cap_call", frameMap(t, 4, "v", 1, "id", 7, "kind", "cap_call", "body", map[string]any{"cap": "fs.read", "args": map[string]any{"path": "a"}}),
			Frame{ID: 7, Kind: FrameCapCall, Body: map[string]any{"cap": "fs.read", "args": map[string]any{"path": "a"}}}},
		{"cancel", frameMap(t, 4, "v", 1, "id", 3, "kind", "cancel", "body", nil), Frame{ID: 3, Kind: FrameCancel}},
		{"keys in any order", frameMap(t, 4, "body", nil, "kind", "cancel", "id", 3, "v", 1), Frame{ID: 3, Kind: FrameCancel}},
		{"outcome", frameMap(t, 4, "v", 1, "id", 0, "kind", "outcome", "body", map[string]any{"code": "x"}),
			Frame{Kind: FrameOutcome, Body: map[string]any{"code": "x"}}},
		{"id and v in long forms", frameMap(t, 4, "v", raw{0xcf, 0, 0, 0, 0, 0, 0, 0, 1}, "id", raw{0xd3, 0, 0, 0, 0, 0, 0, 0, 9}, "kind", "cancel", "body", nil),
			Frame{ID: 9, Kind: FrameCancel}},
		{"id 2^53", frameMap(t, 4, "v", 1, "id", uint64(MaxFrameID), "kind", "cancel", "body", nil), Frame{ID: MaxFrameID, Kind: FrameCancel}},
		{"map16 frame", framed(mp(t, raw{0xde, 0, 4}, "v", 1, "id", 1, "kind", "cap_result", "body", true)), Frame{ID: 1, Kind: FrameCapResult, Body: true}},
		{"float32 widens", frameMap(t, 4, "v", 1, "id", 1, "kind", "cap_result", "body", float32(1.5)), Frame{ID: 1, Kind: FrameCapResult, Body: 1.5}},
		{"uint64 past MaxInt64", frameMap(t, 4, "v", 1, "id", 1, "kind", "cap_result", "body", uint64(math.MaxUint64)),
			Frame{ID: 1, Kind: FrameCapResult, Body: uint64(math.MaxUint64)}},
		{"small ints are int64", frameMap(t, 4, "v", 1, "id", 1, "kind", "cap_result", "body", raw{0x93, 0xcc, 200, 0xd0, 0x80, 0xff}),
			Frame{ID: 1, Kind: FrameCapResult, Body: []any{int64(200), int64(-128), int64(-1)}}},
		{"empty bin", frameMap(t, 4, "v", 1, "id", 1, "kind", "cap_result", "body", raw{0xc4, 0}), Frame{ID: 1, Kind: FrameCapResult, Body: []byte{}}},
		{"str and bin", frameMap(t, 4, "v", 1, "id", 1, "kind", "cap_result", "body", []any{"s", []byte("b")}),
			Frame{ID: 1, Kind: FrameCapResult, Body: []any{"s", []byte("b")}}},
		{"nested to the depth bound", frameMap(t, 4, "v", 1, "id", 1, "kind", "cap_result", "body", raw(bytes.Repeat([]byte{0x91}, MaxFrameDepth-2)), raw{0x90}),
			Frame{ID: 1, Kind: FrameCapResult, Body: nestArrays(MaxFrameDepth - 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := bytes.NewReader(tt.in)
			got, err := ReadFrame(r)
			if err != nil {
				t.Fatalf("ReadFrame: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ReadFrame = %#v, want %#v", got, tt.want)
			}
			if r.Len() != 0 {
				t.Fatalf("%d bytes left unread", r.Len())
			}
			if _, err := ReadFrame(r); err != io.EOF {
				t.Fatalf("ReadFrame at the end = %v, want io.EOF", err)
			}
		})
	}
}

// nestArrays is n arrays nested, the innermost empty.
func nestArrays(n int) any {
	v := []any{}
	for range n - 1 {
		v = []any{v}
	}
	return v
}

func TestReadFrameRefuses(t *testing.T) {
	t.Parallel()
	good := func(pieces ...any) []byte { return frameMap(t, 4, pieces...) }
	body := func(b raw) []byte { return good("v", 1, "id", 1, "kind", "cap_result", "body", b) }
	tests := []struct {
		name, reason string
		in           []byte
	}{
		{"length past the bound", "exceeds MaxFrameBytes", binary.BigEndian.AppendUint32(nil, MaxFrameBytes+1)},
		{"truncated length", "into a frame's length", []byte{0, 0}},
		{"truncated body", "bytes into a frame of", framed(mp(t, raw{0x84}, "v", 1, "id", 1))[:9]},
		{"not a map", "not a msgpack map", framed(mp(t, []any{1, 2, 3, 4}))},
		{"empty body", "not a msgpack map", framed(nil)},
		{"three keys", "3 keys", frameMap(t, 3, "v", 1, "id", 1, "kind", "cancel")},
		{"five keys", "5 keys", frameMap(t, 5, "v", 1, "id", 1, "kind", "cancel", "body", nil, "x", 1)},
		{"extra key instead of body", "no \"body\" key", frameMap(t, 4, "v", 1, "id", 1, "kind", "cancel", "bodx", nil)},
		{"repeated key", "repeated", frameMap(t, 4, "v", 1, "v", 1, "kind", "cancel", "body", nil)},
		{"version 2", "version is 2", good("v", 2, "id", 1, "kind", "cancel", "body", nil)},
		{"version a string", "version is a string", good("v", "1", "id", 1, "kind", "cancel", "body", nil)},
		{"negative id", "id -1", good("v", 1, "id", -1, "kind", "cancel", "body", nil)},
		{"id past 2^53", "not an integer in 0..2^53", good("v", 1, "id", uint64(MaxFrameID+1), "kind", "cancel", "body", nil)},
		{"float id", "id a float64", good("v", 1, "id", 1.0, "kind", "cancel", "body", nil)},
		{"kind not a string", "kind is not a string", good("v", 1, "id", 1, "kind", []byte("cancel"), "body", nil)},
		{"unknown kind", "unknown frame kind", good("v", 1, "id", 1, "kind", "heartbeat", "body", nil)},
		{"cancel with a body", "cancel frame has a body", good("v", 1, "id", 1, "kind", "cancel", "body", 0)},
		{"outcome with an id", "outcome frame has id 4", good("v", 1, "id", 4, "kind", "outcome", "body", nil)},
		{"ring with an id", "ring frame has id 2", good("v", 1, "id", 2, "kind", "ring", "body", nil)},
		{"ext", "outside the channel's subset", body(raw{0xd4, 1, 0})},
		{"timestamp", "outside the channel's subset", body(raw{0xd6, 0xff, 0, 0, 0, 0})},
		{"never-used code", "outside the channel's subset", body(raw{0xc1})},
		{"integer map key", "map key is not a string", body(raw{0x81, 0x01, 0xc0})},
		{"bin map key", "map key is not a string", body(raw{0x81, 0xc4, 1, 'k', 0xc0})},
		{"repeated nested key", "repeated", body(raw{0x82, 0xa1, 'k', 0xc0, 0xa1, 'k', 0xc0})},
		{"past the depth bound", "deeper than MaxFrameDepth", body(raw(append(bytes.Repeat([]byte{0x91}, MaxFrameDepth-1), 0x90)))},
		{"array longer than the frame", "array's length exceeds", body(raw{0xdd, 0xff, 0xff, 0xff, 0xff})},
		{"map longer than the frame", "map's length exceeds", body(raw{0xdf, 0xff, 0xff, 0xff, 0xff})},
		{"string longer than the frame", "truncated or malformed", body(raw{0xdb, 0xff, 0xff, 0xff, 0xff})},
		{"truncated float", "truncated or malformed", framed(mp(t, raw{0x84}, "v", 1, "id", 1, "kind", "cap_result", "body", raw{0xcb, 0}))},
		{"bytes after the map", "bytes after the frame's map", framed(append(mp(t, raw{0x84}, "v", 1, "id", 1, "kind", "cancel", "body", nil), 0xc0))},
		{"too many values", "more than MaxFrameValues", body(raw(append([]byte{0xdd, 0, 4, 0, 1}, bytes.Repeat([]byte{0xc0}, MaxFrameValues+1)...)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := bytes.NewReader(tt.in)
			f, err := ReadFrame(r)
			var fe *FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("ReadFrame = %#v, %v; want a *FrameError", f, err)
			}
			if fe.Code != CodeChannelFault || !strings.Contains(fe.Reason, tt.reason) {
				t.Fatalf("FrameError %s %q, want channel_fault with %q", fe.Code, fe.Reason, tt.reason)
			}
			if len(fe.Reason) > 200 {
				t.Fatalf("reason of %d bytes: %.200s…", len(fe.Reason), fe.Reason)
			}
		})
	}
}

// TestReadFrameReadsNoFurther: a length past the bound is refused
// without reading the body; a reader's own failure is passed on wrapped,
// not called a fault.
func TestReadFrameReadsNoFurther(t *testing.T) {
	t.Parallel()
	in := append(binary.BigEndian.AppendUint32(nil, MaxFrameBytes+1), "rest"...)
	r := bytes.NewReader(in)
	if _, err := ReadFrame(r); err == nil {
		t.Fatal("oversized frame accepted")
	}
	if r.Len() != 4 {
		t.Fatalf("read %d bytes past the length", 4-r.Len())
	}
	boom := errors.New("boom")
	_, err := ReadFrame(io.MultiReader(bytes.NewReader([]byte{0, 0, 0, 9, 0x84}), iotest{boom}))
	var fe *FrameError
	if !errors.Is(err, boom) || errors.As(err, &fe) {
		t.Fatalf("reader failure = %v, want it wrapped and not a FrameError", err)
	}
}

// TestReadFrameAllocationIsBounded: a header claiming a length the frame
// does not hold (bin, str, array, map: up to 4 GiB) is refused without
// allocating it. Not parallel: it reads the process's allocation count.
func TestReadFrameAllocationIsBounded(t *testing.T) {
	for _, claim := range []raw{{0xc6, 0xff, 0xff, 0xff, 0xf0}, {0xdb, 0xff, 0xff, 0xff, 0xf0}, {0xdd, 0xff, 0xff, 0xff, 0xf0}, {0xdf, 0xff, 0xff, 0xff, 0xf0},
		{0x81, 0xdb, 0xff, 0xff, 0xff, 0xf0}} {
		in := frameMap(t, 4, "v", 1, "id", 1, "kind", "cap_result", "body", claim)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadFrame(bytes.NewReader(in))
		runtime.ReadMemStats(&after)
		var fe *FrameError
		if !errors.As(err, &fe) {
			t.Fatalf("claim % x: %v, want a FrameError", claim, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Fatalf("claim % x allocated %d bytes for a %d-byte frame", claim, grew, len(in))
		}
	}
}

// iotest is a reader that fails.
type iotest struct{ err error }

func (r iotest) Read([]byte) (int, error) { return 0, r.err }

func TestWriteFrame(t *testing.T) {
	t.Parallel()
	frames := []Frame{
		{ID: 1, Kind: FrameCapResult, Body: ResultOK(map[string]any{"path": "a", "content": []byte("x"), "size": 1, "list": []string{"a"}, "rows": []map[string]any{{"n": int32(-40)}}})},
		{ID: 2, Kind: FrameCapResult, Body: ResultErr("not_found", "no such file")},
		{Kind: FrameOutcome, Body: OutcomeBody("execution_ending", "deadline")},
		{ID: MaxFrameID, Kind: FrameCancel},
		{ID: 3, Kind: FrameCapCall, Body: map[string]any{"cap": "kv.get", "args": map[string]any{"key": "k", "f": float32(0.5), "u": uint8(200)}}},
	}
	want := []Frame{
		{ID: 1, Kind: FrameCapResult, Body: map[string]any{"ok": map[string]any{"path": "a", "content": []byte("x"), "size": int64(1), "list": []any{"a"}, "rows": []any{map[string]any{"n": int64(-40)}}}}},
		{ID: 2, Kind: FrameCapResult, Body: map[string]any{"err": map[string]any{"code": "not_found", "message": "no such file"}}},
		{Kind: FrameOutcome, Body: map[string]any{"code": "execution_ending", "message": "deadline"}},
		{ID: MaxFrameID, Kind: FrameCancel},
		{ID: 3, Kind: FrameCapCall, Body: map[string]any{"cap": "kv.get", "args": map[string]any{"key": "k", "f": 0.5, "u": int64(200)}}},
	}
	for i, f := range frames {
		var buf bytes.Buffer
		if err := WriteFrame(&buf, f); err != nil {
			t.Fatalf("WriteFrame(%v): %v", f, err)
		}
		got, err := ReadFrame(&buf)
		if err != nil || !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("round trip of %#v = %#v, %v; want %#v", f, got, err, want[i])
		}
	}
	// Byte for byte: keys v, id, kind, body, then the body's keys sorted.
	var buf bytes.Buffer
	if err := WriteFrame(&buf, Frame{ID: 300, Kind: FrameCapResult, Body: map[string]any{"b": -33, "a": []byte{7}}}); err != nil {
		t.Fatal(err)
	}
	exact := framed([]byte{0x84, 0xa1, 'v', 1, 0xa2, 'i', 'd', 0xcd, 1, 44, 0xa4, 'k', 'i', 'n', 'd',
		0xaa, 'c', 'a', 'p', '_', 'r', 'e', 's', 'u', 'l', 't', 0xa4, 'b', 'o', 'd', 'y',
		0x82, 0xa1, 'a', 0xc4, 1, 7, 0xa1, 'b', 0xd0, 0xdf})
	if !bytes.Equal(buf.Bytes(), exact) {
		t.Fatalf("WriteFrame bytes\n% x\nwant\n% x", buf.Bytes(), exact)
	}
}

func TestWriteFrameRefuses(t *testing.T) {
	t.Parallel()
	cyclic := []any{nil}
	cyclic[0] = cyclic
	tests := []struct {
		name      string
		f         Frame
		tooLarge  bool
		substring string
	}{
		{"past MaxFrameBytes", Frame{ID: 1, Kind: FrameCapResult, Body: make([]byte, MaxFrameBytes)}, true, "exceeds MaxFrameBytes"},
		{"unknown kind", Frame{ID: 1, Kind: "heartbeat"}, false, "unknown kind"},
		{"id past 2^53", Frame{ID: MaxFrameID + 1, Kind: FrameCancel}, false, "exceeds 2^53"},
		{"unsupported type", Frame{ID: 1, Kind: FrameCapResult, Body: struct{}{}}, false, "cannot hold a struct {}"},
		{"cyclic", Frame{ID: 1, Kind: FrameCapResult, Body: cyclic}, false, "deeper than MaxFrameDepth"},
		{"map[string]string", Frame{ID: 1, Kind: FrameCapResult, Body: map[string]string{}}, false, "cannot hold a map[string]string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			err := WriteFrame(&buf, tt.f)
			var fe *FrameError
			if err == nil || !strings.Contains(err.Error(), tt.substring) || errors.As(err, &fe) != tt.tooLarge {
				t.Fatalf("WriteFrame = %v, want an error with %q (FrameError: %v)", err, tt.substring, tt.tooLarge)
			}
			if tt.tooLarge && fe.Code != CodeFrameTooLarge {
				t.Fatalf("code %s, want %s", fe.Code, CodeFrameTooLarge)
			}
			if buf.Len() != 0 {
				t.Fatalf("wrote %d bytes of a refused frame", buf.Len())
			}
		})
	}
	// One byte under the bound is written.
	var buf bytes.Buffer
	overhead := len(frameMap(t, 4, "v", 1, "id", 1, "kind", "cap_result", "body", raw{0xc6, 0, 0, 0, 0})) - 4
	if err := WriteFrame(&buf, Frame{ID: 1, Kind: FrameCapResult, Body: make([]byte, MaxFrameBytes-overhead)}); err != nil {
		t.Fatalf("a frame of exactly MaxFrameBytes: %v", err)
	}
	if got, err := ReadFrame(&buf); err != nil || len(got.Body.([]byte)) != MaxFrameBytes-overhead {
		t.Fatalf("reading a frame of exactly MaxFrameBytes: %v", err)
	}
}

func TestDecodeCapCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body any
		want *CapCall
	}{
		{"call", map[string]any{"cap": "fs.read", "args": map[string]any{"path": "a"}}, &CapCall{Cap: "fs.read", Args: map[string]any{"path": "a"}}},
		{"empty args", map[string]any{"cap": "job.list", "args": map[string]any{}}, &CapCall{Cap: "job.list", Args: map[string]any{}}},
		{"nil body", nil, nil},
		{"not a map", []any{"fs.read"}, nil},
		{"no args", map[string]any{"cap": "fs.read"}, nil},
		{"args nil", map[string]any{"cap": "fs.read", "args": nil}, nil},
		{"args a list", map[string]any{"cap": "fs.read", "args": []any{}}, nil},
		{"cap empty", map[string]any{"cap": "", "args": map[string]any{}}, nil},
		{"cap bytes", map[string]any{"cap": []byte("fs.read"), "args": map[string]any{}}, nil},
		{"extra key", map[string]any{"cap": "fs.read", "args": map[string]any{}, "x": 1}, nil},
	}
	for _, tt := range tests {
		got, err := DecodeCapCall(tt.body)
		if tt.want == nil {
			var fe *FrameError
			if !errors.As(err, &fe) || fe.Code != CodeChannelFault {
				t.Errorf("%s: DecodeCapCall = %#v, %v; want a channel_fault", tt.name, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, *tt.want) {
			t.Errorf("%s: DecodeCapCall = %#v, %v; want %#v", tt.name, got, err, *tt.want)
		}
	}
}

// oracleEncode is the host's encoder as it was written on vmihailenco's
// primitives (EncodeInt, EncodeString, ...), kept as the oracle of
// appendValue: the hand-written encoder must write the same bytes.
func oracleEncode(enc *msgpack.Encoder, v any, depth int) error {
	switch v := v.(type) {
	case nil:
		return enc.EncodeNil()
	case bool:
		return enc.EncodeBool(v)
	case int:
		return enc.EncodeInt(int64(v))
	case int8:
		return enc.EncodeInt(int64(v))
	case int16:
		return enc.EncodeInt(int64(v))
	case int32:
		return enc.EncodeInt(int64(v))
	case int64:
		return enc.EncodeInt(v)
	case uint:
		return enc.EncodeUint(uint64(v))
	case uint8:
		return enc.EncodeUint(uint64(v))
	case uint16:
		return enc.EncodeUint(uint64(v))
	case uint32:
		return enc.EncodeUint(uint64(v))
	case uint64:
		return enc.EncodeUint(v)
	case float32:
		return enc.EncodeFloat64(float64(v))
	case float64:
		return enc.EncodeFloat64(v)
	case string:
		return enc.EncodeString(v)
	case []byte:
		return enc.EncodeBytes(v)
	case []string:
		if v == nil {
			return enc.EncodeNil()
		}
		if err := enc.EncodeArrayLen(len(v)); err != nil {
			return err
		}
		for _, s := range v {
			if err := enc.EncodeString(s); err != nil {
				return err
			}
		}
		return nil
	case []any:
		if v == nil {
			return enc.EncodeNil()
		}
		if depth >= MaxFrameDepth {
			return errDepth
		}
		if err := enc.EncodeArrayLen(len(v)); err != nil {
			return err
		}
		for _, e := range v {
			if err := oracleEncode(enc, e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case []map[string]any:
		if v == nil {
			return enc.EncodeNil()
		}
		if depth >= MaxFrameDepth {
			return errDepth
		}
		if err := enc.EncodeArrayLen(len(v)); err != nil {
			return err
		}
		for _, e := range v {
			if err := oracleEncode(enc, e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		if v == nil {
			return enc.EncodeNil()
		}
		if depth >= MaxFrameDepth {
			return errDepth
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if err := enc.EncodeMapLen(len(keys)); err != nil {
			return err
		}
		for _, k := range keys {
			if err := enc.EncodeString(k); err != nil {
				return err
			}
			if err := oracleEncode(enc, v[k], depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("codemode: a frame body cannot hold a %T", v)
}

// genEncodable draws a value of WriteFrame's input domain, wider than
// the decoded one: every Go integer and float width, []string,
// []map[string]any and nil slices and maps.
func genEncodable(t *rapid.T, depth int) any {
	kinds := 17
	if depth >= 4 {
		kinds = 13
	}
	switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, "bool")
	case 2:
		return rapid.Int().Draw(t, "int")
	case 3:
		return rapid.Int8().Draw(t, "int8")
	case 4:
		return rapid.Int16().Draw(t, "int16")
	case 5:
		return rapid.Int32().Draw(t, "int32")
	case 6:
		return rapid.Int64().Draw(t, "int64")
	case 7:
		return rapid.Uint8().Draw(t, "uint8")
	case 8:
		return rapid.Uint32().Draw(t, "uint32")
	case 9:
		return rapid.Uint64().Draw(t, "uint64")
	case 10:
		return rapid.Float32().Draw(t, "float32")
	case 11:
		return rapid.Float64().Draw(t, "float64")
	case 12:
		n := rapid.SampledFrom(wiretest.BoundaryLens).Draw(t, "len")
		if rapid.Bool().Draw(t, "bin") {
			if n == 0 && rapid.Bool().Draw(t, "nil") {
				return []byte(nil)
			}
			return make([]byte, n)
		}
		return strings.Repeat("s", n)
	case 13:
		if rapid.Bool().Draw(t, "nil") {
			return []string(nil)
		}
		return rapid.SliceOfN(rapid.String(), 0, 20).Draw(t, "strings")
	case 14:
		n := rapid.IntRange(0, 18).Draw(t, "n")
		a := make([]any, n)
		for i := range a {
			a[i] = genEncodable(t, depth+1)
		}
		return a
	case 15:
		n := rapid.IntRange(0, 3).Draw(t, "n")
		a := make([]map[string]any, n)
		for i := range a {
			a[i] = map[string]any{"k": genEncodable(t, depth+1)}
		}
		return a
	}
	n := rapid.IntRange(0, 18).Draw(t, "n")
	m := make(map[string]any, n)
	for range n {
		m[rapid.StringN(0, 40, -1).Draw(t, "key")] = genEncodable(t, depth+1)
	}
	return m
}

// TestAppendValueMatchesTheOracle: on WriteFrame's whole input domain
// the hand-written encoder writes exactly the bytes of the encoder on
// vmihailenco's primitives it replaced.
func TestAppendValueMatchesTheOracle(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		v := genEncodable(t, 0)
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		if err := oracleEncode(enc, v, 1); err != nil {
			t.Fatal(err)
		}
		got, err := appendValue(nil, v, 1)
		if err != nil || !bytes.Equal(got, buf.Bytes()) {
			t.Fatalf("appendValue(%#v) =\n% x, %v\nthe oracle wrote\n% x", v, got, err, buf.Bytes())
		}
		// The host's own answer body is ResultOK's, byte for byte.
		buf.Reset()
		if err := oracleEncode(enc, ResultOK(v), 1); err != nil {
			t.Fatal(err)
		}
		got, err = appendValue(nil, okBody{v}, 1)
		if err != nil || !bytes.Equal(got, buf.Bytes()) {
			t.Fatalf("okBody{%#v} =\n% x, %v\nResultOK's encoding is\n% x", v, got, err, buf.Bytes())
		}
	})
}
