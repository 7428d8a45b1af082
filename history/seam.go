package history

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// History is the recall seam: what the history_search tool asks. A host
// fills it with its own index or with the SQLite reference (package
// history/sqlite). Implementations must be safe for concurrent use and
// answer every failure with a *Refusal coded with this package's codes.
type History interface {
	// Search answers the entries matching q, newest first, at most q.Limit
	// of them. q.Text is never blank; the tool browses with Recent instead.
	Search(ctx context.Context, q Query) ([]Hit, error)
	// Recent answers the newest entries of session, newest first, at most
	// limit of them.
	Recent(ctx context.Context, session string, limit int) ([]Hit, error)
	// Read answers the entry (session, entry) with up to around entries of
	// the same session on each side of it, oldest first. around is clamped
	// to [0, MaxAround]. An unknown entry is refused with CodeIndexRefused.
	Read(ctx context.Context, session, entry string, around int) ([]Entry, error)
}

// Memory is the seam of durable notes: the remember tool's only door.
// Implementations redact and check a note (PrepareNote does both), count
// it against the lifetime ceiling MaxNotes, and store it where a later
// history_search kind=note finds it.
type Memory interface {
	// Remember stores n, or finds it already stored, or answers a
	// *Refusal saying why not.
	Remember(ctx context.Context, n Note) (Remembered, error)
}

// Remembered is what a Memory did with a note it did not refuse.
type Remembered struct {
	// AlreadyStored is true when a note identical to it was stored
	// before (the same kind, title, description and text once PrepareNote
	// has trimmed and redacted them, whatever its session and time):
	// nothing new was stored and no slot of MaxNotes was spent. A Memory
	// that does not look for identical notes always answers false.
	AlreadyStored bool
}

// Syntax says how Query.Text is read.
type Syntax string

const (
	// Words (the default) reads the text as whitespace-separated words,
	// all required; a bare OR between two words makes them alternatives,
	// and a trailing * makes a word a prefix. Nothing else is an operator.
	// ParseWords reads it; the SQLite index's Store.WordsToFTS5 shows the
	// FTS5 query a words query becomes there.
	Words Syntax = "words"
	// Raw passes the text to FTS5 as a query expression, operators and all.
	// FTS5 syntax errors come back as CodeIndexRefused with FTS5's
	// message.
	Raw Syntax = "raw"
)

// Scope says which sessions a search covers.
type Scope string

const (
	// Repository (the default) searches every session indexed for the
	// repository.
	Repository Scope = "repository"
	// Session searches the calling session only.
	Session Scope = "session"
)

// Query is one search. The tool builds it; Session is the caller's own
// session, taken from the tool.Call and never from model arguments.
type Query struct {
	// Text is the query, trimmed and not blank.
	Text string
	// Syntax is Words or Raw; "" means Words.
	Syntax Syntax
	// Kind, when set, keeps only entries of that kind ("note" for notes).
	Kind string
	// Before, when positive, keeps only entries with a Seq below it (the
	// paging cursor: the smallest Seq of the previous page).
	Before int64
	// Limit is the most hits answered, already clamped by the caller to
	// [MinLimit, MaxLimit].
	Limit int
	// Scope is Repository or Session; "" means Repository.
	Scope Scope
	// Session is the calling session; Scope Session searches only it.
	Session string
}

// Hit is one search or browse result.
type Hit struct {
	// Seq is the index's position of the entry: increasing in indexing
	// order across the whole repository, the cursor Query.Before takes.
	Seq int64 `json:"seq"`
	// Session and Entry identify the entry, as action=read takes them.
	Session string `json:"session"`
	Entry   string `json:"entry"`
	// Kind and Role are the entry's (for a note: KindNote and its NoteKind).
	Kind string `json:"kind"`
	Role string `json:"role"`
	// Time is when the entry was written, in UTC.
	Time time.Time `json:"time"`
	// Snippet is an excerpt of the entry's text, at most MaxSnippetBytes
	// (ClipSnippet), with matched words marked by **.
	Snippet string `json:"snippet"`
	// Substring is true when the hit came from the substring fallback:
	// it contains a word of which the query's words are pieces.
	Substring bool `json:"substring,omitempty"`
}

// Entry is one item of a session log: what a host indexes and what Read
// answers.
type Entry struct {
	// Session and ID identify the entry; the pair is unique in an index.
	Session string
	ID      string
	// Kind classifies the entry (for example "message" or "tool_result");
	// KindNote is reserved for notes stored through Memory.
	Kind string
	// Role is who wrote it ("user", "assistant", "tool"); for a note, its
	// NoteKind.
	Role string
	// Text is what was written; it is what the word index searches.
	Text string
	// Time is when the entry was written. A zero Time is stored as the
	// time of indexing.
	Time time.Time
}

// KindNote is the entry kind under which notes are stored and searched.
const KindNote = "note"

// Bounds of the history seam and the history_search tool.
const (
	// MinLimit and MaxLimit bound the hits of one search or browse; the
	// tool clamps a limit into this range (SQLite would read a negative
	// LIMIT as "no limit").
	MinLimit = 1
	MaxLimit = 50
	// defaultLimit is the limit of a call that gives none.
	defaultLimit = 10
	// MaxAround is the most neighbours on each side a read returns.
	MaxAround = 5
	// MaxQueryBytes bounds the text of one query.
	MaxQueryBytes = 1024
	// maxQueryTerms bounds the words of one words-syntax query.
	maxQueryTerms = 32
	// MaxKindBytes bounds an entry's kind and role and a query's kind.
	MaxKindBytes = 64
	// MaxIDBytes bounds a session or entry id.
	MaxIDBytes = 256
	// MaxEntryTextBytes bounds the text of one indexed entry.
	MaxEntryTextBytes = 1 << 20
	// MaxSnippetBytes bounds the snippet of one hit.
	MaxSnippetBytes = 480
	// MinSubstringRunes is the shortest word the substring fallback can
	// look for (a trigram index knows nothing shorter), and the shortest
	// word it keeps in its vocabulary.
	MinSubstringRunes = 3
)

// Check refuses, with a *Refusal coded CodeIndexRefused, a query that
// breaks a bound or names an unknown syntax or scope. Every index runs it
// before it searches.
func (q Query) Check() error {
	switch {
	case strings.TrimSpace(q.Text) == "":
		return &Refusal{Code: CodeIndexRefused, Message: "the query is blank"}
	case len(q.Text) > MaxQueryBytes:
		return &Refusal{Code: CodeIndexRefused, Message: fmt.Sprintf("the query is %d bytes; at most %d are accepted", len(q.Text), MaxQueryBytes)}
	case q.Syntax != "" && q.Syntax != Words && q.Syntax != Raw:
		return &Refusal{Code: CodeIndexRefused, Message: fmt.Sprintf("syntax %q is not words or raw", q.Syntax)}
	case q.Scope != "" && q.Scope != Repository && q.Scope != Session:
		return &Refusal{Code: CodeIndexRefused, Message: fmt.Sprintf("scope %q is not repository or session", q.Scope)}
	case q.Scope == Session && q.Session == "":
		return &Refusal{Code: CodeIndexRefused, Message: "a session-scope search needs the calling session"}
	case len(q.Kind) > MaxKindBytes:
		return &Refusal{Code: CodeIndexRefused, Message: fmt.Sprintf("the kind is %d bytes; at most %d are accepted", len(q.Kind), MaxKindBytes)}
	case q.Before < 0:
		return &Refusal{Code: CodeIndexRefused, Message: fmt.Sprintf("before must be a positive position, not %d", q.Before)}
	}
	return nil
}

// Check refuses, with a *Refusal coded CodeIndexRefused naming the
// entry, an entry an index must not store: an empty Session, ID or Kind,
// the reserved Kind KindNote, or a field over its bound (MaxIDBytes,
// MaxKindBytes, MaxEntryTextBytes). Every index runs it before it
// stores.
func (e Entry) Check() error {
	switch {
	case e.Session == "" || len(e.Session) > MaxIDBytes:
		return &Refusal{Code: CodeIndexRefused, Message: fmt.Sprintf("entry %.64q: the session id must be 1 to %d bytes", e.ID, MaxIDBytes)}
	case e.ID == "" || len(e.ID) > MaxIDBytes:
		return &Refusal{Code: CodeIndexRefused, Message: fmt.Sprintf("an entry of session %.64q: the entry id must be 1 to %d bytes", e.Session, MaxIDBytes)}
	case e.Kind == "" || len(e.Kind) > MaxKindBytes:
		return &Refusal{Code: CodeIndexRefused, Message: fmt.Sprintf("entry %.64q: the kind must be 1 to %d bytes", e.ID, MaxKindBytes)}
	case e.Kind == KindNote:
		return &Refusal{Code: CodeIndexRefused, Message: fmt.Sprintf("entry %.64q: kind %q is reserved for notes stored through Remember", e.ID, KindNote)}
	case len(e.Role) > MaxKindBytes:
		return &Refusal{Code: CodeIndexRefused, Message: fmt.Sprintf("entry %.64q: the role must be at most %d bytes", e.ID, MaxKindBytes)}
	case len(e.Text) > MaxEntryTextBytes:
		return &Refusal{Code: CodeIndexRefused, Message: fmt.Sprintf("entry %.64q: the text is %d bytes; at most %d are indexed", e.ID, len(e.Text), MaxEntryTextBytes)}
	}
	return nil
}
