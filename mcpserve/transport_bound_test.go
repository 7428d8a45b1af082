package mcpserve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// maxAnswerBytes bounds one answer line to a request whose values were
// huge: a few KiB, whatever the client sent (ids aside, which JSON-RPC
// echoes by rule; the requests here use short ones).
const maxAnswerBytes = 4 << 10

// Every answer to a request carrying a 1 MiB value, wherever the value
// sits, is a few KiB: error messages quote the client's values cut, never
// whole.
func TestTransportAnswersBoundHugeValues(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x", 1<<20)
	q, _ := json.Marshal(huge)
	lines := []string{
		`{"jsonrpc":` + string(q) + `,"id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":` + string(q) + `}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":` + string(q) + `,"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":5,"t":` + string(q) + `}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":` + string(q) + `}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":` + string(q) + `}`,
		`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":` + string(q) + `}}`,
		`{"jsonrpc":"2.0","id":8,"method":"ping","params":{"_meta":{"progressToken":{"x":` + string(q) + `}}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"},"_meta":` + string(q) + `}}`,
		`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":` + string(q) + `}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"cursor":` + string(q) + `}}`,
		`{"jsonrpc":"2.0","id":12,"method":"logging/setLevel","params":{"level":` + string(q) + `}}`,
	}
	r := startRaw(t, newServer(t, nil, nil, echoTool()), 0)
	for i, line := range lines {
		r.send(line)
		m := r.next()
		b, _ := json.Marshal(m)
		if len(b) > maxAnswerBytes {
			t.Errorf("line %d: a %d-byte answer: %.300s…", i, len(b), b)
		}
		r.ping(fmt.Sprint("bound-", i))
	}
}

// An error message is kept whole up to maxErrorBytes and cut one past it,
// on a rune boundary, saying how long it was.
func TestCutMessageBound(t *testing.T) {
	t.Parallel()
	at := strings.Repeat("a", maxErrorBytes)
	if got := cutMessage(at); got != at {
		t.Errorf("a message at the bound was cut to %d bytes", len(got))
	}
	past := at + "b"
	want := at + fmt.Sprintf("… (%d bytes)", maxErrorBytes+1)
	if got := cutMessage(past); got != want {
		t.Errorf("one past the bound: %q…", got[len(got)-20:])
	}
	runes := strings.Repeat("é", maxErrorBytes) // two bytes each
	got := cutMessage(runes)
	if head, _, _ := strings.Cut(got, "…"); len(head) > maxErrorBytes || !strings.HasPrefix(runes, head) || len(head)%2 != 0 {
		t.Errorf("cut inside a rune: %d-byte head", len(head))
	}
	if b := boundedError(&jsonrpcError{msg: past}); len(b.Message) > maxErrorBytes+32 {
		t.Errorf("boundedError kept a %d-byte message", len(b.Message))
	}
}

// jsonrpcError is an error that is no JSON-RPC error.
type jsonrpcError struct{ msg string }

func (e *jsonrpcError) Error() string { return e.msg }
