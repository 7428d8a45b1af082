package codemode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/agentloom/loom/tool"
)

// The channel's framing: a 4-byte big-endian length N, then N bytes of
// one msgpack map {v, id, kind, body}. The program's channel is
// broker.ExtraFileFD; the prelude hard-codes the same number.
const (
	// MaxFrameBytes is the largest frame body either side accepts
	// (16 MiB). A longer length prefix is a channel fault and nothing
	// further is read.
	MaxFrameBytes = 16 << 20
	// ProtocolVersion is the value of every frame's "v" key.
	ProtocolVersion = 1
	// MaxFrameDepth is how deeply arrays and maps may nest inside a
	// frame, the frame's own map counting as the first level. The
	// prelude's codec holds the same bound.
	MaxFrameDepth = 32
	// MaxFrameValues is how many msgpack values (every nil, number,
	// string, array, map and map key counts one) a frame read by the host
	// may hold, so a 16 MiB frame cannot decode into gigabytes.
	MaxFrameValues = 1 << 18
	// MaxFrameID is the largest frame id (2^53, exact in a float64).
	MaxFrameID = 1 << 53
)

// FrameKind names what a frame carries.
type FrameKind string

// The frame kinds.
const (
	// FrameCapCall (program to host): a capability call; the body is
	// {cap, args} (see DecodeCapCall) and the id is the call's.
	FrameCapCall FrameKind = "cap_call"
	// FrameCancel (program to host): abandon the in-flight call of this
	// id; the body is nil.
	FrameCancel FrameKind = "cancel"
	// FrameCapResult (host to program): the answer to the call of this
	// id; the body is ResultOK or ResultErr.
	FrameCapResult FrameKind = "cap_result"
	// FrameOutcome (host to program): the host's one terminal frame, id
	// 0, body OutcomeBody; the host writes nothing after it.
	FrameOutcome FrameKind = "outcome"
)

// Frame is one decoded frame.
//
// Body, as ReadFrame decodes it, holds only: nil, bool, int64 (every
// integer that fits), uint64 (only above math.MaxInt64), float64 (a
// float32 widened), string (msgpack str, bytes as sent, not checked for
// UTF-8), []byte (msgpack bin), []any and map[string]any, nested at most
// MaxFrameDepth deep.
type Frame struct {
	ID   uint64
	Kind FrameKind
	Body any
}

// CapCall is a decoded cap_call body.
type CapCall struct {
	// Cap is the capability, "<package>.<verb>" ("fs.read"); only its
	// being a non-empty string is checked here.
	Cap string
	// Args are the call's arguments, never nil, with values of the types
	// Frame documents.
	Args map[string]any
}

// FrameError is a malformed or oversized frame. Code is CodeChannelFault
// for anything read, CodeFrameTooLarge for a frame WriteFrame refused.
type FrameError struct {
	Code   tool.Code
	Reason string
}

// Error renders the code and the reason.
func (e *FrameError) Error() string { return string(e.Code) + ": " + e.Reason }

func faultf(format string, args ...any) *FrameError {
	return &FrameError{Code: CodeChannelFault, Reason: fmt.Sprintf(format, args...)}
}

// ReadFrame reads one frame from r. It returns io.EOF, unwrapped, when r
// ends cleanly before a frame; an error of r itself wrapped with %w;
// and a *FrameError for anything malformed: a length past MaxFrameBytes
// (nothing further is read), a truncated frame, bytes that are not
// exactly one msgpack map of exactly the keys v, id, kind and body, v
// other than ProtocolVersion, an id that is not an integer in
// 0..MaxFrameID, a kind not among the four, a cancel with a body, an
// outcome with a non-zero id, a value outside the channel's msgpack
// subset (ext, timestamp, a non-string map key, a repeated map key), or
// past MaxFrameDepth or MaxFrameValues. It never panics and allocates at
// most a small multiple of the bytes it read.
func ReadFrame(r io.Reader) (Frame, error) {
	var hdr [4]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		switch {
		case err == io.EOF:
			return Frame{}, io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			return Frame{}, faultf("channel ended %d bytes into a frame's length", n)
		}
		return Frame{}, fmt.Errorf("reading a frame: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrameBytes {
		return Frame{}, faultf("frame length %d exceeds MaxFrameBytes (%d)", n, MaxFrameBytes)
	}
	if n <= smallFrameBytes {
		// Small frames, the common case, are read into a buffer of their
		// size at once; larger ones grow with what actually arrives, so a
		// length that lies costs no more than the bytes sent.
		buf := make([]byte, n)
		if got, err := io.ReadFull(r, buf); err != nil {
			return Frame{}, frameReadError(got, n, err)
		}
		return decodeFrame(buf)
	}
	var buf bytes.Buffer
	buf.Grow(smallFrameBytes)
	got, err := io.CopyN(&buf, r, int64(n))
	if err != nil {
		return Frame{}, frameReadError(int(got), n, err)
	}
	return decodeFrame(buf.Bytes())
}

// smallFrameBytes is the largest frame ReadFrame reads into a buffer of
// the frame's claimed size before it has arrived.
const smallFrameBytes = 64 << 10

// maxPreallocEntries bounds the entries an array or map is allocated
// with before its elements are decoded: a header's length is only a
// claim, and trusting it at every nesting level let one frame allocate
// gigabytes before it was refused. Past it, the container grows as
// elements actually decode.
const maxPreallocEntries = 1024

func frameReadError(got int, n uint32, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return faultf("channel ended %d bytes into a frame of %d", got, n)
	}
	return fmt.Errorf("reading a frame: %w", err)
}

// decodeFrame decodes one frame body.
func decodeFrame(b []byte) (Frame, error) {
	src := bytes.NewReader(b)
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(src)
	d := &frameDecoder{src: src, dec: dec}
	c, err := d.dec.PeekCode()
	if err != nil || !(msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32) {
		return Frame{}, faultf("a frame is not a msgpack map")
	}
	v, err := d.value(0)
	if err != nil {
		return Frame{}, err
	}
	if src.Len() != 0 {
		return Frame{}, faultf("%d bytes after the frame's map", src.Len())
	}
	m := v.(map[string]any)
	if len(m) != 4 {
		return Frame{}, faultf("a frame has %d keys, want exactly v, id, kind and body", len(m))
	}
	for _, k := range []string{"v", "id", "kind", "body"} {
		if _, ok := m[k]; !ok {
			return Frame{}, faultf("a frame has no %q key", k)
		}
	}
	if ver, ok := m["v"].(int64); !ok || ver != ProtocolVersion {
		return Frame{}, faultf("frame version is %s, want %d", describe(m["v"]), ProtocolVersion)
	}
	id, ok := m["id"].(int64)
	if !ok || id < 0 || id > MaxFrameID {
		return Frame{}, faultf("frame id %s is not an integer in 0..2^53", describe(m["id"]))
	}
	kind, ok := m["kind"].(string)
	if !ok {
		return Frame{}, faultf("frame kind is not a string")
	}
	f := Frame{ID: uint64(id), Kind: FrameKind(kind), Body: m["body"]}
	switch f.Kind {
	case FrameCapCall, FrameCapResult:
	case FrameCancel:
		if f.Body != nil {
			return Frame{}, faultf("a cancel frame has a body")
		}
	case FrameOutcome:
		if f.ID != 0 {
			return Frame{}, faultf("an outcome frame has id %d, want 0", f.ID)
		}
	default:
		return Frame{}, faultf("unknown frame kind %.64q", kind)
	}
	return f, nil
}

// describe names a decoded value for a fault's reason without quoting
// it whole: an integer's value, else its Go type.
func describe(v any) string {
	switch v := v.(type) {
	case int64, uint64:
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("a %T", v)
}

// frameDecoder walks one frame with vmihailenco's primitive decoders,
// admitting only the channel's subset.
type frameDecoder struct {
	src    *bytes.Reader
	dec    *msgpack.Decoder
	values int
}

func (d *frameDecoder) value(depth int) (any, error) {
	d.values++
	if d.values > MaxFrameValues {
		return nil, faultf("a frame holds more than MaxFrameValues (%d) values", MaxFrameValues)
	}
	c, err := d.dec.PeekCode()
	if err != nil {
		return nil, faultf("frame truncated")
	}
	var v any
	switch {
	case c == msgpcode.Nil:
		err = d.dec.DecodeNil()
	case c == msgpcode.False || c == msgpcode.True:
		v, err = d.dec.DecodeBool()
	case c == msgpcode.Uint64:
		var u uint64
		u, err = d.dec.DecodeUint64()
		if u <= math.MaxInt64 {
			v = int64(u)
		} else {
			v = u
		}
	case msgpcode.IsFixedNum(c), c >= msgpcode.Uint8 && c <= msgpcode.Uint32, c >= msgpcode.Int8 && c <= msgpcode.Int64:
		v, err = d.dec.DecodeInt64()
	case c == msgpcode.Float || c == msgpcode.Double:
		v, err = d.dec.DecodeFloat64()
	case msgpcode.IsString(c):
		var b []byte
		b, err = d.payload()
		v = string(b)
	case msgpcode.IsBin(c):
		v, err = d.payload()
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		return d.array(depth)
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		return d.dict(depth)
	default:
		return nil, faultf("msgpack type 0x%02x is outside the channel's subset", c)
	}
	if err != nil {
		return nil, faultf("frame truncated or malformed: %v", err)
	}
	return v, nil
}

// payload reads a str or bin value's bytes, never allocating more than
// the frame holds. (vmihailenco's DecodeBytes allocates whatever length
// a bin header claims, up to 4 GiB, before reading a byte of it.) The
// decoder reads src directly, a bytes.Reader being an io.ByteScanner, so
// reading the payload from src keeps the two in step.
func (d *frameDecoder) payload() ([]byte, error) {
	n, err := d.dec.DecodeBytesLen()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > d.src.Len() {
		return nil, io.ErrUnexpectedEOF
	}
	b := make([]byte, n)
	_, err = io.ReadFull(d.src, b)
	return b, err
}

func (d *frameDecoder) array(depth int) (any, error) {
	if depth >= MaxFrameDepth {
		return nil, faultf("a frame nests deeper than MaxFrameDepth (%d)", MaxFrameDepth)
	}
	n, err := d.dec.DecodeArrayLen()
	if err != nil || n < 0 || n > d.src.Len() {
		return nil, faultf("an array's length exceeds its frame")
	}
	a := make([]any, 0, min(n, maxPreallocEntries))
	for range n {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
	return a, nil
}

func (d *frameDecoder) dict(depth int) (any, error) {
	if depth >= MaxFrameDepth {
		return nil, faultf("a frame nests deeper than MaxFrameDepth (%d)", MaxFrameDepth)
	}
	n, err := d.dec.DecodeMapLen()
	if err != nil || n < 0 || n > d.src.Len()/2 {
		return nil, faultf("a map's length exceeds its frame")
	}
	m := make(map[string]any, min(n, maxPreallocEntries))
	for range n {
		d.values++
		c, err := d.dec.PeekCode()
		if err != nil || !msgpcode.IsString(c) {
			return nil, faultf("a map key is not a string")
		}
		b, err := d.payload()
		if err != nil {
			return nil, faultf("frame truncated in a map key")
		}
		k := string(b)
		if _, dup := m[k]; dup {
			return nil, faultf("map key %.64q repeated", k)
		}
		if m[k], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// WriteFrame encodes f and writes it to w in one Write. Map keys are
// written sorted (the frame's own in the order v, id, kind, body),
// integers in their shortest form, []byte as bin. Body may hold nil,
// bool, every Go integer and float type, string, []byte, []string, []any,
// []map[string]any and map[string]any, nested at most MaxFrameDepth deep
// (the frame counting one); anything else is an error and nothing is
// written. A frame past MaxFrameBytes is a *FrameError of code
// CodeFrameTooLarge and nothing is written. The id must be at most
// MaxFrameID and the kind one of the four.
func WriteFrame(w io.Writer, f Frame) error {
	buf := writeBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= smallFrameBytes {
			buf.Reset()
			writeBuffers.Put(buf)
		}
	}()
	if err := appendFrame(buf, f); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// appendFrame encodes f, length prefix first, onto the end of buf, as
// WriteFrame writes it; on an error buf is left as it was.
func appendFrame(buf *bytes.Buffer, f Frame) error {
	switch f.Kind {
	case FrameCapCall, FrameCancel, FrameCapResult, FrameOutcome:
	default:
		return fmt.Errorf("codemode: WriteFrame of unknown kind %.64q", f.Kind)
	}
	if f.ID > MaxFrameID {
		return fmt.Errorf("codemode: WriteFrame id %d exceeds 2^53", f.ID)
	}
	start := buf.Len()
	buf.Write([]byte{0, 0, 0, 0})
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	enc.UseCompactInts(true)
	err := errors.Join(enc.EncodeMapLen(4),
		enc.EncodeString("v"), enc.EncodeInt(ProtocolVersion),
		enc.EncodeString("id"), enc.EncodeUint(f.ID),
		enc.EncodeString("kind"), enc.EncodeString(string(f.Kind)),
		enc.EncodeString("body"))
	if err == nil {
		err = encodeValue(enc, f.Body, 1)
	}
	if err != nil {
		buf.Truncate(start)
		return err
	}
	n := buf.Len() - start - 4
	if n > MaxFrameBytes {
		buf.Truncate(start)
		return &FrameError{Code: CodeFrameTooLarge, Reason: fmt.Sprintf("a %s frame of %d bytes exceeds MaxFrameBytes (%d)", f.Kind, n, MaxFrameBytes)}
	}
	binary.BigEndian.PutUint32(buf.Bytes()[start:], uint32(n))
	return nil
}

// writeBuffers recycles WriteFrame's buffers of small frames.
var writeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// errDepth is encodeValue's refusal of a value nested too deeply.
var errDepth = fmt.Errorf("codemode: a frame body nests deeper than MaxFrameDepth (%d)", MaxFrameDepth)

func encodeValue(enc *msgpack.Encoder, v any, depth int) error {
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
			if err := encodeValue(enc, e, depth+1); err != nil {
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
			if err := encodeValue(enc, e, depth+1); err != nil {
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
		sort.Strings(keys)
		if err := enc.EncodeMapLen(len(keys)); err != nil {
			return err
		}
		for _, k := range keys {
			if err := enc.EncodeString(k); err != nil {
				return err
			}
			if err := encodeValue(enc, v[k], depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("codemode: a frame body cannot hold a %T", v)
}

// DecodeCapCall reads a cap_call body: a map of exactly the keys cap (a
// non-empty string) and args (a map). Anything else is a *FrameError of
// code CodeChannelFault.
func DecodeCapCall(body any) (CapCall, error) {
	m, ok := body.(map[string]any)
	if !ok || len(m) != 2 {
		return CapCall{}, faultf("a cap_call body is not a map of exactly cap and args")
	}
	capName, ok := m["cap"].(string)
	if !ok || capName == "" {
		return CapCall{}, faultf("a cap_call's cap is not a non-empty string")
	}
	args, ok := m["args"].(map[string]any)
	if !ok {
		return CapCall{}, faultf("a cap_call's args is not a map")
	}
	return CapCall{Cap: capName, Args: args}, nil
}

// ResultOK is the cap_result body of a call that succeeded with v.
func ResultOK(v any) any { return map[string]any{"ok": v} }

// ResultErr is the cap_result body of a call that failed with code (a
// tool.Code's word) and message.
func ResultErr(code, message string) any {
	return map[string]any{"err": map[string]any{"code": code, "message": message}}
}

// OutcomeBody is the body of the host's terminal outcome frame: the code
// every pending and later call of the program then fails with, and a
// message.
func OutcomeBody(code, message string) any {
	return map[string]any{"code": code, "message": message}
}
