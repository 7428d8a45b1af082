package job

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentloom/loom/tool"
)

// Cursors is where a reader stands in a job's two streams. It travels to
// a model only as the opaque token of Token and ParseCursor; the zero
// value is the start of both streams.
type Cursors struct {
	// Stdout and Stderr are byte offsets from each stream's first byte:
	// the next byte the reader has not seen.
	Stdout int64
	Stderr int64
}

// cursorTokenPrefix versions the cursor token format.
const cursorTokenPrefix = "c1."

// maxCursorTokenBytes bounds a cursor token ParseCursor reads; every
// token Token mints is shorter.
const maxCursorTokenBytes = 64

// cursorCheckBytes is the length of the check that binds a token to its
// job and refuses a hand-edited one.
const cursorCheckBytes = 4

// CursorError refuses a cursor token that could not have been minted for
// the job (malformed, edited, another job's, or ahead of the stream). A
// refused cursor is never rewound to the start.
type CursorError struct {
	// Code is CodeInvalidCursor.
	Code tool.Code
	// Token is the refused token, as given.
	Token string
	// Reason says why, for the model.
	Reason string
}

// ErrorCode returns e.Code as a string (see tool.CodedError).
func (e *CursorError) ErrorCode() string { return string(e.Code) }

// Error renders the refused token (quoted, shortened) and why.
func (e *CursorError) Error() string {
	return "cursor " + quote(e.Token) + " refused: " + e.Reason
}

// quote renders a value a model gave (a job handle, a cursor token, a
// path) as a Go-quoted string cut to tool.MaxQuotedBytes on a rune
// boundary, saying how long the whole was when it cut: a refusal never
// answers a megabyte handle with the megabyte.
func quote(s string) string {
	if len(s) <= tool.MaxQuotedBytes {
		return strconv.Quote(s)
	}
	cut := tool.MaxQuotedBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]+"…") + " (" + strconv.Itoa(len(s)) + " bytes)"
}

// Token renders c as the opaque string a model passes back to continue
// reading job id. It is bound to id: another job's token does not parse.
func (c Cursors) Token(id ID) string {
	var buf [2*binary.MaxVarintLen64 + cursorCheckBytes]byte
	n := binary.PutUvarint(buf[:], uint64(c.Stdout))
	n += binary.PutUvarint(buf[n:], uint64(c.Stderr))
	binary.BigEndian.PutUint32(buf[n:], cursorCheck(id, buf[:n]))
	return cursorTokenPrefix + base64.RawURLEncoding.EncodeToString(buf[:n+cursorCheckBytes])
}

// ParseCursor reads a token Token minted for id. The empty token is the
// start of both streams. Whether the offsets lie within the job's streams
// is the plane's check. ParseCursor refuses, with a *CursorError,
// everything else a token could be: too long, another version, bad or
// non-canonical encoding, trailing bytes, offsets past math.MaxInt64, or
// a check that does not match id.
func ParseCursor(id ID, token string) (Cursors, error) {
	if token == "" {
		return Cursors{}, nil
	}
	fail := func(reason string) (Cursors, error) {
		return Cursors{}, &CursorError{Code: CodeInvalidCursor, Token: token, Reason: reason}
	}
	if len(token) > maxCursorTokenBytes {
		return fail("longer than any cursor this job hands out")
	}
	body, ok := strings.CutPrefix(token, cursorTokenPrefix)
	if !ok {
		return fail("not a cursor token; pass back the cursor a poll of this job returned, or omit it to read from the start")
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) <= cursorCheckBytes {
		return fail("damaged token")
	}
	payload, check := raw[:len(raw)-cursorCheckBytes], raw[len(raw)-cursorCheckBytes:]
	out, n := binary.Uvarint(payload)
	if n <= 0 {
		return fail("damaged token")
	}
	errOff, m := binary.Uvarint(payload[n:])
	if m <= 0 || n+m != len(payload) || out > math.MaxInt64 || errOff > math.MaxInt64 {
		return fail("damaged token")
	}
	if binary.BigEndian.Uint32(check) != cursorCheck(id, payload) {
		return fail("not a cursor of job " + string(id))
	}
	c := Cursors{Stdout: int64(out), Stderr: int64(errOff)}
	if c.Token(id) != token {
		// An overlong varint or stray base64 bits: one cursor has one token.
		return fail("damaged token")
	}
	return c, nil
}

func cursorCheck(id ID, payload []byte) uint32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write(payload)
	return h.Sum32()
}
