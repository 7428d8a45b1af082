package history

import (
	"context"
	"database/sql"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of the substring fallback.
const (
	// MaxVocabularyWordBytes bounds a word kept in the vocabulary the
	// substring fallback searches; longer runs (hashes, base64) are left
	// out, as nobody looks for a piece of one by substring.
	MaxVocabularyWordBytes = 64
	// MaxSubstringWords bounds how many vocabulary words one query word
	// may expand to in the substring fallback; the newest are used.
	MaxSubstringWords = 64
	// MaxKnownWords bounds the writer's memory of words already stored,
	// which spares re-inserting them batch after batch; past it, further
	// words are inserted (and ignored) as if new.
	MaxKnownWords = 1 << 18
	// wordsPerInsert is how many vocabulary words one INSERT carries.
	wordsPerInsert = 256
)

// The substring fallback. A trigram index over every indexed text would
// cost several times the word index at ingest; instead the store keeps the
// vocabulary (each distinct word of MinSubstringRunes or more characters,
// lowercased) with a trigram index over it. A query word that matches no
// whole word is looked up in that index, and the words containing it are
// searched as alternatives in the word index. This finds a piece of a
// word ("ackof" in "backoff") and a piece of a CJK run, which the word
// index keeps as one token; it does not find text spanning two words.

// collectWords adds the vocabulary words of text to into. A word is a
// run of letters, numbers, private-use characters and combining marks,
// approximating the word index's tokenizer; a difference only costs the
// fallback a candidate, never a wrong hit, because candidates are searched
// in the word index itself.
func collectWords(text string, into map[string]struct{}) {
	start := -1
	for i, r := range text {
		if wordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			addWord(text[start:i], into)
			start = -1
		}
	}
	if start >= 0 {
		addWord(text[start:], into)
	}
}

func wordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return r != utf8.RuneError && unicode.In(r, unicode.L, unicode.N, unicode.Co, unicode.Mn)
}

func addWord(w string, into map[string]struct{}) {
	if len(w) > MaxVocabularyWordBytes || utf8.RuneCountInString(w) < MinSubstringRunes {
		return
	}
	into[strings.ToLower(w)] = struct{}{}
}

// knownWords remembers words the vocabulary already holds. Only the
// writer touches it, under SQLite.mu, and only after a commit, so it never
// claims a word a rolled-back transaction failed to store.
type knownWords map[string]struct{}

// remember adds committed words while there is room.
func (k knownWords) remember(words []any) {
	for _, w := range words {
		if len(k) >= MaxKnownWords {
			return
		}
		k[w.(string)] = struct{}{}
	}
}

// insertVocabulary stores the words of entries not known to be stored and
// feeds the new ones to the trigram index. It answers the words it
// inserted, for known.remember once the transaction commits.
func insertVocabulary(ctx context.Context, tx *sql.Tx, entries []Entry, known knownWords) ([]any, error) {
	seen := make(map[string]struct{}, len(entries)*4)
	for _, e := range entries {
		collectWords(e.Text, seen)
	}
	words := make([]any, 0, len(seen))
	for w := range seen {
		if _, ok := known[w]; !ok {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return nil, nil
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM vocabulary`).Scan(&last); err != nil {
		return nil, err
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
					return nil, err
				}
			}
			_, err = full.ExecContext(ctx, chunk...)
		} else {
			_, err = tx.ExecContext(ctx, vocabularySQL(len(chunk)), chunk...)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO vocabulary_grams(rowid, word) SELECT id, word FROM vocabulary WHERE id > ?`, last); err != nil {
		return nil, err
	}
	return words, nil
}

func vocabularySQL(rows int) string {
	return `INSERT OR IGNORE INTO vocabulary(word) VALUES ` + strings.TrimSuffix(strings.Repeat("(?),", rows), ",")
}

// substringPlan turns a words plan into one whose every term is a
// vocabulary word containing the original term: the plan the substring
// fallback runs in the word index. It answers false when some term is
// shorter than MinSubstringRunes or some group has no candidate at all, in
// which case nothing can match.
func (s *SQLite) substringPlan(ctx context.Context, p wordsPlan) (wordsPlan, bool, error) {
	var out wordsPlan
	for _, g := range p.groups {
		var alts []term
		for _, t := range g {
			if utf8.RuneCountInString(t.text) < MinSubstringRunes {
				return wordsPlan{}, false, nil
			}
			words, err := s.vocabularyContaining(ctx, t.text)
			if err != nil {
				return wordsPlan{}, false, err
			}
			for _, w := range words {
				alts = append(alts, term{text: w})
			}
		}
		if len(alts) == 0 {
			return wordsPlan{}, false, nil
		}
		out.groups = append(out.groups, alts)
	}
	return out, true, nil
}

// vocabularyContaining answers the newest MaxSubstringWords vocabulary
// words containing piece, case-insensitively.
func (s *SQLite) vocabularyContaining(ctx context.Context, piece string) ([]string, error) {
	rows, err := s.readers.QueryContext(ctx, `SELECT word FROM vocabulary_grams WHERE vocabulary_grams MATCH ? ORDER BY rowid DESC LIMIT ?`,
		quoteFTS5(piece), MaxSubstringWords)
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
