package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"strconv"
)

// MaxFrameBytes is the largest frame body either side sends or accepts
// (16 MiB); a longer length prefix ends the channel.
const MaxFrameBytes = 16 << 20

// ProtocolVersion is the value of every frame's "v" key.
const ProtocolVersion = 1

// maxID is the largest frame id (2^53).
const maxID = 1 << 53

// The frame kinds.
const (
	KindCapCall   = "cap_call"   // program -> host: a capability call
	KindCancel    = "cancel"     // program -> host: abandon an in-flight call
	KindCapResult = "cap_result" // host -> program: a call's answer
	KindOutcome   = "outcome"    // host -> program: the execution is ending
	KindRing      = "ring"       // both ways, once: ask for, and grant, a shared ring pair
)

// Frame is one message on the channel.
type Frame struct {
	ID   uint64
	Kind string
	Body any
}

// ErrFrameTooLarge is returned by AppendFrame for a frame whose body
// would exceed MaxFrameBytes.
var ErrFrameTooLarge = errors.New("frame exceeds " + strconv.Itoa(MaxFrameBytes) + " bytes")

// AppendFrame appends f, length prefix included, to b. The map's keys
// are written in the order v, id, kind, body.
func AppendFrame(b []byte, f Frame) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, 0, 0, 0x84)
	b = appendStrLen(b, 1)
	b = append(b, 'v', ProtocolVersion)
	b = append(appendStrLen(b, 2), "id"...)
	b = appendUint(b, f.ID)
	b = append(appendStrLen(b, 4), "kind"...)
	b = append(appendStrLen(b, len(f.Kind)), f.Kind...)
	b = append(appendStrLen(b, 4), "body"...)
	b, err := appendValue(b, f.Body, 1)
	if err != nil {
		return nil, err
	}
	n := len(b) - start - 4
	if n > MaxFrameBytes {
		return nil, ErrFrameTooLarge
	}
	binary.BigEndian.PutUint32(b[start:], uint32(n))
	return b, nil
}

// ReadFrame reads one frame. io.EOF means the channel closed between
// frames; any other error means the channel can no longer be read.
func ReadFrame(r io.Reader) (Frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrameBytes {
		return Frame{}, errors.New("frame length " + strconv.FormatUint(uint64(n), 10) + " exceeds " + strconv.Itoa(MaxFrameBytes))
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	return decodeFrame(buf)
}

// errEnvelope is a frame that is not a map of exactly v, id, kind and
// body with values of their types.
var errEnvelope = errors.New("frame is not a map of v, id, kind and body, each once and of its type")

// decodeFrame decodes one frame's map, its four keys in any order,
// without building a map for them.
func decodeFrame(buf []byte) (Frame, error) {
	d := decoder{b: buf}
	if len(buf) == 0 || buf[0] != 0x84 {
		return Frame{}, errEnvelope
	}
	d.off = 1
	var (
		ver, id any
		f       Frame
		seen    [4]bool
	)
	for range 4 {
		key, err := d.key()
		if err != nil {
			return Frame{}, err
		}
		v, err := d.value(1)
		if err != nil {
			return Frame{}, err
		}
		i := slices.Index(envelopeKeys[:], key)
		if i < 0 || seen[i] {
			return Frame{}, errEnvelope
		}
		seen[i] = true
		switch i {
		case 0:
			ver = v
		case 1:
			id = v
		case 2:
			kind, ok := v.(string)
			if !ok {
				return Frame{}, errEnvelope
			}
			f.Kind = kind
		case 3:
			f.Body = v
		}
	}
	if d.off != len(buf) {
		return Frame{}, errors.New("msgpack: " + strconv.Itoa(len(buf)-d.off) + " bytes after the frame")
	}
	n, ok := id.(int64)
	if ver != any(int64(ProtocolVersion)) || !ok || n < 0 || n > maxID {
		return Frame{}, errors.New("frame has a bad v or id")
	}
	f.ID = uint64(n)
	return f, nil
}

// envelopeKeys are a frame map's keys.
var envelopeKeys = [4]string{"v", "id", "kind", "body"}
