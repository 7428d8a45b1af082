package loomgenkit

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentloom/loom/tool"
)

// TestResponse: what the model reads of each kind of outcome.
func TestResponse(t *testing.T) {
	png := tool.Image{MIME: "image/png", Data: []byte("\x89PNG")}
	tests := []struct {
		name    string
		outcome tool.Outcome
		output  string
		media   []string
	}{
		{"text", tool.Success("done"), "done", nil},
		{"empty", tool.Outcome{}, emptyOutput, nil},
		{"error keeps its code", tool.Fail(tool.CodeNotFound, "no such file"), "error not_found: no such file", nil},
		{"error without a code", tool.Outcome{IsError: true, Text: "broken"}, "error: broken", nil},
		{"image", tool.Outcome{Text: "a picture", Images: []tool.Image{png}}, "a picture", []string{"data:image/png;base64,iVBORw=="}},
		{"image alone", tool.Outcome{Images: []tool.Image{png}}, "", []string{"data:image/png;base64,iVBORw=="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := response(tt.outcome)
			var media []string
			for _, p := range r.Content {
				if !p.IsMedia() || p.ContentType != "image/png" {
					t.Errorf("part %s", mustJSON(p))
				}
				media = append(media, p.Text)
			}
			if r.Output != tt.output || !slices.Equal(media, tt.media) {
				t.Errorf("response %s, want output %q and media %q", mustJSON(r), tt.output, tt.media)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
