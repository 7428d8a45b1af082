package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentloom/loom/history"
)

// Bounds of the substring fallback.
const (
	// maxVocabularyWordBytes bounds a word kept in the vocabulary the
	// substring fallback searches; longer runs (hashes, base64) are left
	// out, as nobody looks for a piece of one by substring.
	maxVocabularyWordBytes = 64
	// maxSubstringWords bounds how many vocabulary words one query word
	// may expand to in the substring fallback; the newest are used.
	maxSubstringWords = 64
	// maxKnownWords bounds the writer's memory of words already stored,
	// which spares re-inserting them batch after batch; past it, further
	// words are inserted (and ignored) as if new.
	maxKnownWords = 1 << 18
	// wordsPerInsert is how many vocabulary words one INSERT carries.
	wordsPerInsert = 256
)

// The substring fallback. A trigram index over every indexed text would
// cost several times the word index at ingest; instead the store keeps
// the vocabulary (each distinct word of history.MinSubstringRunes or more
// characters, lowercased) with a trigram index over it. A query word that
// matches no whole word is looked up in that index, and the words
// containing it are searched as alternatives in the word index. This
// finds a piece of a word ("ackof" in "backoff") and a piece of a CJK
// run, which the word index keeps as one token; it does not find text
// spanning two words.

// eachWord calls add with every vocabulary word of text, lowercased. A
// word is a run of letters, numbers, private-use characters and combining
// marks, approximating the word index's tokenizer; a difference only costs
// the fallback a candidate, never a wrong hit, because candidates are
// searched in the word index itself.
func eachWord(text string, add func(string)) {
	start := -1
	for i, r := range text {
		if wordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			vocabularyWord(text[start:i], add)
			start = -1
		}
	}
	if start >= 0 {
		vocabularyWord(text[start:], add)
	}
}

func wordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return r != utf8.RuneError && unicode.In(r, unicode.L, unicode.N, unicode.Co, unicode.Mn)
}

// vocabularyWord passes w on, lowercased, when its length suits the
// vocabulary.
func vocabularyWord(w string, add func(string)) {
	if len(w) > maxVocabularyWordBytes || utf8.RuneCountInString(w) < history.MinSubstringRunes {
		return
	}
	add(strings.ToLower(w))
}

// newWords answers the distinct vocabulary words of entries that known
// does not hold, in the order they first occur. It only reads known, so it
// may run while the writer's transaction executes SQL (see insertEntries).
func newWords(entries []history.Entry, known knownWords) []any {
	var words []any
	var fresh map[string]struct{}
	add := func(w string) {
		if _, ok := known[w]; ok {
			return
		}
		if _, ok := fresh[w]; ok {
			return
		}
		if fresh == nil {
			fresh = make(map[string]struct{})
		}
		fresh[w] = struct{}{}
		words = append(words, w)
	}
	for i := range entries {
		eachWord(entries[i].Text, add)
	}
	return words
}

// knownWords remembers words the vocabulary already holds. It is used
// only while Store.mu is held: read by the writer's newWords goroutine,
// which insertEntries waits for, and added to only after a commit, so it
// never claims a word a rolled-back transaction failed to store.
type knownWords map[string]struct{}

// remember adds committed words while there is room.
func (k knownWords) remember(words []any) {
	for _, w := range words {
		if len(k) >= maxKnownWords {
			return
		}
		k[w.(string)] = struct{}{}
	}
}

// insertVocabulary stores words (newWords of a batch) and feeds the ones
// the vocabulary did not hold yet to the trigram index.
func insertVocabulary(ctx context.Context, tx *sql.Tx, words []any) error {
	if len(words) == 0 {
		return nil
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM vocabulary`).Scan(&last); err != nil {
		return err
	}
	var full *sql.Stmt
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	for start := 0; start < len(words); start += wordsPerInsert {
		chunk := words[start:min(start+wordsPerInsert, len(words))]
		var err error
		if len(chunk) == wordsPerInsert {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, vocabularySQL(wordsPerInsert)); err != nil {
					return err
				}
			}
			_, err = full.ExecContext(ctx, chunk...)
		} else {
			_, err = tx.ExecContext(ctx, vocabularySQL(len(chunk)), chunk...)
		}
		if err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO vocabulary_grams(rowid, word) SELECT id, word FROM vocabulary WHERE id > ?`, last); err != nil {
		return err
	}
	return nil
}

func vocabularySQL(rows int) string {
	return `INSERT OR IGNORE INTO vocabulary(word) VALUES ` + strings.TrimSuffix(strings.Repeat("(?),", rows), ",")
}

// substringPlan turns a words plan into one whose every term is a vocabulary
// word containing the original term: the plan the substring fallback runs in
// the word index. It answers false when some term is shorter than
// history.MinSubstringRunes or some group has no candidate at all, in which
// case nothing can match.
func (s *Store) substringPlan(ctx context.Context, p history.WordsQuery) (history.WordsQuery, bool, error) {
	var out history.WordsQuery
	for _, g := range p.Groups {
		var alts []history.Term
		for _, t := range g {
			if utf8.RuneCountInString(t.Text) < history.MinSubstringRunes {
				return history.WordsQuery{}, false, nil
			}
			words, err := s.vocabularyContaining(ctx, t.Text)
			if err != nil {
				return history.WordsQuery{}, false, err
			}
			for _, w := range words {
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

// vocabularyContaining answers the newest maxSubstringWords vocabulary
// words containing piece, case-insensitively.
func (s *Store) vocabularyContaining(ctx context.Context, piece string) ([]string, error) {
	rows, err := s.readers.QueryContext(ctx, `SELECT word FROM vocabulary_grams WHERE vocabulary_grams MATCH ? ORDER BY rowid DESC LIMIT ?`,
		quoteFTS5(piece), maxSubstringWords)
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
