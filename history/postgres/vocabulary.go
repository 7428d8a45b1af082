package postgres

import (
	"context"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentloom/loom/history"
)

// Bounds of the substring fallback; the SQLite index keeps the same.
const (
	// maxVocabularyWordBytes bounds a word kept in the vocabulary.
	maxVocabularyWordBytes = 64
	// maxSubstringWords bounds how many vocabulary words one query word
	// expands to in the substring fallback; the newest are used.
	maxSubstringWords = 64
	// maxKnownWords bounds a Store's memory of words already stored,
	// which spares re-inserting them batch after batch.
	maxKnownWords = 1 << 18
)

// The substring fallback, as in the SQLite index: the vocabulary holds
// each distinct word of history.MinSubstringRunes or more characters
// (folded as indexed), under a pg_trgm GIN index. A query word that
// matches no whole word is looked up there with LIKE '%piece%', and the
// words containing it are searched as alternatives in the word index.

// knownWords remembers words the vocabulary holds. Words are added only
// after the transaction that stored them committed.
type knownWords struct {
	mu    sync.Mutex
	words map[string]struct{}
}

// newWords answers the distinct vocabulary words of texts not known.
func (k *knownWords) newWords(texts []string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	fresh := map[string]struct{}{}
	for _, text := range texts {
		eachToken(text, func(t token) bool {
			w := t.word
			if len(w) > maxVocabularyWordBytes || utf8.RuneCountInString(w) < history.MinSubstringRunes {
				return true
			}
			if _, ok := k.words[w]; ok {
				return true
			}
			if _, ok := fresh[w]; ok {
				return true
			}
			fresh[w] = struct{}{}
			out = append(out, w)
			return true
		})
	}
	return out
}

// remember adds committed words while there is room.
func (k *knownWords) remember(words []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.words == nil {
		k.words = map[string]struct{}{}
	}
	for _, w := range words {
		if len(k.words) >= maxKnownWords {
			return
		}
		k.words[w] = struct{}{}
	}
}

// substringPlan turns a words plan into one whose every term is a
// vocabulary word containing the original term. It answers false when
// some term is shorter than history.MinSubstringRunes or some group has
// no candidate, in which case nothing can match.
func (s *Store) substringPlan(ctx context.Context, p history.WordsQuery) (history.WordsQuery, bool, error) {
	var out history.WordsQuery
	for _, g := range p.Groups {
		var alts []history.Term
		for _, t := range g {
			piece := strings.Join(words(t.Text), " ")
			if utf8.RuneCountInString(piece) < history.MinSubstringRunes {
				return history.WordsQuery{}, false, nil
			}
			if strings.Contains(piece, " ") {
				continue // no vocabulary word holds two words
			}
			found, err := s.vocabularyContaining(ctx, piece)
			if err != nil {
				return history.WordsQuery{}, false, err
			}
			for _, w := range found {
				alts = append(alts, history.Term{Text: w})
			}
		}
		if len(alts) == 0 {
			return history.WordsQuery{}, false, nil
		}
		out.Groups = append(out.Groups, alts)
	}
	return out, true, nil
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// vocabularyContaining answers the newest maxSubstringWords vocabulary
// words containing piece (folded).
func (s *Store) vocabularyContaining(ctx context.Context, piece string) ([]string, error) {
	like := "%" + likeEscaper.Replace(piece) + "%"
	rows, err := s.pool.Query(ctx, `SELECT word FROM vocabulary WHERE word LIKE $1 ORDER BY id DESC LIMIT $2`, like, maxSubstringWords)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var w string
		if err := rows.Scan(&w); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}
