package loomopenai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// TestFunctionOutput: what the model reads of each kind of outcome, on the wire.
func TestFunctionOutput(t *testing.T) {
	png := tool.Image{MIME: "image/png", Data: []byte("\x89PNG")}
	tests := []struct {
		name    string
		outcome tool.Outcome
		want    string // the JSON of the item's output
	}{
		{"text", tool.Success("done"), `"done"`},
		{"empty", tool.Outcome{}, `"` + emptyOutput + `"`},
		{"error keeps its code", tool.Fail(tool.CodeNotFound, "no such file: a.txt"), `"error not_found: no such file: a.txt"`},
		{"error without a code", tool.Outcome{IsError: true, Text: "broken"}, `"error: broken"`},
		{"image", tool.Outcome{Text: "a picture", Images: []tool.Image{png}},
			`[{"text":"a picture","type":"input_text"},{"image_url":"data:image/png;base64,iVBORw==","type":"input_image"}]`},
		{"image alone", tool.Outcome{Images: []tool.Image{png}}, `[{"image_url":"data:image/png;base64,iVBORw==","type":"input_image"}]`},
		{"error with an image", tool.Outcome{IsError: true, Code: tool.CodeBinaryFile, Text: "binary", Images: []tool.Image{png}},
			`[{"text":"error binary_file: binary","type":"input_text"},{"image_url":"data:image/png;base64,iVBORw==","type":"input_image"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(functionOutput(plane.Result{ID: "call_7", Name: "x", Outcome: tt.outcome}))
			if err != nil {
				t.Fatal(err)
			}
			var item struct {
				Type   string          `json:"type"`
				CallID string          `json:"call_id"`
				Output json.RawMessage `json:"output"`
			}
			if err := json.Unmarshal(raw, &item); err != nil {
				t.Fatal(err)
			}
			if item.Type != "function_call_output" || item.CallID != "call_7" || strings.ReplaceAll(string(item.Output), " ", "") != strings.ReplaceAll(tt.want, " ", "") {
				t.Errorf("item %s, want output %s", raw, tt.want)
			}
		})
	}
}

// TestFunctionTools: each tool's name, description and schema, as Loom
// declares them, and a schema that is not an object refused.
func TestFunctionTools(t *testing.T) {
	schema := `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`
	got, err := functionTools([]tool.Tool{{Name: "fs_read", Description: "Reads a file.", Schema: json.RawMessage(schema)}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(got)
	want := `[{"strict":false,"parameters":` + schema + `,"name":"fs_read","description":"Reads a file.","type":"function"}]`
	var g, w any
	json.Unmarshal(raw, &g)
	json.Unmarshal([]byte(want), &w)
	if gs, ws := mustJSON(g), mustJSON(w); gs != ws {
		t.Errorf("tools %s, want %s", gs, ws)
	}
	if _, err := functionTools([]tool.Tool{{Name: "bad", Schema: json.RawMessage(`[1]`)}}); err == nil {
		t.Error("a schema that is not an object was taken")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v) // maps marshal with sorted keys
	return string(b)
}
