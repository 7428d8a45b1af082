package mcpgen

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agentloom/loom/codemode/internal/wire"
	"github.com/agentloom/loom/tool"
)

func TestDecodeArguments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"arguments": []byte(`{"a":1,"b":[true]}`)}, `{"a":1,"b":[true]}`},
		{map[string]any{"arguments": `{"a":"x"}`}, `{"a":"x"}`},
		{map[string]any{"arguments": []byte(` {} `)}, `{}`},
		{map[string]any{"arguments": []byte(`null`)}, `{}`},
	} {
		got, err := DecodeArguments(c.args)
		if err != nil || string(got) != c.want {
			t.Errorf("DecodeArguments(%v) = %s, %v; want %s", c.args, got, err, c.want)
		}
	}
	for _, args := range []map[string]any{
		nil,
		{},
		{"arguments": int64(1)},
		{"arguments": nil},
		{"arguments": []byte(`[1]`)},
		{"arguments": []byte(`"x"`)},
		{"arguments": []byte(`{"a":`)},
		{"arguments": []byte(``)},
		{"arguments": []byte(`{}`), "extra": true},
	} {
		_, err := DecodeArguments(args)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeArgumentsInvalid || tool.CodeOf(err) != CodeArgumentsInvalid {
			t.Errorf("DecodeArguments(%v) = %v, want %s", args, err, CodeArgumentsInvalid)
		}
	}
}

func TestAnswer(t *testing.T) {
	t.Parallel()
	m, err := Answer(CallResult{Structured: []byte(`{"n":1}`), Text: "one"})
	if err != nil || string(m["structured"].([]byte)) != `{"n":1}` || m["text"] != "one" || len(m) != 2 {
		t.Errorf("Answer = %v, %v", m, err)
	}
	for _, s := range []string{"", "null", "  "} {
		m, err = Answer(CallResult{Structured: []byte(s), Text: "t"})
		if v, ok := m["structured"]; err != nil || !ok || v != nil {
			t.Errorf("Answer with structured %q = %v, %v; want structured nil", s, m, err)
		}
	}
	_, err = Answer(CallResult{IsError: true, Text: "boom"})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeToolError || e.Message != "boom" {
		t.Errorf("Answer of a failure = %v", err)
	}
	_, err = Answer(CallResult{IsError: true, Text: strings.Repeat("é", MaxToolErrorBytes)})
	if !errors.As(err, &e) || len(e.Message) > MaxToolErrorBytes+len("…") || !strings.HasSuffix(e.Message, "é…") {
		t.Errorf("a long failure's message is %d bytes", len(e.Message))
	}
}

// TestArgumentsThroughTheHostCodec: the args a generated function sends
// ({"arguments": bin}) pass the host's frame codec and decode back to
// the same JSON object; Answer's map passes it too.
func TestArgumentsThroughTheHostCodec(t *testing.T) {
	t.Parallel()
	obj := []byte(`{"title":"x","labels":["a"],"n":3}`)
	var buf bytes.Buffer
	err := wire.AppendFrame(&buf, wire.Frame{ID: 1, Kind: wire.FrameCapCall, Body: map[string]any{"cap": "mcp.srv.create_issue", "args": map[string]any{"arguments": obj}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := wire.ReadFrame(&buf)
	if err != nil {
		t.Fatal(err)
	}
	call, err := wire.DecodeCapCall(f.Body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeArguments(call.Args)
	if err != nil || !bytes.Equal(got, obj) {
		t.Fatalf("DecodeArguments after the codec = %s, %v", got, err)
	}
	m, _ := Answer(CallResult{Structured: []byte(`{"n":1}`), Text: "t"})
	buf.Reset()
	if err := wire.AppendFrame(&buf, wire.Frame{ID: 1, Kind: wire.FrameCapResult, Body: wire.ResultOK(m)}); err != nil {
		t.Fatal(err)
	}
	m2, _ := Answer(CallResult{Text: "t"})
	if err := wire.AppendFrame(&buf, wire.Frame{ID: 2, Kind: wire.FrameCapResult, Body: wire.ResultOK(m2)}); err != nil {
		t.Fatal(err)
	}
}
