// Package wire is the capability channel's codec, as the host speaks it:
// frames of a 4-byte big-endian length and one msgpack map {v, id, kind,
// body}, decoded totally within MaxFrameBytes, MaxFrameDepth and
// MaxFrameValues. The prelude carries its own copy (cap/internal/wire);
// codemode's TestCodecsAgree holds the two byte-compatible. No host
// imports this package: codemode's channel is its one user.
package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/agentloom/loom/tool"
)

// The channel's framing: a 4-byte big-endian length N, then N bytes of
// one msgpack map {v, id, kind, body}. The program's channel is
// sandbox.ExtraFileFD; the prelude hard-codes the same number.
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
	// FrameRing (program to host, then host to program), id 0: the
	// program asks, with a nil body and before any other frame, to move
	// the channel onto a shared memory ring pair; the host answers once,
	// with RingBody and the ring's memory file attached to the answer as
	// SCM_RIGHTS, or with a nil body and nothing attached when it cannot
	// make one (the channel then stays on the socket). From a granted
	// answer on, every frame both ways travels through the rings and the
	// socket carries only doorbell bytes (1) that wake a sleeping reader.
	FrameRing FrameKind = "ring"
)

// RingBody is the host's ring answer's body: the layout of the memory
// file attached to it. The file holds headerBytes of control words, the
// program's ring to the host, then the host's ring to the program, each
// ringBytes long.
func RingBody(headerBytes, ringBytes int) map[string]any {
	return map[string]any{"header_bytes": headerBytes, "ring_bytes": ringBytes}
}

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

// The codes of a FrameError. codemode declares its CodeChannelFault and
// CodeFrameTooLarge as these, so each word is declared once.
const (
	// CodeChannelFault: a frame from the program was malformed (bad
	// msgpack, a missing, extra or repeated key, a wrong type, a version
	// other than ProtocolVersion, an unknown kind, past a size bound); the
	// channel cannot be trusted and the execution ends.
	CodeChannelFault tool.Code = "channel_fault"
	// CodeFrameTooLarge: a frame to write would exceed MaxFrameBytes;
	// nothing was written. The prelude refuses an oversized call with the
	// same word.
	CodeFrameTooLarge tool.Code = "frame_too_large"
)

// FrameError is a malformed or oversized frame. Code is CodeChannelFault
// for anything read, CodeFrameTooLarge for a frame WriteFrame refused.
type FrameError struct {
	Code   tool.Code
	Reason string
}

// Error renders the code and the reason.
func (e *FrameError) Error() string { return string(e.Code) + ": " + e.Reason }

// ErrorCode returns e.Code as a string, so tool.CodeOf reads it (see
// tool.CodedError).
func (e *FrameError) ErrorCode() string { return string(e.Code) }

// Faultf is a *FrameError of code CodeChannelFault, its reason
// formatted as fmt.Sprintf does.
func Faultf(format string, args ...any) *FrameError {
	return &FrameError{Code: CodeChannelFault, Reason: fmt.Sprintf(format, args...)}
}

// ReadFrame reads one frame from r. It returns io.EOF, unwrapped, when r
// ends cleanly before a frame; an error of r itself wrapped with %w;
// and a *FrameError for anything malformed: a length past MaxFrameBytes
// (nothing further is read), a truncated frame, bytes that are not
// exactly one msgpack map of exactly the keys v, id, kind and body, v
// other than ProtocolVersion, an id that is not an integer in
// 0..MaxFrameID, a kind not among the five, a cancel with a body, an
// outcome or ring with a non-zero id, a value outside the channel's msgpack
// subset (ext, timestamp, a non-string map key, a repeated map key), or
// past MaxFrameDepth or MaxFrameValues. It never panics and allocates at
// most about the bytes it read and DecodedValueBytes for each value
// (MaxFrameValues at most): a frame of small values decodes into some
// hundred times its size.
func ReadFrame(r io.Reader) (Frame, error) {
	f, _, err := protocolDecoder.ReadFrame(r)
	return f, err
}

// DecodedValueBytes is what codemode's in-flight bound charges for each
// value of a call's frame, besides the frame's bytes: at least what the
// costliest value form allocates decoding (a one-entry map holding an
// empty one, measured at about 160 bytes a value with or without the
// race detector; codemode's TestRedteamTodayDecodedValueCostBound holds
// every form to it), so codemode's in-flight bound (64 MiB) bounds the
// decoded arguments a program's unanswered calls hold, not only their
// frames. A frame at both MaxFrameBytes and MaxFrameValues, with its
// length prefix, still fits under that bound alone
// (TestRedteamTodayLargestCallFitsAlone), so every frame ReadFrame
// accepts can be served once nothing else is in flight.
const DecodedValueBytes = 184

// ReadFrame is the package's ReadFrame, sharing dec's words, also
// returning how many values the frame held (as MaxFrameValues counts
// them).
func (dec *Decoder) ReadFrame(r io.Reader) (Frame, int, error) {
	var hdr [4]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		switch {
		case err == io.EOF:
			return Frame{}, 0, io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			return Frame{}, 0, Faultf("channel ended %d bytes into a frame's length", n)
		}
		return Frame{}, 0, fmt.Errorf("reading a frame: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrameBytes {
		return Frame{}, 0, Faultf("frame length %d exceeds MaxFrameBytes (%d)", n, MaxFrameBytes)
	}
	if n <= smallFrameBytes {
		// Small frames, the common case, are read into a buffer of their
		// size at once; larger ones grow with what actually arrives, so a
		// length that lies costs no more than the bytes sent.
		buf := make([]byte, n)
		if got, err := io.ReadFull(r, buf); err != nil {
			return Frame{}, 0, frameReadError(got, n, err)
		}
		return dec.DecodeFrame(buf)
	}
	var buf bytes.Buffer
	buf.Grow(smallFrameBytes)
	got, err := io.CopyN(&buf, r, int64(n))
	if err != nil {
		return Frame{}, 0, frameReadError(int(got), n, err)
	}
	return dec.DecodeFrame(buf.Bytes())
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
		return Faultf("channel ended %d bytes into a frame of %d", got, n)
	}
	return fmt.Errorf("reading a frame: %w", err)
}

// WriteFrame encodes f and writes it to w in one Write. Map keys are
// written sorted (the frame's own in the order v, id, kind, body),
// integers in their shortest form, []byte as bin. Body may hold nil,
// bool, every Go integer and float type, string, []byte, []string, []any,
// []map[string]any and map[string]any, nested at most MaxFrameDepth deep
// (the frame counting one); anything else is an error and nothing is
// written. A frame past MaxFrameBytes is a *FrameError of code
// CodeFrameTooLarge and nothing is written. The id must be at most
// MaxFrameID and the kind one of the five.
func WriteFrame(w io.Writer, f Frame) error {
	buf := writeBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= smallFrameBytes {
			buf.Reset()
			writeBuffers.Put(buf)
		}
	}()
	if err := AppendFrame(buf, f); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// AppendFrame encodes f, length prefix first, onto the end of buf, as
// WriteFrame writes it, and refuses what WriteFrame refuses; on an error
// buf is left as it was.
func AppendFrame(buf *bytes.Buffer, f Frame) error {
	switch f.Kind {
	case FrameCapCall, FrameCancel, FrameCapResult, FrameOutcome, FrameRing:
	default:
		return fmt.Errorf("codemode: WriteFrame of unknown kind %.64q", f.Kind)
	}
	if f.ID > MaxFrameID {
		return fmt.Errorf("codemode: WriteFrame id %d exceeds 2^53", f.ID)
	}
	b := buf.AvailableBuffer()
	b = append(b, 0, 0, 0, 0, 0x84, 0xa1, 'v', ProtocolVersion, 0xa2, 'i', 'd')
	b = appendUint(b, f.ID)
	b = append(b, 0xa4, 'k', 'i', 'n', 'd')
	b = appendString(b, string(f.Kind))
	b = append(b, 0xa4, 'b', 'o', 'd', 'y')
	b, err := appendValue(b, f.Body, 1)
	if err != nil {
		return err
	}
	n := len(b) - 4
	if n > MaxFrameBytes {
		return &FrameError{Code: CodeFrameTooLarge, Reason: fmt.Sprintf("a %s frame of %d bytes exceeds MaxFrameBytes (%d)", f.Kind, n, MaxFrameBytes)}
	}
	binary.BigEndian.PutUint32(b, uint32(n))
	buf.Write(b) // b is buf's own free space unless it grew past it
	return nil
}

// writeBuffers recycles WriteFrame's buffers of small frames.
var writeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// errDepth is appendValue's refusal of a value nested too deeply.
var errDepth = fmt.Errorf("codemode: a frame body nests deeper than MaxFrameDepth (%d)", MaxFrameDepth)

// appendUint appends n in msgpack's shortest unsigned form (a positive
// fixnum up to 127).
func appendUint(b []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(b, byte(n))
	case n <= math.MaxUint8:
		return append(b, mpUint8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, mpUint16), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, mpUint32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, mpUint64), n)
}

// appendInt appends n in msgpack's shortest form: unsigned when not
// negative, a negative fixnum from -32.
func appendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendUint(b, uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, mpInt8, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, mpInt16), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, mpInt32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, mpInt64), uint64(n))
}

// appendLen appends a str, bin, array or map header of length n: fix is
// the fix form's code (0 when there is none) below fixMax, then the 8-,
// 16- and 32-bit codes (c8 0 when there is no 8-bit form).
func appendLen(b []byte, n int, fix byte, fixMax int, c8, c16, c32 byte) []byte {
	switch {
	case fix != 0 && n < fixMax:
		return append(b, fix|byte(n))
	case c8 != 0 && n <= math.MaxUint8:
		return append(b, c8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, c16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, c32), uint32(n))
}

func appendString(b []byte, s string) []byte {
	return append(appendLen(b, len(s), 0xa0, 32, mpStr8, mpStr16, mpStr32), s...)
}

func appendArrayLen(b []byte, n int) []byte {
	return appendLen(b, n, 0x90, 16, 0, mpArray16, mpArray32)
}

// appendValue appends v's msgpack encoding: the types WriteFrame
// documents, map keys sorted, integers in their shortest form, floats
// as float64, a nil []byte, slice or map as nil.
func appendValue(b []byte, v any, depth int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, mpNil), nil
	case bool:
		if v {
			return append(b, mpTrue), nil
		}
		return append(b, mpFalse), nil
	case int:
		return appendInt(b, int64(v)), nil
	case int8:
		return appendInt(b, int64(v)), nil
	case int16:
		return appendInt(b, int64(v)), nil
	case int32:
		return appendInt(b, int64(v)), nil
	case int64:
		return appendInt(b, v), nil
	case uint:
		return appendUint(b, uint64(v)), nil
	case uint8:
		return appendUint(b, uint64(v)), nil
	case uint16:
		return appendUint(b, uint64(v)), nil
	case uint32:
		return appendUint(b, uint64(v)), nil
	case uint64:
		return appendUint(b, v), nil
	case float32:
		return binary.BigEndian.AppendUint64(append(b, mpDouble), math.Float64bits(float64(v))), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(b, mpDouble), math.Float64bits(v)), nil
	case string:
		return appendString(b, v), nil
	case []byte:
		if v == nil {
			return append(b, mpNil), nil
		}
		return append(appendLen(b, len(v), 0, 0, mpBin8, mpBin16, mpBin32), v...), nil
	case []string:
		if v == nil {
			return append(b, mpNil), nil
		}
		b = appendArrayLen(b, len(v))
		for _, s := range v {
			b = appendString(b, s)
		}
		return b, nil
	case []any:
		return appendList(b, v, depth)
	case []map[string]any:
		return appendList(b, v, depth)
	case map[string]any:
		if v == nil {
			return append(b, mpNil), nil
		}
		if depth >= MaxFrameDepth {
			return nil, errDepth
		}
		return appendMap(b, v, depth)
	case okBody:
		if depth >= MaxFrameDepth {
			return nil, errDepth
		}
		return appendValue(append(b, 0x81, 0xa2, 'o', 'k'), v.v, depth+1)
	}
	return nil, fmt.Errorf("codemode: a frame body cannot hold a %T", v)
}

// appendList appends list as an array of its elements (nil as nil), one
// level below depth.
func appendList[T any](b []byte, list []T, depth int) ([]byte, error) {
	if list == nil {
		return append(b, mpNil), nil
	}
	if depth >= MaxFrameDepth {
		return nil, errDepth
	}
	b = appendArrayLen(b, len(list))
	var err error
	for _, e := range list {
		if b, err = appendValue(b, e, depth+1); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// appendMap appends a map, its keys sorted.
func appendMap(b []byte, m map[string]any, depth int) ([]byte, error) {
	var small [8]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = appendLen(b, len(keys), 0x80, 16, 0, mpMap16, mpMap32)
	var err error
	for _, k := range keys {
		b = appendString(b, k)
		if b, err = appendValue(b, m[k], depth+1); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// DecodeCapCall reads a cap_call body: a map of exactly the keys cap (a
// non-empty string) and args (a map). Anything else is a *FrameError of
// code CodeChannelFault.
func DecodeCapCall(body any) (CapCall, error) {
	m, ok := body.(map[string]any)
	if !ok || len(m) != 2 {
		return CapCall{}, Faultf("a cap_call body is not a map of exactly cap and args")
	}
	capName, ok := m["cap"].(string)
	if !ok || capName == "" {
		return CapCall{}, Faultf("a cap_call's cap is not a non-empty string")
	}
	args, ok := m["args"].(map[string]any)
	if !ok {
		return CapCall{}, Faultf("a cap_call's args is not a map")
	}
	return CapCall{Cap: capName, Args: args}, nil
}

// ResultOK is the cap_result body of a call that succeeded with v.
func ResultOK(v any) any { return map[string]any{"ok": v} }

// OKBody is ResultOK(v) as the host writes it: the same bytes, without
// building the map. Only WriteFrame and AppendFrame take it; nothing
// decodes to it.
func OKBody(v any) any { return okBody{v} }

// okBody is OKBody's value.
type okBody struct{ v any }

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
