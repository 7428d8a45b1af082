package history

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestSearchWordsAndKinds(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	mustIndex(t, s,
		entry("s1", "e1", "the retry loop never backs off"),
		entry("s1", "e2", "Retries are capped at five; see backoff.go"),
		entry("s2", "e3", "unrelated talk about lunch"),
		Entry{Session: "s2", ID: "e4", Kind: "tool_result", Role: "tool", Text: "retry: 3 attempts", Time: day0},
	)
	tests := []struct {
		name string
		q    Query
		want []string
	}{
		{"whole word", Query{Text: "retry"}, []string{"e4", "e1"}},
		{"no stemming", Query{Text: "retries"}, []string{"e2"}},
		{"prefix", Query{Text: "retr*"}, []string{"e4", "e2", "e1"}},
		{"and", Query{Text: "retry loop"}, []string{"e1"}},
		{"or", Query{Text: "lunch OR loop"}, []string{"e3", "e1"}},
		{"kind filter", Query{Text: "retry", Kind: "tool_result"}, []string{"e4"}},
		{"session scope", Query{Text: "retr*", Scope: Session, Session: "s1"}, []string{"e2", "e1"}},
		{"before pages", Query{Text: "retr*", Before: 3}, []string{"e2", "e1"}},
		{"limit", Query{Text: "retr*", Limit: 1}, []string{"e4"}},
		{"negative limit is clamped, not unbounded", Query{Text: "retr*", Limit: -1}, []string{"e4"}},
		{"operators are text", Query{Text: `retry NOT loop`}, []string{}},
		{"raw", Query{Text: `retry NOT loop`, Syntax: Raw}, []string{"e4"}},
		{"raw phrase", Query{Text: `"never backs"`, Syntax: Raw}, []string{"e1"}},
		{"case folding", Query{Text: "RETRY"}, []string{"e4", "e1"}},
		{"substring fallback", Query{Text: "ackof"}, []string{"e2"}},
		{"short word no fallback", Query{Text: "ba"}, []string{}},
		{"substring and piece", Query{Text: "ackof etri"}, []string{"e2"}},
		{"substring alternatives", Query{Text: "ackof OR nrelat"}, []string{"e3", "e2"}},
		{"substring with a group of no candidate", Query{Text: "ackof zzzq"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.q.Limit == 0 {
				tt.q.Limit = MaxLimit
			}
			hits, err := s.Search(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, entryIDs(hits)); diff != "" {
				t.Errorf("hits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSearchHitFields(t *testing.T) {
	s := openTest(t)
	mustIndex(t, s, entry("s1", "e1", "alpha beta gamma"))
	hits, err := s.Search(context.Background(), Query{Text: "beta", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := []Hit{{Seq: 1, Session: "s1", Entry: "e1", Kind: "message", Role: "assistant", Time: day0, Snippet: "alpha **beta** gamma"}}
	if diff := cmp.Diff(want, hits); diff != "" {
		t.Errorf("hits (-want +got):\n%s", diff)
	}
}

func TestSubstringFallbackCJK(t *testing.T) {
	s := openTest(t)
	mustIndex(t, s, entry("s1", "e1", "我们在东京塔见面"), entry("s1", "e2", "nothing here"))
	hits, err := s.Search(context.Background(), Query{Text: "东京塔", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"e1"}, entryIDs(hits)); diff != "" || !hits[0].Substring {
		t.Errorf("hits %+v, diff %s", hits, diff)
	}
	// Without the trigram index, there is no fallback.
	w := openTest(t, WithoutSubstrings())
	mustIndex(t, w, entry("s1", "e1", "我们在东京塔见面"))
	hits, err = w.Search(context.Background(), Query{Text: "东京塔", Limit: 5})
	if err != nil || len(hits) != 0 || w.Substrings() {
		t.Errorf("without substrings: hits %v err %v", hits, err)
	}
}

func TestSearchRefusals(t *testing.T) {
	s := openTest(t)
	mustIndex(t, s, entry("s1", "e1", "x"))
	long := strings.Repeat("a", MaxQueryBytes)
	many := strings.TrimSpace(strings.Repeat("w ", MaxQueryTerms))
	tests := []struct {
		name string
		q    Query
		want Code
	}{
		{"query at byte bound", Query{Text: long}, ""},
		{"query one past byte bound", Query{Text: long + "a"}, IndexRefused},
		{"words at term bound", Query{Text: many}, ""},
		{"words one past term bound", Query{Text: many + " w"}, IndexRefused},
		{"blank", Query{Text: "  "}, IndexRefused},
		{"raw syntax error", Query{Text: `AND (`, Syntax: Raw}, IndexRefused},
		{"raw unknown column", Query{Text: `nope:x`, Syntax: Raw}, IndexRefused},
		{"unknown syntax", Query{Text: "x", Syntax: "regex"}, IndexRefused},
		{"unknown scope", Query{Text: "x", Scope: "world"}, IndexRefused},
		{"session scope without session", Query{Text: "x", Scope: Session}, IndexRefused},
		{"kind at bound", Query{Text: "x", Kind: strings.Repeat("k", MaxKindBytes)}, ""},
		{"kind one past bound", Query{Text: "x", Kind: strings.Repeat("k", MaxKindBytes+1)}, IndexRefused},
		{"negative before", Query{Text: "x", Before: -1}, IndexRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.Limit = 10
			_, err := s.Search(context.Background(), tt.q)
			wantCode(t, err, tt.want)
		})
	}
	_, err := s.Search(context.Background(), Query{Text: `AND (`, Syntax: Raw, Limit: 1})
	if r := asRefusalOf(err); r == nil || !strings.Contains(r.Message, "syntax error") {
		t.Errorf("raw refusal should carry FTS5's message, got %v", err)
	}
}

func TestIndexRefusals(t *testing.T) {
	s := openTest(t, WithoutSubstrings())
	id := strings.Repeat("i", MaxIDBytes)
	kind := strings.Repeat("k", MaxKindBytes)
	tests := []struct {
		name string
		e    Entry
		want Code
	}{
		{"ids at bound", Entry{Session: id, ID: id, Kind: kind, Role: kind}, ""},
		{"session one past bound", Entry{Session: id + "i", ID: "x", Kind: "m"}, IndexRefused},
		{"id one past bound", Entry{Session: "s", ID: id + "i", Kind: "m"}, IndexRefused},
		{"kind one past bound", Entry{Session: "s", ID: "y", Kind: kind + "k"}, IndexRefused},
		{"role one past bound", Entry{Session: "s", ID: "y", Kind: "m", Role: kind + "k"}, IndexRefused},
		{"empty session", Entry{ID: "y", Kind: "m"}, IndexRefused},
		{"empty id", Entry{Session: "s", Kind: "m"}, IndexRefused},
		{"empty kind", Entry{Session: "s", ID: "y"}, IndexRefused},
		{"reserved kind", Entry{Session: "s", ID: "y", Kind: KindNote}, IndexRefused},
		{"text at bound", Entry{Session: "s", ID: "big", Kind: "m", Text: strings.Repeat("a", MaxEntryTextBytes)}, ""},
		{"text one past bound", Entry{Session: "s", ID: "big2", Kind: "m", Text: strings.Repeat("a", MaxEntryTextBytes+1)}, IndexRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, s.Index(context.Background(), tt.e), tt.want)
		})
	}
	if _, err := s.IndexBatch(context.Background(), make([]Entry, MaxBatchEntries+1)); CodeOf(err) != IndexRefused {
		t.Errorf("batch one past bound: %v", err)
	}
}

func TestIndexIsIdempotent(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	n, err := s.IndexBatch(ctx, []Entry{entry("s", "a", "first text"), entry("s", "b", "other")})
	if err != nil || n != 2 {
		t.Fatalf("first batch: n=%d err=%v", n, err)
	}
	n, err = s.IndexBatch(ctx, []Entry{entry("s", "a", "second text"), entry("s", "c", "third")})
	if err != nil || n != 1 {
		t.Fatalf("second batch: n=%d err=%v", n, err)
	}
	for q, want := range map[string][]string{"first": {"a"}, "second": {}, "third": {"c"}} {
		hits, err := s.Search(ctx, Query{Text: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, entryIDs(hits)); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", q, diff)
		}
	}
}

func TestRecentAndRead(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	var es []Entry
	for i := 1; i <= 9; i++ {
		es = append(es, entry("s1", fmt.Sprintf("e%d", i), fmt.Sprintf("text %d", i)))
		es = append(es, entry("s2", fmt.Sprintf("e%d", i), fmt.Sprintf("other %d", i)))
	}
	mustIndex(t, s, es...)
	hits, err := s.Recent(ctx, "s1", 3)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"e9", "e8", "e7"}, entryIDs(hits)); diff != "" {
		t.Errorf("recent (-want +got)\n%s", diff)
	}
	for _, limit := range []int{-5, 0} {
		if hits, _ := s.Recent(ctx, "s1", limit); len(hits) != MinLimit {
			t.Errorf("Recent limit %d gave %d hits, want %d", limit, len(hits), MinLimit)
		}
	}
	if _, err := s.Recent(ctx, "", 3); CodeOf(err) != IndexRefused {
		t.Errorf("Recent without session: %v", err)
	}
	tests := []struct {
		entry  string
		around int
		want   []string
	}{
		{"e5", 0, []string{"e5"}},
		{"e5", 2, []string{"e3", "e4", "e5", "e6", "e7"}},
		{"e5", MaxAround, []string{"e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9"}},
		{"e1", 1, []string{"e1", "e2"}},
		{"e9", MaxAround + 1, []string{"e4", "e5", "e6", "e7", "e8", "e9"}},
		{"e5", -1, []string{"e5"}},
	}
	for _, tt := range tests {
		got, err := s.Read(ctx, "s1", tt.entry, tt.around)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(got))
		for i, e := range got {
			ids[i] = e.ID
			if e.Session != "s1" {
				t.Errorf("read crossed sessions: %+v", e)
			}
		}
		if diff := cmp.Diff(tt.want, ids); diff != "" {
			t.Errorf("Read(%s, %d) (-want +got)\n%s", tt.entry, tt.around, diff)
		}
	}
	if _, err := s.Read(ctx, "s1", "nope", 0); CodeOf(err) != IndexRefused {
		t.Errorf("unknown entry: %v", err)
	}
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	s := openTest(t)
	s.Close()
	ctx := context.Background()
	_, err := s.Search(ctx, Query{Text: "x", Limit: 1})
	wantCode(t, err, IndexUnavailable)
	_, err = s.Recent(ctx, "s", 1)
	wantCode(t, err, IndexUnavailable)
	_, err = s.Read(ctx, "s", "e", 0)
	wantCode(t, err, IndexUnavailable)
	wantCode(t, s.Index(ctx, entry("s", "e", "x")), IndexUnavailable)
	wantCode(t, s.Remember(ctx, testNote()), MemoryUnavailable)
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenRefusals(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", ":memory:", "a?b", "a%20b", junk, filepath.Join(t.TempDir(), "missing", "dir", "h.db")} {
		_, err := OpenSQLite(p)
		wantCode(t, err, IndexUnavailable)
	}
	path := filepath.Join(t.TempDir(), "future.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = OpenSQLite(path)
	wantCode(t, err, IndexUnavailable)
}

func TestReopenKeepsSchemaAndSettings(t *testing.T) {
	if len(migrations) != SchemaVersion {
		t.Fatalf("%d migrations for schema version %d", len(migrations), SchemaVersion)
	}
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := OpenSQLite(path, WithoutSubstrings())
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, s, entry("s", "e", "persisted words"))
	s.Close()
	s, err = OpenSQLite(path) // asks for substrings; the file's choice wins
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Substrings() {
		t.Error("reopen changed the substring setting")
	}
	hits, err := s.Search(context.Background(), Query{Text: "persisted", Limit: 1})
	if err != nil || len(hits) != 1 {
		t.Errorf("after reopen: %v %v", hits, err)
	}
	var v int
	if err := s.writer.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion {
		t.Errorf("user_version %d %v", v, err)
	}
}

func TestBusyWriterIsRefusedBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := OpenSQLite(path, WithBusyTimeout(20e6))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	ctx := context.Background()
	wantCode(t, s.Index(ctx, entry("s", "e", "x")), IndexBusy)
	wantCode(t, s.Remember(ctx, testNote()), MemoryBusy)
	// Readers are not blocked by a writer under WAL.
	if _, err := s.Search(ctx, Query{Text: "x", Limit: 1}); err != nil {
		t.Errorf("search during a write: %v", err)
	}
	tx.Rollback()
	if err := s.Index(ctx, entry("s", "e", "x")); err != nil {
		t.Errorf("after the writer left: %v", err)
	}
}

func TestClipBytes(t *testing.T) {
	at := strings.Repeat("a", MaxSnippetBytes)
	if got := clipBytes(at, MaxSnippetBytes); got != at {
		t.Errorf("a snippet at the bound was clipped")
	}
	for _, s := range []string{at + "a", strings.Repeat("é", MaxSnippetBytes), strings.Repeat("東", MaxSnippetBytes)} {
		got := clipBytes(s, MaxSnippetBytes)
		if len(got) > MaxSnippetBytes || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
			t.Errorf("clipBytes(%.10q...) = %d bytes, valid %v", s, len(got), utf8.ValidString(got))
		}
	}
}

func TestIndexBatchAtBound(t *testing.T) {
	s := openTest(t, WithoutSubstrings())
	es := make([]Entry, MaxBatchEntries)
	for i := range es {
		es[i] = Entry{Session: "s", ID: strconv.Itoa(i), Kind: "m"}
	}
	n, err := s.IndexBatch(context.Background(), es)
	if err != nil || n != MaxBatchEntries {
		t.Fatalf("batch at the bound: n=%d err=%v", n, err)
	}
}
