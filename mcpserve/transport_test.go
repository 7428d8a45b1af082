package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"pgregory.net/rapid"
)

// rawSession drives a Server over a Transport with raw lines.
type rawSession struct {
	t   testing.TB
	in  *io.PipeWriter
	out *bufio.Reader
}

type echoArgs struct {
	Text string `json:"text"`
}

func echoTool() tool.Tool {
	return tool.Typed(tool.Tool{Name: "echo", Description: "echoes text"},
		func(_ context.Context, _ *tool.Call, a echoArgs) tool.Outcome { return tool.Success(a.Text) })
}

// startRaw serves srv over pipes with the given line bound and performs
// the initialize handshake.
func startRaw(t testing.TB, srv *Server, max int) *rawSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, &Transport{Reader: inR, Writer: outW, MaxMessageBytes: max}) }()
	r := &rawSession{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<20)}
	t.Cleanup(func() {
		inW.Close()
		cancel()
		outR.Close()
		<-done
	})
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := r.next(); m["id"] != "init" || m["result"] == nil {
		t.Fatalf("initialize answered %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawSession) send(line string) {
	r.t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := io.WriteString(r.in, line+"\n")
		errc <- err
	}()
	select {
	case err := <-errc:
		if err != nil {
			r.t.Fatalf("write: %v", err)
		}
	case <-time.After(30 * time.Second):
		r.t.Fatal("the server stopped reading")
	}
}

// next returns the next message the server writes.
func (r *rawSession) next() map[string]any {
	r.t.Helper()
	type got struct {
		line string
		err  error
	}
	c := make(chan got, 1)
	go func() {
		line, err := r.out.ReadString('\n')
		c <- got{line, err}
	}()
	select {
	case g := <-c:
		if g.err != nil {
			r.t.Fatalf("read: %v", g.err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(g.line), &m); err != nil {
			r.t.Fatalf("the server wrote a line that is not JSON: %q", g.line)
		}
		if m["jsonrpc"] != "2.0" {
			r.t.Fatalf("the server wrote a non-JSON-RPC line: %q", g.line)
		}
		return m
	case <-time.After(30 * time.Second):
		r.t.Fatal("no answer from the server")
		return nil
	}
}

// ping checks the server still answers.
func (r *rawSession) ping(id string) {
	r.t.Helper()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"ping"}`, id))
	if m := r.next(); m["id"] != id || m["result"] == nil {
		r.t.Fatalf("ping %s answered %v", id, m)
	}
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func TestTransportAnswersBadInputAndGoesOn(t *testing.T) {
	cases := []struct {
		name    string
		line    string
		code    float64 // JSON-RPC error code; 0 = a result
		id      any     // expected id of the answer
		isError bool    // for results: the tool result's isError
		silent  bool    // no answer expected
	}{
		{name: "not_json", line: `garbage{`, code: jsonrpc.CodeParseError, id: nil},
		{name: "truncated_with_id", line: `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":`, code: jsonrpc.CodeParseError, id: 41.0},
		{name: "trailing_garbage", line: `{"jsonrpc":"2.0","id":"tg","method":"ping"} x`, code: jsonrpc.CodeParseError, id: "tg"},
		{name: "wrong_version", line: `{"jsonrpc":"1.0","id":"v","method":"ping"}`, code: jsonrpc.CodeInvalidRequest, id: "v"},
		{name: "batch", line: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, code: jsonrpc.CodeInvalidRequest, id: nil},
		{name: "empty_batch", line: `[]`, code: jsonrpc.CodeInvalidRequest, id: nil},
		{name: "number", line: `42`, code: jsonrpc.CodeInvalidRequest, id: nil},
		{name: "object_id", line: `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, code: jsonrpc.CodeInvalidRequest, id: nil},
		{name: "no_method_no_id", line: `{"jsonrpc":"2.0"}`, code: jsonrpc.CodeInvalidRequest, id: nil},
		{name: "unknown_method", line: `{"jsonrpc":"2.0","id":46,"method":"no/such"}`, code: jsonrpc.CodeMethodNotFound, id: 46.0},
		{name: "unknown_tool", line: `{"jsonrpc":"2.0","id":43,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, code: jsonrpc.CodeInvalidParams, id: 43.0},
		{name: "params_not_object", line: `{"jsonrpc":"2.0","id":45,"method":"tools/call","params":"x"}`, code: jsonrpc.CodeInvalidParams, id: 45.0},
		{name: "tool_name_number", line: `{"jsonrpc":"2.0","id":48,"method":"tools/call","params":{"name":7}}`, code: jsonrpc.CodeInvalidParams, id: 48.0},
		{name: "wrong_argument_type", line: `{"jsonrpc":"2.0","id":44,"method":"tools/call","params":{"name":"echo","arguments":{"text":5}}}`, id: 44.0, isError: true},
		{name: "arguments_not_object", line: `{"jsonrpc":"2.0","id":49,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`, id: 49.0, isError: true},
		{name: "unknown_argument", line: `{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","txet":"b"}}}`, id: 50.0, isError: true},
		{name: "invalid_utf8", line: "{\"jsonrpc\":\"2.0\",\"id\":47,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"\xff\"}}}", id: 47.0},
		{name: "blank", line: "   \t", silent: true},
		{name: "unknown_notification", line: `{"jsonrpc":"2.0","method":"notifications/whatever"}`, silent: true},
	}
	r := startRaw(t, newServer(t, nil, nil, echoTool()), 0)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.t = t
			r.send(c.line)
			if !c.silent {
				m := r.next()
				if m["id"] != c.id {
					t.Errorf("answer id = %v, want %v (%v)", m["id"], c.id, m)
				}
				if got := errCode(m); got != c.code {
					t.Errorf("error code = %v, want %v (%v)", got, c.code, m)
				}
				if c.code == 0 {
					res, _ := m["result"].(map[string]any)
					if res == nil || (res["isError"] == true) != c.isError {
						t.Errorf("result = %v, want isError %v", m["result"], c.isError)
					}
				}
			}
			r.ping(fmt.Sprint("after-", i))
		})
	}
}

func TestTransportMessageBound(t *testing.T) {
	const max = 512
	// pad returns a ping whose line is exactly n bytes long.
	pad := func(id string, n int) string {
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"ping"`, id)
		return head + strings.Repeat(" ", n-len(head)-1) + "}"
	}
	cases := []struct {
		name string
		line string
		ok   bool
		id   any
	}{
		{name: "at_bound", line: pad("a", max), ok: true, id: "a"},
		{name: "one_past", line: pad("b", max+1), id: "b"},
		{name: "far_past", line: pad("c", 10*max+17), id: "c"},
		{name: "id_after_head", line: `{"jsonrpc":"2.0","params":{"x":"` + strings.Repeat("y", idScanBytes) + `"},"id":"late","method":"ping"}`, id: nil},
	}
	r := startRaw(t, newServer(t, nil, nil, echoTool()), max)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.t = t
			r.send(c.line)
			m := r.next()
			if m["id"] != c.id {
				t.Errorf("answer id = %v, want %v", m["id"], c.id)
			}
			if got := errCode(m) == 0; got != c.ok {
				t.Errorf("answer %v, want ok=%v", m, c.ok)
			}
			if !c.ok && errCode(m) != jsonrpc.CodeInvalidRequest {
				t.Errorf("error code = %v, want %d", errCode(m), jsonrpc.CodeInvalidRequest)
			}
			r.ping(fmt.Sprint("bound-", i))
		})
	}
}

func TestTransportEndsAtEOF(t *testing.T) {
	srv := newServer(t, nil, nil, echoTool())
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(context.Background(), &Transport{Reader: strings.NewReader(""), Writer: io.Discard})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return when the input ended")
	}
	if _, err := (&Transport{}).Connect(context.Background()); !errors.Is(err, errNoStream) {
		t.Error("Connect without a reader and writer succeeded")
	}
}

func TestRecoverID(t *testing.T) {
	cases := []struct {
		in        string
		truncated bool
		want      string // "" = nil
	}{
		{`{"id":1}`, false, `1`},
		{`{"id":-2.5e3,"method":`, false, `-2.5e3`},
		{`{"jsonrpc":"2.0","id":"a\"b"`, false, `"a\"b"`},
		{`{"params":{"id":9},"id":3}`, false, `3`},
		{`{"params":[{"id":9}],"id":"x"`, false, `"x"`},
		{`{"params":{"id":9}`, false, ``},
		{`{"id":null}`, false, ``},
		{`{"id":true}`, false, ``},
		{`{"id":[1]}`, false, ``},
		{`["id",1]`, false, ``},
		{`{"i`, false, ``},
		{``, false, ``},
		{`{"method":"x",,"id":1}`, false, ``},
		// A complete line that ends in its id: the id is what was sent.
		{`{"id":12`, false, `12`},
		// The head of a longer line that ends in its id: 12 may be 123.
		{`{"id":12`, true, ``},
		{`{"id":12,`, true, `12`},
		{`{"id":"s"`, true, ``},
	}
	for _, c := range cases {
		got := string(recoverID([]byte(c.in), c.truncated))
		if got != c.want {
			t.Errorf("recoverID(%q, %v) = %q, want %q", c.in, c.truncated, got, c.want)
		}
	}
}

// The scan stops at idScanBytes: an id ending there, with a byte to
// spare, is found; one byte later it is not.
func TestRecoverIDScanBound(t *testing.T) {
	msg := func(idEnd int) string {
		head := `{"p":"`
		tail := `","id":7`
		return head + strings.Repeat("x", idEnd-len(head)-len(tail)) + tail + `,"method":"ping"}`
	}
	if got := string(recoverID([]byte(msg(idScanBytes-1)), false)); got != "7" {
		t.Errorf("id ending at byte %d: got %q, want 7", idScanBytes-1, got)
	}
	if got := recoverID([]byte(msg(idScanBytes)), false); got != nil {
		t.Errorf("id ending at byte %d (the scan's last): got %q, want nil", idScanBytes, got)
	}
	if got := recoverID([]byte(msg(idScanBytes+1)), false); got != nil {
		t.Errorf("id ending past the scan: got %q, want nil", got)
	}
}

// Any prefix of a message that holds its whole id member reveals the id,
// whatever members precede it.
func TestRecoverIDPrefixProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var id any
		if rapid.Bool().Draw(t, "string_id") {
			id = rapid.String().Draw(t, "id")
		} else {
			id = rapid.Int64().Draw(t, "id")
		}
		idJSON, _ := json.Marshal(id)
		var b strings.Builder
		b.WriteString("{")
		for i := range rapid.IntRange(0, 4).Draw(t, "members") {
			key := rapid.StringMatching(`[a-z]{1,6}`).Filter(func(s string) bool { return s != "id" }).Draw(t, fmt.Sprint("key", i))
			val := rapid.SampledFrom([]any{1, "s", true, nil, map[string]any{"id": 5, "a": []any{1, "x"}}, []any{map[string]any{"id": "n"}}}).Draw(t, fmt.Sprint("val", i))
			vj, _ := json.Marshal(val)
			fmt.Fprintf(&b, "%q:%s,", key, vj)
		}
		fmt.Fprintf(&b, `"id":%s`, idJSON)
		full := b.String() + `,"method":"tools/call","params":{"name":"x"}}`
		if b.Len() > idScanBytes {
			t.Skip("id beyond the scanned head")
		}
		cut := rapid.IntRange(b.Len(), len(full)).Draw(t, "cut")
		// A cut just past the id is ambiguous only for a truncated head.
		truncated := cut > b.Len() && rapid.Bool().Draw(t, "truncated")
		got := recoverID([]byte(full[:cut]), truncated)
		if string(got) != string(idJSON) {
			t.Fatalf("recoverID(%q) = %s, want %s", full[:cut], got, idJSON)
		}
	})
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `garbage{`, `[]`, `42`, `{"jsonrpc":"2.0","id":{"x":1}}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":`, "",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, line []byte, over bool) {
		msg, bad := classify(line, over, MaxMessageBytes)
		if msg != nil && bad != nil {
			t.Fatal("both a message and an error response")
		}
		if msg != nil && !json.Valid(line) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		if bad != nil {
			var w wireError
			if err := json.Unmarshal(bad, &w); err != nil || w.JSONRPC != "2.0" || w.Error.Code == 0 || w.Error.Message == "" {
				t.Fatalf("error response %q is not a JSON-RPC error", bad)
			}
			if strings.ContainsRune(string(bad), '\n') {
				t.Fatalf("error response %q spans lines", bad)
			}
		}
		if msg == nil && bad == nil && strings.TrimSpace(string(line)) != "" {
			t.Fatalf("line %q got neither a message nor an answer", line)
		}
	})
}

func FuzzRecoverID(f *testing.F) {
	for _, s := range []string{`{"id":1}`, `{"id":"x","a":[`, `{"a":{"id":2},"id":-1e9}`, `{`, `"id"`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, truncated bool) {
		id := recoverID(data, truncated)
		if id == nil {
			return
		}
		var v any
		if err := json.Unmarshal(id, &v); err != nil {
			t.Fatalf("recovered id %q is not JSON", id)
		}
		switch v.(type) {
		case string, float64:
		default:
			t.Fatalf("recovered id %q is not a string or number", id)
		}
	})
}

func BenchmarkClassify(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"fs_read","arguments":{"path":"main.go","offset":1,"limit":200}}}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if msg, _ := classify(line, false, MaxMessageBytes); msg == nil {
			b.Fatal("refused")
		}
	}
}

func TestTransportDropsAnswerToCancelledRequest(t *testing.T) {
	started := make(chan struct{}, 4)
	block := tool.Typed(tool.Tool{Name: "block", Description: "waits for cancellation"},
		func(ctx context.Context, _ *tool.Call, _ noArgs) tool.Outcome {
			started <- struct{}{}
			<-ctx.Done()
			return tool.Fail("cancelled", "cancelled")
		})
	r := startRaw(t, newServer(t, nil, nil, block, echoTool()), 0)
	for _, id := range []string{`"blk"`, `7`} {
		r.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
		<-started
		// A cancellation of a request never sent changes nothing.
		r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never-sent"}}`)
		r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"test"}}`)
		// The handler returns once cancelled; its answer must not follow.
		time.Sleep(50 * time.Millisecond)
		r.ping("after-cancel-" + id)
	}
	// A request that is answered before its cancellation arrives is
	// answered normally, and the late cancellation is ignored.
	r.send(`{"jsonrpc":"2.0","id":"e1","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	if m := r.next(); m["id"] != "e1" || m["result"] == nil {
		t.Fatalf("echo answered %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"e1"}}`)
	r.ping("last")
}
