package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/tool"
)

func TestSearchWordsAndKinds(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	mustIndex(t, s,
		entry("s1", "e1", "the retry loop never backs off"),
		entry("s1", "e2", "Retries are capped at five; see backoff.go"),
		entry("s2", "e3", "unrelated talk about lunch"),
		history.Entry{Session: "s2", ID: "e4", Kind: "tool_result", Role: "tool", Text: "retry: 3 attempts", Time: day0},
	)
	tests := []struct {
		name string
		q    history.Query
		want []string
	}{
		{"whole word", history.Query{Text: "retry"}, []string{"e4", "e1"}},
		{"no stemming", history.Query{Text: "retries"}, []string{"e2"}},
		{"prefix", history.Query{Text: "retr*"}, []string{"e4", "e2", "e1"}},
		{"and", history.Query{Text: "retry loop"}, []string{"e1"}},
		{"or", history.Query{Text: "lunch OR loop"}, []string{"e3", "e1"}},
		{"kind filter", history.Query{Text: "retry", Kind: "tool_result"}, []string{"e4"}},
		{"session scope", history.Query{Text: "retr*", Scope: history.Session, Session: "s1"}, []string{"e2", "e1"}},
		{"before pages", history.Query{Text: "retr*", Before: 3}, []string{"e2", "e1"}},
		{"limit", history.Query{Text: "retr*", Limit: 1}, []string{"e4"}},
		{"negative limit is clamped, not unbounded", history.Query{Text: "retr*", Limit: -1}, []string{"e4"}},
		{"operators are text", history.Query{Text: `retry NOT loop`}, []string{}},
		{"raw", history.Query{Text: `retry NOT loop`, Syntax: history.Raw}, []string{"e4"}},
		{"raw phrase", history.Query{Text: `"never backs"`, Syntax: history.Raw}, []string{"e1"}},
		{"case folding", history.Query{Text: "RETRY"}, []string{"e4", "e1"}},
		{"substring fallback", history.Query{Text: "ackof"}, []string{"e2"}},
		{"short word no fallback", history.Query{Text: "ba"}, []string{}},
		{"substring and piece", history.Query{Text: "ackof etri"}, []string{"e2"}},
		{"substring alternatives", history.Query{Text: "ackof OR nrelat"}, []string{"e3", "e2"}},
		{"substring with a group of no candidate", history.Query{Text: "ackof zzzq"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.q.Limit == 0 {
				tt.q.Limit = history.MaxLimit
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
	s := openTest(t, Options{})
	mustIndex(t, s, entry("s1", "e1", "alpha beta gamma"))
	hits, err := s.Search(context.Background(), history.Query{Text: "beta", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Hit{{Seq: 1, Session: "s1", Entry: "e1", Kind: "message", Role: "assistant", Time: day0, Snippet: "alpha **beta** gamma"}}
	if diff := cmp.Diff(want, hits); diff != "" {
		t.Errorf("hits (-want +got):\n%s", diff)
	}
}

func TestSubstringFallbackCJK(t *testing.T) {
	s := openTest(t, Options{})
	mustIndex(t, s, entry("s1", "e1", "我们在东京塔见面"), entry("s1", "e2", "nothing here"))
	hits, err := s.Search(context.Background(), history.Query{Text: "东京塔", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"e1"}, entryIDs(hits)); diff != "" || !hits[0].Substring {
		t.Errorf("hits %+v, diff %s", hits, diff)
	}
	// Without the trigram index, there is no fallback.
	w := openTest(t, Options{NoSubstrings: true})
	mustIndex(t, w, entry("s1", "e1", "我们在东京塔见面"))
	hits, err = w.Search(context.Background(), history.Query{Text: "东京塔", Limit: 5})
	if err != nil || len(hits) != 0 || w.Substrings() {
		t.Errorf("without substrings: hits %v err %v", hits, err)
	}
}

func TestSearchRefusals(t *testing.T) {
	s := openTest(t, Options{})
	mustIndex(t, s, entry("s1", "e1", "x"))
	long := strings.Repeat("a", history.MaxQueryBytes)
	many := strings.TrimSpace(strings.Repeat("w ", maxQueryTerms))
	tests := []struct {
		name string
		q    history.Query
		want tool.Code
	}{
		{"query at byte bound", history.Query{Text: long}, ""},
		{"query one past byte bound", history.Query{Text: long + "a"}, history.CodeIndexRefused},
		{"words at term bound", history.Query{Text: many}, ""},
		{"words one past term bound", history.Query{Text: many + " w"}, history.CodeIndexRefused},
		{"blank", history.Query{Text: "  "}, history.CodeIndexRefused},
		{"raw syntax error", history.Query{Text: `AND (`, Syntax: history.Raw}, history.CodeIndexRefused},
		{"raw unknown column", history.Query{Text: `nope:x`, Syntax: history.Raw}, history.CodeIndexRefused},
		{"unknown syntax", history.Query{Text: "x", Syntax: "regex"}, history.CodeIndexRefused},
		{"unknown scope", history.Query{Text: "x", Scope: "world"}, history.CodeIndexRefused},
		{"session scope without session", history.Query{Text: "x", Scope: history.Session}, history.CodeIndexRefused},
		{"kind at bound", history.Query{Text: "x", Kind: strings.Repeat("k", history.MaxKindBytes)}, ""},
		{"kind one past bound", history.Query{Text: "x", Kind: strings.Repeat("k", history.MaxKindBytes+1)}, history.CodeIndexRefused},
		{"negative before", history.Query{Text: "x", Before: -1}, history.CodeIndexRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.Limit = 10
			_, err := s.Search(context.Background(), tt.q)
			wantCode(t, err, tt.want)
		})
	}
	_, err := s.Search(context.Background(), history.Query{Text: `AND (`, Syntax: history.Raw, Limit: 1})
	var r *history.Refusal
	if !errors.As(err, &r) || !strings.Contains(r.Message, "syntax error") {
		t.Errorf("raw refusal should carry FTS5's message, got %v", err)
	}
}

func TestIndexRefusals(t *testing.T) {
	s := openTest(t, Options{NoSubstrings: true})
	id := strings.Repeat("i", history.MaxIDBytes)
	kind := strings.Repeat("k", history.MaxKindBytes)
	tests := []struct {
		name string
		e    history.Entry
		want tool.Code
	}{
		{"ids at bound", history.Entry{Session: id, ID: id, Kind: kind, Role: kind}, ""},
		{"session one past bound", history.Entry{Session: id + "i", ID: "x", Kind: "m"}, history.CodeIndexRefused},
		{"id one past bound", history.Entry{Session: "s", ID: id + "i", Kind: "m"}, history.CodeIndexRefused},
		{"kind one past bound", history.Entry{Session: "s", ID: "y", Kind: kind + "k"}, history.CodeIndexRefused},
		{"role one past bound", history.Entry{Session: "s", ID: "y", Kind: "m", Role: kind + "k"}, history.CodeIndexRefused},
		{"empty session", history.Entry{ID: "y", Kind: "m"}, history.CodeIndexRefused},
		{"empty id", history.Entry{Session: "s", Kind: "m"}, history.CodeIndexRefused},
		{"empty kind", history.Entry{Session: "s", ID: "y"}, history.CodeIndexRefused},
		{"reserved kind", history.Entry{Session: "s", ID: "y", Kind: history.KindNote}, history.CodeIndexRefused},
		{"text at bound", history.Entry{Session: "s", ID: "big", Kind: "m", Text: strings.Repeat("a", history.MaxEntryTextBytes)}, ""},
		{"text one past bound", history.Entry{Session: "s", ID: "big2", Kind: "m", Text: strings.Repeat("a", history.MaxEntryTextBytes+1)}, history.CodeIndexRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, s.Index(context.Background(), tt.e), tt.want)
		})
	}
	if _, err := s.IndexBatch(context.Background(), make([]history.Entry, MaxBatchEntries+1)); tool.CodeOf(err) != history.CodeIndexRefused {
		t.Errorf("batch one past bound: %v", err)
	}
}

func TestIndexIsIdempotent(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	n, err := s.IndexBatch(ctx, []history.Entry{entry("s", "a", "first text"), entry("s", "b", "other")})
	if err != nil || n != 2 {
		t.Fatalf("first batch: n=%d err=%v", n, err)
	}
	n, err = s.IndexBatch(ctx, []history.Entry{entry("s", "a", "second text"), entry("s", "c", "third")})
	if err != nil || n != 1 {
		t.Fatalf("second batch: n=%d err=%v", n, err)
	}
	for q, want := range map[string][]string{"first": {"a"}, "second": {}, "third": {"c"}} {
		hits, err := s.Search(ctx, history.Query{Text: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, entryIDs(hits)); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", q, diff)
		}
	}
}

func TestRecentAndRead(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	var es []history.Entry
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
		if hits, _ := s.Recent(ctx, "s1", limit); len(hits) != history.MinLimit {
			t.Errorf("Recent limit %d gave %d hits, want %d", limit, len(hits), history.MinLimit)
		}
	}
	if _, err := s.Recent(ctx, "", 3); tool.CodeOf(err) != history.CodeIndexRefused {
		t.Errorf("Recent without session: %v", err)
	}
	tests := []struct {
		entry  string
		around int
		want   []string
	}{
		{"e5", 0, []string{"e5"}},
		{"e5", 2, []string{"e3", "e4", "e5", "e6", "e7"}},
		{"e5", history.MaxAround, []string{"e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9"}},
		{"e1", 1, []string{"e1", "e2"}},
		{"e9", history.MaxAround + 1, []string{"e4", "e5", "e6", "e7", "e8", "e9"}},
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
	if _, err := s.Read(ctx, "s1", "nope", 0); tool.CodeOf(err) != history.CodeIndexRefused {
		t.Errorf("unknown entry: %v", err)
	}
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	s := openTest(t, Options{})
	s.Close()
	ctx := context.Background()
	_, err := s.Search(ctx, history.Query{Text: "x", Limit: 1})
	wantCode(t, err, history.CodeIndexUnavailable)
	_, err = s.Recent(ctx, "s", 1)
	wantCode(t, err, history.CodeIndexUnavailable)
	_, err = s.Read(ctx, "s", "e", 0)
	wantCode(t, err, history.CodeIndexUnavailable)
	wantCode(t, s.Index(ctx, entry("s", "e", "x")), history.CodeIndexUnavailable)
	wantCode(t, second(s.Remember(ctx, testNote())), history.CodeMemoryUnavailable)
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
		_, err := Open(p, Options{})
		wantCode(t, err, history.CodeIndexUnavailable)
	}
	path := filepath.Join(t.TempDir(), "future.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(path, Options{})
	wantCode(t, err, history.CodeIndexUnavailable)
}

func TestReopenKeepsSchemaAndSettings(t *testing.T) {
	if len(migrations) != schemaVersion {
		t.Fatalf("%d migrations for schema version %d", len(migrations), schemaVersion)
	}
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path, Options{NoSubstrings: true})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, s, entry("s", "e", "persisted words"))
	s.Close()
	s, err = Open(path, Options{}) // asks for substrings; the file's choice wins
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Substrings() {
		t.Error("reopen changed the substring setting")
	}
	hits, err := s.Search(context.Background(), history.Query{Text: "persisted", Limit: 1})
	if err != nil || len(hits) != 1 {
		t.Errorf("after reopen: %v %v", hits, err)
	}
	var v int
	if err := s.writer.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Errorf("user_version %d %v", v, err)
	}
}

func TestBusyWriterIsRefusedBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path, Options{BusyTimeout: 20 * time.Millisecond})
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
	wantCode(t, s.Index(ctx, entry("s", "e", "x")), history.CodeIndexBusy)
	wantCode(t, second(s.Remember(ctx, testNote())), history.CodeMemoryBusy)
	// Readers are not blocked by a writer under WAL.
	if _, err := s.Search(ctx, history.Query{Text: "x", Limit: 1}); err != nil {
		t.Errorf("search during a write: %v", err)
	}
	tx.Rollback()
	if err := s.Index(ctx, entry("s", "e", "x")); err != nil {
		t.Errorf("after the writer left: %v", err)
	}
}

func TestIndexBatchAtBound(t *testing.T) {
	s := openTest(t, Options{NoSubstrings: true})
	es := make([]history.Entry, MaxBatchEntries)
	for i := range es {
		es[i] = history.Entry{Session: "s", ID: strconv.Itoa(i), Kind: "m"}
	}
	n, err := s.IndexBatch(context.Background(), es)
	if err != nil || n != MaxBatchEntries {
		t.Fatalf("batch at the bound: n=%d err=%v", n, err)
	}
}

// TestOptionsZeroValueWorks holds Options' defaults: a zero BusyTimeout is
// defaultBusyTimeout, a negative one does not wait, any other is kept.
func TestOptionsZeroValueWorks(t *testing.T) {
	for _, tc := range []struct {
		in, want time.Duration
	}{
		{0, defaultBusyTimeout},
		{-1, 0},
		{-time.Hour, 0},
		{time.Millisecond, time.Millisecond},
		{time.Minute, time.Minute},
	} {
		if got := (Options{BusyTimeout: tc.in}).busyTimeout(); got != tc.want {
			t.Errorf("Options{BusyTimeout: %v}.busyTimeout() = %v, want %v", tc.in, got, tc.want)
		}
	}
	if s := openTest(t, Options{}); !s.Substrings() {
		t.Error("the zero Options dropped the substring fallback")
	}
}
