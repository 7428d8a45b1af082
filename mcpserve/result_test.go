package mcpserve

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"pgregory.net/rapid"
)

// detailsGen draws Details of every JSON shape, and some that do not
// encode at all.
func detailsGen() *rapid.Generator[any] {
	return rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Map(rapid.String(), func(s string) any { return s }),
		rapid.Map(rapid.Int(), func(n int) any { return n }),
		rapid.Map(rapid.SliceOf(rapid.Int()), func(xs []int) any { return xs }),
		rapid.Map(rapid.MapOf(rapid.String(), rapid.Int()), func(m map[string]int) any { return m }),
		rapid.Map(rapid.String(), func(s string) any { return tool.StaleDetails{Path: s} }),
		rapid.Just[any](make(chan int)),
		rapid.Just[any]((*tool.ReadDetails)(nil)),
	)
}

// result keeps every part of an Outcome a client can carry, and
// structured content is present exactly when Details encodes as an object.
func TestResultProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := tool.Outcome{
			Text:      rapid.String().Draw(t, "text"),
			IsError:   rapid.Bool().Draw(t, "is_error"),
			Details:   detailsGen().Draw(t, "details"),
			Terminate: rapid.Bool().Draw(t, "terminate"),
		}
		for i := range rapid.IntRange(0, 3).Draw(t, "images") {
			o.Images = append(o.Images, tool.Image{MIME: "image/png", Data: []byte{byte(i)}})
		}
		r := result(o)
		if r.IsError != o.IsError {
			t.Fatalf("isError %v, want %v", r.IsError, o.IsError)
		}
		texts, images := 0, 0
		for _, c := range r.Content {
			switch c := c.(type) {
			case *mcp.TextContent:
				texts++
				if c.Text != o.Text {
					t.Fatalf("text %q, want %q", c.Text, o.Text)
				}
			case *mcp.ImageContent:
				if int(c.Data[0]) != images {
					t.Fatalf("image %d out of order", images)
				}
				images++
			}
		}
		if images != len(o.Images) {
			t.Fatalf("%d images, want %d", images, len(o.Images))
		}
		if wantText := o.Text != "" || len(o.Images) == 0; (texts == 1) != wantText || texts > 1 {
			t.Fatalf("%d text blocks for text %q and %d images", texts, o.Text, len(o.Images))
		}
		enc, err := json.Marshal(o.Details)
		isObject := err == nil && len(enc) > 0 && enc[0] == '{'
		if (r.StructuredContent != nil) != isObject {
			t.Fatalf("structured content %v for details encoding %s (err %v)", r.StructuredContent, enc, err)
		}
		if isObject && string(r.StructuredContent.(json.RawMessage)) != string(enc) {
			t.Fatalf("structured content %s, want %s", r.StructuredContent, enc)
		}
		if (r.Meta[MetaTerminate] == true) != o.Terminate {
			t.Fatalf("terminate meta %v, want %v", r.Meta, o.Terminate)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
	})
}

func BenchmarkResult(b *testing.B) {
	o := tool.Outcome{Text: "digest: 0123456789abcdef-10\n1:0a1b2c3d|line\n", Details: tool.ReadDetails{Path: "a.go", Digest: "0123456789abcdef-10", TotalLines: 1, FirstLine: 1, LastLine: 1}}
	for b.Loop() {
		result(o)
	}
}

// BenchmarkCallRoundTrip measures one tools/call from an SDK client to a
// registry tool and back, over an in-memory transport.
func BenchmarkCallRoundTrip(b *testing.B) {
	cs := connect(b, newServer(b, nil, nil, echoTool()), nil)
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	ctx := context.Background()
	for b.Loop() {
		if r, err := cs.CallTool(ctx, params); err != nil || r.IsError {
			b.Fatal(err, r)
		}
	}
}
