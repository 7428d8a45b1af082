package hashline

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func texts(lines []Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Text
	}
	return out
}

func TestAnnotate(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{"empty", "", []string{}},
		{"bom only", bom, []string{}},
		{"one newline", "\n", []string{""}},
		{"one crlf", "\r\n", []string{""}},
		{"no final newline", "a", []string{"a"}},
		{"final newline adds no line", "a\n", []string{"a"}},
		{"two lines no final newline", "a\nb", []string{"a", "b"}},
		{"trailing empty line", "a\n\n", []string{"a", ""}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"mixed breaks", "a\r\nb\nc", []string{"a", "b", "c"}},
		{"lone cr is text", "a\rb\n", []string{"a\rb"}},
		{"cr at end without newline is text", "a\r", []string{"a\r"}},
		{"bom stripped from line 1 only", bom + "a\n" + bom + "b\n", []string{"a", bom + "b"}},
		{"not utf-8", "\xff\n\xfe", []string{"\xff", "\xfe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := Annotate([]byte(tt.content))
			if diff := cmp.Diff(tt.want, texts(lines)); diff != "" {
				t.Errorf("texts (-want +got):\n%s", diff)
			}
			if got := rejoin(t, []byte(tt.content)); !bytes.Equal(got, []byte(tt.content)) {
				t.Errorf("rejoin = %q, want %q", got, tt.content)
			}
		})
	}
}
