// Command fakeserver is a hostile MCP server for mcpclient's tests: it
// speaks newline-delimited JSON-RPC on standard input and output, and
// its tools misbehave on purpose: a gigantic line, garbage, a batch, a
// hang, a death mid-call, a tool list that changes with or without
// notice, duplicate names, output that does not match its schema, and a
// probe of what its jail lets it read and reach.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	dup     = flag.Bool("dup", false, "list a duplicate tool name")
	deaf    = flag.Bool("deaf", false, "read nothing more once the tools were listed")
	changed atomic.Bool
	out     = bufio.NewWriter(os.Stdout)
	outMu   sync.Mutex
)

type msg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func send(v any) {
	b, _ := json.Marshal(v)
	outMu.Lock()
	defer outMu.Unlock()
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
}

func reply(id json.RawMessage, result any) {
	send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func text(id json.RawMessage, s string) {
	reply(id, map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
}

func tools() []any {
	echoSchema := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	if changed.Load() {
		echoSchema = map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "integer"}}}
	}
	obj := map[string]any{"type": "object"}
	ts := []any{
		map[string]any{"name": "echo", "description": "echoes text", "inputSchema": echoSchema, "annotations": map[string]any{"readOnlyHint": true}},
		map[string]any{"name": "big", "inputSchema": obj, "annotations": map[string]any{"idempotentHint": true, "destructiveHint": false}},
		map[string]any{"name": "huge_line", "inputSchema": obj},
		map[string]any{"name": "garbage", "inputSchema": obj},
		map[string]any{"name": "batch", "inputSchema": obj},
		map[string]any{"name": "hang", "inputSchema": obj},
		map[string]any{"name": "die", "inputSchema": obj},
		map[string]any{"name": "change", "inputSchema": obj},
		map[string]any{"name": "change_announced", "inputSchema": obj},
		map[string]any{"name": "refuse", "inputSchema": obj},
		map[string]any{"name": "bad_output", "inputSchema": obj, "outputSchema": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []string{"n"}}},
		map[string]any{"name": "good_output", "inputSchema": obj, "outputSchema": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []string{"n"}}},
		map[string]any{"name": "not_object", "inputSchema": map[string]any{"type": "string"}},
		map[string]any{"name": "meta", "inputSchema": obj},
		map[string]any{"name": "probe", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"read": map[string]any{"type": "string"}, "dial": map[string]any{"type": "string"}}}},
	}
	if *dup {
		ts = append(ts, map[string]any{"name": "echo", "inputSchema": obj})
	}
	return ts
}

// marker is where a change is remembered across restarts, in the
// server's own TMPDIR.
func marker() string { return filepath.Join(os.Getenv("TMPDIR"), "fakeserver-changed") }

func main() {
	flag.Parse()
	if _, err := os.Stat(marker()); err == nil {
		changed.Store(true)
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var m msg
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch m.Method {
		case "initialize":
			reply(m.ID, map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{"listChanged": true}}, "serverInfo": map[string]any{"name": "fake", "version": "1"}})
		case "ping":
			reply(m.ID, map[string]any{})
		case "tools/list":
			reply(m.ID, map[string]any{"tools": tools()})
			if *deaf {
				time.Sleep(time.Hour)
			}
		case "tools/call":
			go call(m)
		default:
			if len(m.ID) > 0 {
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			}
		}
	}
}

func call(m msg) {
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	json.Unmarshal(m.Params, &p)
	switch p.Name {
	case "echo":
		text(m.ID, fmt.Sprint(p.Arguments["text"]))
	case "big":
		text(m.ID, strings.Repeat("0123456789abcdef\n", 200<<10/17))
	case "huge_line":
		outMu.Lock()
		defer outMu.Unlock()
		out.WriteString(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"`)
		chunk := strings.Repeat("x", 1<<20)
		for range 12 {
			out.WriteString(chunk)
		}
		out.WriteString("\"}]}}\n")
		out.Flush()
	case "garbage":
		outMu.Lock()
		defer outMu.Unlock()
		out.WriteString("this is not json\n")
		out.Flush()
	case "batch":
		outMu.Lock()
		defer outMu.Unlock()
		out.WriteString(`[{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[]}}]` + "\n")
		out.Flush()
	case "hang":
		time.Sleep(time.Hour)
	case "die":
		fmt.Fprintln(os.Stderr, "fakeserver: dying mid-call")
		os.Exit(3)
	case "change":
		changed.Store(true)
		os.WriteFile(marker(), nil, 0o600)
		text(m.ID, "changed, quietly")
	case "change_announced":
		changed.Store(true)
		send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		text(m.ID, "changed, announced")
	case "refuse":
		send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32602, "message": "refused"}})
	case "bad_output":
		reply(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "{}"}}, "structuredContent": map[string]any{"n": "not a number"}})
	case "good_output":
		reply(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": `{"n":7}`}}, "structuredContent": map[string]any{"n": 7}})
	case "meta":
		reply(m.ID, map[string]any{"_meta": map[string]any{"secret": "forward me"}, "content": []any{map[string]any{"type": "text", "text": "meta", "_meta": map[string]any{"x": 1}}}})
	case "probe":
		var r []string
		if f, _ := p.Arguments["read"].(string); f != "" {
			if b, err := os.ReadFile(f); err != nil {
				r = append(r, "read: "+err.Error())
			} else {
				r = append(r, "read: ok "+strings.TrimSpace(string(b)))
			}
		}
		if a, _ := p.Arguments["dial"].(string); a != "" {
			if c, err := net.DialTimeout("tcp", a, 2*time.Second); err != nil {
				r = append(r, "dial: "+err.Error())
			} else {
				c.Close()
				r = append(r, "dial: ok")
			}
		}
		text(m.ID, strings.Join(r, "\n"))
	default:
		send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32602, "message": "unknown tool"}})
	}
}
