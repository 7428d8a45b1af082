package history

import (
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
)

func testNote() Note {
	return Note{Title: "Run tests with -race", Description: "The CI gate runs go test -race", Text: "Always run go test -race before handing work back.", Kind: Fact, Session: "s1"}
}

func TestPrepareNoteBounds(t *testing.T) {
	with := func(f func(*Note)) Note { n := testNote(); f(&n); return n }
	title := strings.Repeat("t", maxTitleChars)
	desc := strings.Repeat("d", maxDescriptionChars)
	body := strings.Repeat("n", maxNoteChars)
	tests := []struct {
		name string
		n    Note
		want tool.Code
	}{
		{"valid", testNote(), ""},
		{"title at bound", with(func(n *Note) { n.Title = title }), ""},
		{"title one past", with(func(n *Note) { n.Title = title + "t" }), CodeMemoryFieldInvalid},
		{"title at bound in runes", with(func(n *Note) { n.Title = strings.Repeat("é", maxTitleChars) }), ""},
		{"title blank", with(func(n *Note) { n.Title = "  " }), CodeMemoryFieldInvalid},
		{"title two lines", with(func(n *Note) { n.Title = "a\nb" }), CodeMemoryFieldInvalid},
		{"title control char", with(func(n *Note) { n.Title = "a\x1bb" }), CodeMemoryFieldInvalid},
		{"description at bound", with(func(n *Note) { n.Description = desc }), ""},
		{"description one past", with(func(n *Note) { n.Description = desc + "d" }), CodeMemoryFieldInvalid},
		{"description two lines", with(func(n *Note) { n.Description = "a\r\nb" }), CodeMemoryFieldInvalid},
		{"description line separator", with(func(n *Note) { n.Description = "a\u2028b" }), CodeMemoryFieldInvalid},
		{"description blank", with(func(n *Note) { n.Description = "" }), CodeMemoryFieldInvalid},
		{"note at bound", with(func(n *Note) { n.Text = body }), ""},
		{"note one past", with(func(n *Note) { n.Text = body + "n" }), CodeMemoryNoteTooLong},
		{"note at bound untrimmed", with(func(n *Note) { n.Text = "  " + body + "\n" }), ""},
		{"note blank", with(func(n *Note) { n.Text = " \n\t" }), CodeNothingToRemember},
		{"note invalid utf8", with(func(n *Note) { n.Text = "a\xffb" }), CodeMemoryFieldInvalid},
		{"unknown kind", with(func(n *Note) { n.Kind = "opinion" }), CodeMemoryFieldInvalid},
		{"empty kind", with(func(n *Note) { n.Kind = "" }), CodeMemoryFieldInvalid},
		{"no session", with(func(n *Note) { n.Session = "" }), CodeMemoryFieldInvalid},
		{"session one past", with(func(n *Note) { n.Session = strings.Repeat("s", MaxIDBytes+1) }), CodeMemoryFieldInvalid},
		{"title only a secret", with(func(n *Note) { n.Title = "sk-" + strings.Repeat("A", maxTitleChars) }), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PrepareNote(tt.n)
			wantCode(t, err, tt.want)
		})
	}
}
