package history

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipSnippet(t *testing.T) {
	at := strings.Repeat("a", MaxSnippetBytes)
	if got := ClipSnippet(at); got != at {
		t.Errorf("a snippet at the bound was clipped")
	}
	for _, s := range []string{at + "a", strings.Repeat("é", MaxSnippetBytes), strings.Repeat("東", MaxSnippetBytes)} {
		got := ClipSnippet(s)
		if len(got) > MaxSnippetBytes || !strings.HasSuffix(got, snippetCut) || !utf8.ValidString(got) {
			t.Errorf("ClipSnippet(%.10q...) = %d bytes, valid %v", s, len(got), utf8.ValidString(got))
		}
	}
}
