package wire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Decoder decodes frames as ReadFrame does, returning the words it was
// made with, and the protocol's own, as strings it shares rather than
// new allocations: the words a host's frames repeat (its capability
// names and their arguments' names). Make one with NewDecoder; the zero
// Decoder shares no word. A Decoder is never changed once made, so any
// number of goroutines may use one.
type Decoder struct {
	words map[string]any
}

// NewDecoder is a Decoder sharing words besides the protocol's; a word
// longer than 16 bytes is decoded as any other string.
func NewDecoder(words ...string) *Decoder {
	all := append(append([]string{}, protocolWords...), words...)
	m := make(map[string]any, len(all))
	for _, w := range all {
		if len(w) <= maxInternedBytes {
			m[w] = w
		}
	}
	return &Decoder{words: m}
}

// protocolDecoder is ReadFrame's Decoder.
var protocolDecoder = NewDecoder()

// protocolWords are the frame's own words: its keys, the keys of its
// bodies and its kinds.
var protocolWords = []string{"v", "id", "kind", "body", "cap", "args", "ok", "err", "code", "message",
	string(FrameCapCall), string(FrameCancel), string(FrameCapResult), string(FrameOutcome)}

// DecodeFrame decodes one frame's bytes, its length prefix already read:
// exactly one msgpack map of the keys v, id, kind and body, as ReadFrame
// documents. It also returns how many values the frame held (as
// MaxFrameValues counts them).
func (dec *Decoder) DecodeFrame(b []byte) (Frame, int, error) {
	if len(b) == 0 || !isMapCode(b[0]) {
		return Frame{}, 0, Faultf("a frame is not a msgpack map")
	}
	if f, values, err, ok := dec.decodeEnvelope(b); ok {
		return f, values, err
	}
	d := &frameDecoder{b: b, words: dec.words}
	v, err := d.value(0)
	if err != nil {
		return Frame{}, d.values, err
	}
	if left := d.left(); left != 0 {
		return Frame{}, d.values, Faultf("%d bytes after the frame's map", left)
	}
	m := v.(map[string]any)
	if len(m) != 4 {
		return Frame{}, d.values, Faultf("a frame has %d keys, want exactly v, id, kind and body", len(m))
	}
	var vals [4]any
	for i, k := range envelopeKeys {
		v, ok := m[k]
		if !ok {
			return Frame{}, d.values, Faultf("a frame has no %q key", k)
		}
		vals[i] = v
	}
	f, err := frameOf(vals)
	return f, d.values, err
}

// envelopeKeys are a frame map's keys, in the order WriteFrame writes
// them.
var envelopeKeys = [4]string{"v", "id", "kind", "body"}

// decodeEnvelope decodes the common frame, a fixmap of the four keys
// each once, without building a map for it; ok is false for any other
// frame, which DecodeFrame then decodes in full. A frame decodes to the
// same value or fault on either path: the values are decoded in the same
// order, at the same depth, counting the same.
func (dec *Decoder) decodeEnvelope(b []byte) (f Frame, values int, err error, ok bool) {
	if b[0] != 0x84 {
		return Frame{}, 0, nil, false
	}
	d := &frameDecoder{b: b, off: 1, values: 1, words: dec.words}
	var vals [4]any
	var seen [4]bool
	for range 4 {
		d.values++
		if d.left() == 0 || d.b[d.off]&0xe0 != 0xa0 {
			return Frame{}, 0, nil, false
		}
		n := int(d.b[d.off] & 0x1f)
		d.off++
		key, ok := d.payload(n)
		if !ok {
			return Frame{}, 0, nil, false
		}
		i := -1
		for j, k := range envelopeKeys {
			if string(key) == k {
				i = j
			}
		}
		if i < 0 || seen[i] {
			return Frame{}, 0, nil, false
		}
		seen[i] = true
		if vals[i], err = d.value(1); err != nil {
			return Frame{}, d.values, err, true
		}
	}
	if left := d.left(); left != 0 {
		return Frame{}, d.values, Faultf("%d bytes after the frame's map", left), true
	}
	f, err = frameOf(vals)
	return f, d.values, err, true
}

// frameOf checks a frame's v, id, kind and body.
func frameOf(vals [4]any) (Frame, error) {
	if ver, ok := vals[0].(int64); !ok || ver != ProtocolVersion {
		return Frame{}, Faultf("frame version is %s, want %d", describe(vals[0]), ProtocolVersion)
	}
	id, ok := vals[1].(int64)
	if !ok || id < 0 || id > MaxFrameID {
		return Frame{}, Faultf("frame id %s is not an integer in 0..2^53", describe(vals[1]))
	}
	kind, ok := vals[2].(string)
	if !ok {
		return Frame{}, Faultf("frame kind is not a string")
	}
	f := Frame{ID: uint64(id), Kind: FrameKind(kind), Body: vals[3]}
	switch f.Kind {
	case FrameCapCall, FrameCapResult:
	case FrameCancel:
		if f.Body != nil {
			return Frame{}, Faultf("a cancel frame has a body")
		}
	case FrameOutcome, FrameRing:
		if f.ID != 0 {
			return Frame{}, Faultf("the %s frame has id %d, want 0", f.Kind, f.ID)
		}
	default:
		return Frame{}, Faultf("unknown frame kind %.64q", kind)
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

// The msgpack codes the decoder reads (the fix* ranges are tested in
// place).
const (
	mpNil     = 0xc0
	mpFalse   = 0xc2
	mpTrue    = 0xc3
	mpBin8    = 0xc4
	mpBin16   = 0xc5
	mpBin32   = 0xc6
	mpFloat   = 0xca
	mpDouble  = 0xcb
	mpUint8   = 0xcc
	mpUint16  = 0xcd
	mpUint32  = 0xce
	mpUint64  = 0xcf
	mpInt8    = 0xd0
	mpInt16   = 0xd1
	mpInt32   = 0xd2
	mpInt64   = 0xd3
	mpStr8    = 0xd9
	mpStr16   = 0xda
	mpStr32   = 0xdb
	mpArray16 = 0xdc
	mpArray32 = 0xdd
	mpMap16   = 0xde
	mpMap32   = 0xdf
)

func isMapCode(c byte) bool { return c&0xf0 == 0x80 || c == mpMap16 || c == mpMap32 }

func isStrCode(c byte) bool { return c&0xe0 == 0xa0 || c == mpStr8 || c == mpStr16 || c == mpStr32 }

// frameDecoder walks one frame's bytes, admitting only the channel's
// msgpack subset. Every length a header claims is checked against the
// bytes left before anything is allocated for it.
type frameDecoder struct {
	b      []byte
	off    int
	values int
	words  map[string]any // the Decoder's words
}

// DecodeValue decodes b as exactly one msgpack value, as ReadFrame
// decodes a frame's body: the same subset, its depth counted from the
// body's level, the same faults; bytes after the value are a fault too.
func DecodeValue(b []byte) (any, error) {
	d := &frameDecoder{b: b}
	v, err := d.value(1)
	if err == nil && d.left() != 0 {
		err = Faultf("%d bytes left", d.left())
	}
	return v, err
}

func (d *frameDecoder) left() int { return len(d.b) - d.off }

// errTruncated is the fault of a value cut short.
func errTruncated() error { return Faultf("frame truncated or malformed: unexpected EOF") }

// uint reads an n-byte big-endian unsigned integer (n is 1, 2, 4 or 8).
func (d *frameDecoder) uint(n int) (uint64, bool) {
	if d.left() < n {
		return 0, false
	}
	b := d.b[d.off : d.off+n]
	d.off += n
	switch n {
	case 1:
		return uint64(b[0]), true
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), true
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), true
	}
	return binary.BigEndian.Uint64(b), true
}

// lenBytes is how many bytes a str, bin, array or map code's length
// takes after it (0 for the fix forms).
func lenBytes(c byte) int {
	switch c {
	case mpStr8, mpBin8:
		return 1
	case mpStr16, mpBin16, mpArray16, mpMap16:
		return 2
	case mpStr32, mpBin32, mpArray32, mpMap32:
		return 4
	}
	return 0
}

// length reads the length of the container or payload whose code c was
// just read.
func (d *frameDecoder) length(c byte) (int, bool) {
	switch {
	case c&0xe0 == 0xa0:
		return int(c & 0x1f), true
	case c&0xf0 == 0x90, c&0xf0 == 0x80:
		return int(c & 0x0f), true
	}
	n, ok := d.uint(lenBytes(c))
	return int(n), ok
}

// payload reads n bytes of a str or bin payload, never past the frame.
func (d *frameDecoder) payload(n int) ([]byte, bool) {
	if n < 0 || n > d.left() {
		return nil, false
	}
	b := d.b[d.off : d.off+n]
	d.off += n
	return b, true
}

func (d *frameDecoder) value(depth int) (any, error) {
	d.values++
	if d.values > MaxFrameValues {
		return nil, Faultf("a frame holds more than MaxFrameValues (%d) values", MaxFrameValues)
	}
	if d.left() == 0 {
		return nil, Faultf("frame truncated")
	}
	c := d.b[d.off]
	d.off++
	switch {
	case c <= 0x7f:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	case isStrCode(c):
		n, ok := d.length(c)
		b, ok2 := d.payload(n)
		if !ok || !ok2 {
			return nil, errTruncated()
		}
		return d.internValue(b), nil
	case c&0xf0 == 0x90 || c == mpArray16 || c == mpArray32:
		return d.array(c, depth)
	case isMapCode(c):
		return d.dict(c, depth)
	}
	switch c {
	case mpNil:
		return nil, nil
	case mpFalse:
		return false, nil
	case mpTrue:
		return true, nil
	case mpUint8, mpUint16, mpUint32, mpUint64:
		u, ok := d.uint(1 << (c - mpUint8))
		if !ok {
			return nil, errTruncated()
		}
		if u <= math.MaxInt64 {
			return int64(u), nil
		}
		return u, nil
	case mpInt8, mpInt16, mpInt32, mpInt64:
		n := 1 << (c - mpInt8)
		u, ok := d.uint(n)
		if !ok {
			return nil, errTruncated()
		}
		// Sign-extend from n bytes.
		shift := 64 - 8*uint(n)
		return int64(u<<shift) >> shift, nil
	case mpFloat:
		u, ok := d.uint(4)
		if !ok {
			return nil, errTruncated()
		}
		return float64(math.Float32frombits(uint32(u))), nil
	case mpDouble:
		u, ok := d.uint(8)
		if !ok {
			return nil, errTruncated()
		}
		return math.Float64frombits(u), nil
	case mpBin8, mpBin16, mpBin32:
		n, ok := d.length(c)
		b, ok2 := d.payload(n)
		if !ok || !ok2 {
			return nil, errTruncated()
		}
		return append(make([]byte, 0, len(b)), b...), nil
	}
	return nil, Faultf("msgpack type 0x%02x is outside the channel's subset", c)
}

func (d *frameDecoder) array(c byte, depth int) (any, error) {
	if depth >= MaxFrameDepth {
		return nil, Faultf("a frame nests deeper than MaxFrameDepth (%d)", MaxFrameDepth)
	}
	n, ok := d.length(c)
	if !ok || n < 0 || n > d.left() {
		return nil, Faultf("an array's length exceeds its frame")
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

func (d *frameDecoder) dict(c byte, depth int) (any, error) {
	if depth >= MaxFrameDepth {
		return nil, Faultf("a frame nests deeper than MaxFrameDepth (%d)", MaxFrameDepth)
	}
	n, ok := d.length(c)
	if !ok || n < 0 || n > d.left()/2 {
		return nil, Faultf("a map's length exceeds its frame")
	}
	m := make(map[string]any, min(n, maxPreallocEntries))
	for range n {
		d.values++
		if d.left() == 0 || !isStrCode(d.b[d.off]) {
			return nil, Faultf("a map key is not a string")
		}
		kc := d.b[d.off]
		d.off++
		kn, ok := d.length(kc)
		b, ok2 := d.payload(kn)
		if !ok || !ok2 {
			return nil, Faultf("frame truncated in a map key")
		}
		if _, dup := m[string(b)]; dup {
			return nil, Faultf("map key %.64q repeated", b)
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[d.internString(b)] = v
	}
	return m, nil
}

// internString is string(b), without a new allocation for a word of
// the Decoder's.
func (d *frameDecoder) internString(b []byte) string {
	if len(b) <= maxInternedBytes {
		if v, ok := d.words[string(b)]; ok {
			return v.(string)
		}
	}
	return string(b)
}

// internValue is string(b) as an any, without an allocation for a word
// of the Decoder's (boxing a string allocates its header).
func (d *frameDecoder) internValue(b []byte) any {
	if len(b) <= maxInternedBytes {
		if v, ok := d.words[string(b)]; ok {
			return v
		}
	}
	return string(b)
}

// maxInternedBytes is the longest word a Decoder shares.
const maxInternedBytes = 16
