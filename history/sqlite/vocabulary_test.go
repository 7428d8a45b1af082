package sqlite

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/history"
)

// TestNewWords holds the vocabulary gathering to its bounds: words shorter
// than history.MinSubstringRunes or longer than maxVocabularyWordBytes are left
// out, the rest are lowercased, known words are skipped, and each new word
// is answered once, in the order it first occurs.
func TestNewWords(t *testing.T) {
	atBound := strings.Repeat("b", maxVocabularyWordBytes)
	pastBound := strings.Repeat("c", maxVocabularyWordBytes+1)
	short := strings.Repeat("d", history.MinSubstringRunes-1)
	shortest := strings.Repeat("e", history.MinSubstringRunes)
	for _, tc := range []struct {
		name  string
		texts []string
		known []string
		want  []any
	}{
		{"empty", []string{""}, nil, nil},
		{"length bounds", []string{short + " " + shortest + " " + atBound + " " + pastBound}, nil, []any{shortest, atBound}},
		{"runes, not bytes", []string{"日本 日本語"}, nil, []any{"日本語"}},
		{"lowercased and deduplicated", []string{"Backoff BACKOFF", "backoff retry"}, nil, []any{"backoff", "retry"}},
		{"first occurrence order", []string{"zeta alpha", "mid zeta"}, nil, []any{"zeta", "alpha", "mid"}},
		{"known words skipped", []string{"alpha beta gamma"}, []string{"beta"}, []any{"alpha", "gamma"}},
		{"all known", []string{"alpha beta"}, []string{"alpha", "beta"}, nil},
		{"separators", []string{"one,two;three-four_five"}, nil, []any{"one", "two", "three", "four", "five"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			known := knownWords{}
			for _, w := range tc.known {
				known[w] = struct{}{}
			}
			entries := make([]history.Entry, len(tc.texts))
			for i, text := range tc.texts {
				entries[i] = entry("s", "e", text)
			}
			if diff := cmp.Diff(tc.want, newWords(entries, known)); diff != "" {
				t.Errorf("newWords (-want +got):\n%s", diff)
			}
		})
	}
}
