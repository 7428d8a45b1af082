package hashline

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeHunksAccepts(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []Hunk
	}{
		{"replace", `[{"op":"replace","start":"1:abcdef01","lines":["x"]}]`,
			[]Hunk{{Op: OpReplace, Start: &Ref{1, "abcdef01"}, Lines: []string{"x"}}}},
		{"replace range", `[{"op":"replace","start":"1:abcdef01","end":"3:abcdef02","lines":[]}]`,
			[]Hunk{{Op: OpReplace, Start: &Ref{1, "abcdef01"}, End: &Ref{3, "abcdef02"}, Lines: []string{}}}},
		{"insert_before", `[{"op":"insert_before","start":"1:abcdef01","lines":["x"]}]`,
			[]Hunk{{Op: OpInsertBefore, Start: &Ref{1, "abcdef01"}, Lines: []string{"x"}}}},
		{"insert_after", `[{"op":"insert_after","start":"2:abcdef01","lines":["x","y"]}]`,
			[]Hunk{{Op: OpInsertAfter, Start: &Ref{2, "abcdef01"}, Lines: []string{"x", "y"}}}},
		{"append with null refs", ` [ {"op":"append","start":null,"end":null,"lines":[""]} ] `,
			[]Hunk{{Op: OpAppend, Lines: []string{""}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeHunks([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeHunksRefuses(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		code     Code
		index    int
		mentions []string // words the message must contain for a model to repair
	}{
		{"empty input", ``, CodeBadJSON, -1, nil},
		{"null", `null`, CodeBadJSON, -1, nil},
		{"object not array", `{"op":"append","lines":["x"]}`, CodeBadJSON, -1, nil},
		{"trailing data", `[]x`, CodeBadJSON, -1, nil},
		{"empty array", `[]`, CodeNoHunks, -1, nil},
		{"element not object", `[1]`, CodeBadJSON, 0, nil},
		{"element null", `[null]`, CodeBadJSON, 0, nil},
		{"unknown field", `[{"op":"append","lines":["x"],"text":"y"}]`, CodeUnknownField, 0,
			[]string{"text", "op", "start", "end", "lines"}},
		{"field names are exact", `[{"Op":"append","lines":["x"]}]`, CodeUnknownField, 0, []string{"Op"}},
		{"missing op", `[{"lines":["x"]}]`, CodeMissingField, 0, []string{"replace", "insert_before", "insert_after", "append"}},
		{"bad op", `[{"op":"delete","lines":[]}]`, CodeBadOp, 0, []string{`"delete"`, "replace", "insert_before", "insert_after", "append"}},
		{"op not a string", `[{"op":1,"lines":[]}]`, CodeBadOp, 0, []string{"replace"}},
		{"ref not a string", `[{"op":"replace","start":{"line":1},"lines":[]}]`, CodeBadRef, 0, nil},
		{"bad ref", `[{"op":"replace","start":"1:xyz","lines":[]}]`, CodeBadRef, 0, nil},
		{"line 0", `[{"op":"replace","start":"0:abcdef01","lines":[]}]`, CodeBadRef, 0, []string{"start at 1"}},
		{"missing lines", `[{"op":"append"}]`, CodeMissingField, 0, []string{"lines"}},
		{"null lines", `[{"op":"append","lines":null}]`, CodeMissingField, 0, nil},
		{"lines a string", `[{"op":"append","lines":"x"}]`, CodeBadJSON, 0, nil},
		{"lines not strings", `[{"op":"append","lines":[1]}]`, CodeBadJSON, 0, nil},
		{"second hunk bad", `[{"op":"append","lines":["x"]},{"op":"nope","lines":[]}]`, CodeBadOp, 1, nil},
		{"missing start", `[{"op":"replace","lines":[]}]`, CodeMissingRef, 0, nil},
		{"append with start", `[{"op":"append","start":"1:abcdef01","lines":["x"]}]`, CodeUnexpectedRef, 0, nil},
		{"insert with end", `[{"op":"insert_after","start":"1:abcdef01","end":"2:abcdef01","lines":["x"]}]`, CodeUnexpectedRef, 0, nil},
		{"end before start", `[{"op":"replace","start":"3:abcdef01","end":"2:abcdef01","lines":[]}]`, CodeEndBeforeStart, 0, nil},
		{"empty insert", `[{"op":"insert_before","start":"1:abcdef01","lines":[]}]`, CodeEmptyLines, 0, nil},
		{"display prefix", `[{"op":"append","lines":["ok","3:abcdef01|pasted"]}]`, CodeDisplayPrefix, 0, []string{"line 2"}},
		{"display prefix after a break", `[{"op":"append","lines":["ok\n3:abcdef01|pasted"]}]`, CodeDisplayPrefix, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeHunks([]byte(tt.data))
			var he *HunkError
			if !errors.As(err, &he) {
				t.Fatalf("DecodeHunks = %+v, %v; want a *HunkError", got, err)
			}
			if he.Code != tt.code || he.Index != tt.index {
				t.Fatalf("code %q index %d, want %q %d (%v)", he.Code, he.Index, tt.code, tt.index, err)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("message %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestDecodeHunksKeepsBareHex(t *testing.T) {
	hunks, err := DecodeHunks([]byte(`[{"op":"append","lines":["deadbeef","abcdef01|x","0xdeadbeef:"]}]`))
	if err != nil {
		t.Fatalf("bare hex refused: %v", err)
	}
	if len(hunks[0].Lines) != 3 {
		t.Errorf("lines = %q", hunks[0].Lines)
	}
}

func TestValidateHunksGoValues(t *testing.T) {
	tests := []struct {
		name string
		h    Hunk
		code Code
	}{
		{"unknown op", Hunk{Op: "Replace", Start: &Ref{1, "abcdef01"}}, CodeBadOp},
		{"line 0", Hunk{Op: OpReplace, Start: &Ref{0, "abcdef01"}}, CodeBadRef},
		{"negative end", Hunk{Op: OpReplace, Start: &Ref{1, "abcdef01"}, End: &Ref{-1, "abcdef01"}}, CodeBadRef},
		{"bad anchor", Hunk{Op: OpInsertAfter, Start: &Ref{1, "nothex!!"}, Lines: []string{"x"}}, CodeBadRef},
		{"append with end only", Hunk{Op: OpAppend, End: &Ref{1, "abcdef01"}, Lines: []string{"x"}}, CodeUnexpectedRef},
		{"nil lines insert", Hunk{Op: OpInsertAfter, Start: &Ref{1, "abcdef01"}}, CodeEmptyLines},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var he *HunkError
			if err := ValidateHunks([]Hunk{tt.h}); !errors.As(err, &he) || he.Code != tt.code {
				t.Fatalf("ValidateHunks = %v, want code %q", err, tt.code)
			}
		})
	}
	if err := ValidateHunks([]Hunk{{Op: OpReplace, Start: &Ref{1, "abcdef01"}}}); err != nil {
		t.Errorf("nil-lines replace (a deletion) refused: %v", err)
	}
}

func TestPieces(t *testing.T) {
	tests := []struct {
		in   []string
		want []string
	}{
		{nil, []string{}},
		{[]string{""}, []string{""}},
		{[]string{"\n"}, []string{""}},
		{[]string{"\n\n"}, []string{"", ""}},
		{[]string{"a\nb"}, []string{"a", "b"}},
		{[]string{"a\r\nb\r\n"}, []string{"a", "b"}},
		{[]string{"a\rb"}, []string{"a\rb"}},
		{[]string{"a\r"}, []string{"a"}},
		{[]string{"a", "", "b\n"}, []string{"a", "", "b"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, pieces(tt.in)); diff != "" {
			t.Errorf("pieces(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
