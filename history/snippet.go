package history

import "unicode/utf8"

// ClipSnippet cuts s to at most MaxSnippetBytes bytes on a rune boundary,
// marking a cut with an ellipsis inside the bound. A History holds
// Hit.Snippet to its bound with it; the search tool applies it again to
// whatever a History answers.
func ClipSnippet(s string) string { return clipBytes(s, MaxSnippetBytes) }

// snippetCut marks where clipBytes cut a text.
const snippetCut = "…"

// clipBytes cuts s to at most n bytes on a rune boundary, marking a cut
// with snippetCut inside the bound.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len(snippetCut)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + snippetCut
}
