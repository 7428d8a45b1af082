package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/tool"
)

func TestWordsToFTS5(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"retry", `"retry"`},
		{"retry loop", `"retry" "loop"`},
		{"  retry \t loop\n", `"retry" "loop"`},
		{"retr*", `"retr"*`},
		{"retr**", `"retr"*`},
		{"a OR b", `("a" OR "b")`},
		{"a OR b c", `"c" AND ("a" OR "b")`},
		{"a OR b OR c", `("a" OR "b" OR "c")`},
		{"a OR b c OR d", `("a" OR "b") AND ("c" OR "d")`},
		{"OR a", `"OR" "a"`},
		{"a OR", `"a" "OR"`},
		{"a OR OR b", `"b" AND ("a" OR "OR")`},
		{"a or b", `"a" "or" "b"`},
		{`say "hi"`, `"say" """hi"""`},
		{`text:x NEAR(a b) NOT c AND d ^e`, `"text:x" "NEAR(a" "b)" "NOT" "c" "AND" "d" "^e"`},
		{"nul\x00byte bad\xffutf", "\"nul byte\" \"bad\xffutf\""},
		{"retry - !! OR ?", `"retry"`},
		{"- a OR b", `("a" OR "b")`},
		{"école 東京", `"école" "東京"`},
	}
	s := openTest(t, Options{})
	ctx := context.Background()
	for _, tt := range tests {
		got, err := s.WordsToFTS5(ctx, tt.in)
		if err != nil {
			t.Errorf("WordsToFTS5(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("WordsToFTS5(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, in := range []string{"", "  \n", "- ! OR ?", "*", strings.Repeat("w ", maxQueryTerms+1), strings.Repeat("a", history.MaxQueryBytes+1)} {
		if _, err := s.WordsToFTS5(ctx, in); tool.CodeOf(err) != history.CodeIndexRefused {
			t.Errorf("WordsToFTS5(%.20q...): err %v, want %s", in, err, history.CodeIndexRefused)
		}
	}
}

// oracle is a scratch FTS5 database with the word index's tokenizer. It
// is the reference for FuzzWordsQuery: SQLite itself says how a text
// tokenizes, and a plain Go predicate over those tokens says which rows a
// words query means.
type oracle struct {
	db    *sql.DB
	store *Store // the implementation under test
}

var (
	oracleOnce sync.Once
	oracleDB   *oracle
	oracleDir  string
	oracleErr  error
)

func openOracle(t testing.TB) *oracle {
	oracleOnce.Do(func() {
		dir, err := os.MkdirTemp("", "history-oracle-")
		if err != nil {
			oracleErr = err
			return
		}
		oracleDir = dir
		// One in-memory database on one connection: fast, and private.
		db, err := sql.Open("sqlite", "file::memory:")
		if err != nil {
			oracleErr = err
			return
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		for _, q := range []string{
			`CREATE VIRTUAL TABLE docs USING fts5(text, tokenize='unicode61 remove_diacritics 2')`,
			`CREATE VIRTUAL TABLE docs_terms USING fts5vocab(docs, 'instance')`,
			`CREATE VIRTUAL TABLE probe USING fts5(text, tokenize='unicode61 remove_diacritics 2')`,
			`CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, 'instance')`,
		} {
			if _, err := db.Exec(q); err != nil {
				oracleErr = err
				return
			}
		}
		store, err := Open(filepath.Join(dir, "store.db"), Options{NoSubstrings: true})
		if err != nil {
			oracleErr = err
			return
		}
		oracleDB = &oracle{db: db, store: store}
	})
	if oracleErr != nil {
		t.Fatal(oracleErr)
	}
	return oracleDB
}

// tokens answers how SQLite tokenizes text.
func (o *oracle) tokens(t testing.TB, text string) []string {
	t.Helper()
	if _, err := o.db.Exec(`DELETE FROM probe`); err != nil {
		t.Fatal(err)
	}
	if _, err := o.db.Exec(`INSERT INTO probe(rowid, text) VALUES (1, ?)`, text); err != nil {
		t.Fatal(err)
	}
	rows, err := o.db.Query(`SELECT term FROM probe_terms ORDER BY "offset"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// fuzzRows is the fixed part of the corpus each fuzz input is searched in.
var fuzzRows = []string{
	"the retry loop never backs off",
	`say "hello" to NEAR(a b) and NOT c`,
	"Crème brûlée ÉCOLE école",
	"東京タワー 我们在东京塔见面",
	"text:x column filters and ^carets",
	"or OR Or and AND",
	"foo-bar foo_bar foobar",
	"*star* (paren) [bracket] {brace}",
	"a b c d e f g",
	"",
}

// phraseAt reports whether phrase occurs in doc starting at i, the last
// token as a prefix when prefix is set.
func phraseAt(doc, phrase []string, i int, prefix bool) bool {
	if i+len(phrase) > len(doc) {
		return false
	}
	for j, p := range phrase {
		if prefix && j == len(phrase)-1 {
			if !strings.HasPrefix(doc[i+j], p) {
				return false
			}
		} else if doc[i+j] != p {
			return false
		}
	}
	return true
}

func containsPhrase(doc, phrase []string, prefix bool) bool {
	for i := range doc {
		if phraseAt(doc, phrase, i, prefix) {
			return true
		}
	}
	return false
}

// FuzzWordsQuery checks the words syntax against a real FTS5: every
// translation compiles, and it matches exactly the rows the reference
// predicate says (every group has an alternative whose tokens occur as a
// phrase; alternatives with no tokens are void, groups with none left are
// dropped, and a query with no group left matches nothing).
func FuzzWordsQuery(f *testing.F) {
	for _, s := range []string{"retry", "retr*", "a OR b", `"hello"`, "NEAR(a b)", "text:x", "^carets", "école", "东京", "foo-bar", "- OR -", "foo-*", "a OR OR b", "\x00", "\xff\xfe", `""`, "AND", "( OR )", "*", "b c", "ª", "\U00100000 OR a", "\u0301", "𝔘 OR \U000F0000", "٣", "\xf8\x80\x80\x80\x80", "Ⅻ", "\ue000", "🙂 a OR b", "a OR 🙂", "- 🙂 OR ⁂ b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		o := openOracle(t)
		raw, rawErr := history.ParseWords(input)
		plan, err := o.store.planWords(context.Background(), input)
		if err != nil {
			if tool.CodeOf(err) != history.CodeIndexRefused {
				t.Fatalf("planWords(%q): %v", input, err)
			}
			if rawErr == nil {
				// Refused for having nothing to search: SQLite must agree.
				for _, g := range raw.Groups {
					for _, tm := range g {
						if toks := o.tokens(t, tm.Text); len(toks) > 0 {
							t.Fatalf("words %q refused as unsearchable, but %q tokenizes to %q", input, tm.Text, toks)
						}
					}
				}
			}
			return
		}
		if rawErr != nil {
			t.Fatalf("planWords(%q) accepted what ParseWords refused: %v", input, rawErr)
		}
		expr := fts5(plan)
		rows := append(slices.Clone(fuzzRows), input)
		if _, err := o.db.Exec(`DELETE FROM docs`); err != nil {
			t.Fatal(err)
		}
		docs := make([][]string, len(rows))
		for i, r := range rows {
			if _, err := o.db.Exec(`INSERT INTO docs(rowid, text) VALUES (?, ?)`, i+1, r); err != nil {
				t.Fatal(err)
			}
			docs[i] = o.tokens(t, r)
		}
		got := []int{}
		res, err := o.db.Query(`SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY rowid`, expr)
		if err != nil {
			t.Fatalf("words %q -> %s: FTS5 refused it: %v", input, expr, err)
		}
		for res.Next() {
			var id int
			if err := res.Scan(&id); err != nil {
				t.Fatal(err)
			}
			got = append(got, id)
		}
		if err := res.Err(); err != nil {
			t.Fatalf("words %q -> %s: %v", input, expr, err)
		}
		res.Close()

		type alt struct {
			tokens []string
			prefix bool
		}
		var groups [][]alt
		for _, g := range raw.Groups {
			var alts []alt
			for _, tm := range g {
				if toks := o.tokens(t, tm.Text); len(toks) > 0 {
					alts = append(alts, alt{toks, tm.Prefix})
				}
			}
			if len(alts) > 0 {
				groups = append(groups, alts)
			}
		}
		want := []int{}
		for i, doc := range docs {
			if len(groups) == 0 {
				break
			}
			ok := true
			for _, g := range groups {
				any := false
				for _, a := range g {
					if containsPhrase(doc, a.tokens, a.prefix) {
						any = true
						break
					}
				}
				if !any {
					ok = false
					break
				}
			}
			if ok {
				want = append(want, i+1)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("words %q -> %s: rows (-reference +fts5)\n%s", input, expr, diff)
		}
	})
}
