package history

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/tool"
)

// SearchToolName is the name of the tool SearchTool builds.
const SearchToolName = "history_search"

// SessionOf tells the tools which session a call belongs to. It reads the
// call (host state), never model arguments. StrandSession is the default.
type SessionOf func(c *tool.Call) string

// StrandSession answers the calling strand's name as its session.
func StrandSession(c *tool.Call) string { return c.Strand }

// action is what a history_search call does.
type action string

const (
	// actionSearch (the default) searches, or browses on a blank query.
	actionSearch action = "search"
	// actionRead reads one entry and its neighbours.
	actionRead action = "read"
)

// searchArgs are history_search's arguments.
type searchArgs struct {
	Action  action      `json:"action,omitempty"`
	Query   string      `json:"query,omitempty"`
	Syntax  Syntax      `json:"syntax,omitempty"`
	Kind    string      `json:"kind,omitempty"`
	Before  int64       `json:"before,omitempty"`
	Limit   *hitLimit   `json:"limit,omitempty"`
	Scope   Scope       `json:"scope,omitempty"`
	Session string      `json:"session,omitempty" jsonschema:"read: from the hit"`
	Entry   string      `json:"entry,omitempty" jsonschema:"read: from the hit"`
	Around  *neighbours `json:"around,omitempty"`
}

// hitLimit is the type of the limit argument, so that its schema can
// state the bounds from their constants.
type hitLimit int

// neighbours is the type of the around argument, for the same reason.
type neighbours int

var (
	// The bounds are in the description, once.
	limitSchema  = &jsonschema.Schema{Type: "integer"}
	aroundSchema = &jsonschema.Schema{Type: "integer"}
	syntaxSchema = &jsonschema.Schema{Type: "string", Enum: []any{string(Words), string(Raw)}}
	scopeSchema  = &jsonschema.Schema{Type: "string", Enum: []any{string(Repository), string(Session)}}
	actionSchema = &jsonschema.Schema{Type: "string", Enum: []any{string(actionSearch), string(actionRead)}}
)

// SearchTool returns history_search over h. session tells which session a
// call belongs to (nil means StrandSession). The tool clamps limit and
// around, refuses a blank repository-scope query, fences every result as
// quoted data under a fresh nonce, and spills a read longer than
// blob.OverflowThreshold to c.Blobs. It asks the broker for nothing and is
// ReplaySafe and Concurrent.
func SearchTool(h History, session SessionOf) tool.Tool {
	if session == nil {
		session = StrandSession
	}
	return tool.Typed(tool.Tool{
		Name:          SearchToolName,
		Title:         "Search the history",
		ReadOnly:      true,
		Description:   searchDescription,
		PromptSnippet: "history_search: search what this repository's sessions said before; read an entry; notes with kind=note",
		Replay:        tool.ReplaySafe,
		Mode:          tool.Concurrent,
	}, func(ctx context.Context, c *tool.Call, a searchArgs) tool.Outcome {
		return runSearch(ctx, c, h, session(c), a)
	},
		tool.TypeSchema{Type: reflect.TypeFor[Syntax](), Schema: syntaxSchema},
		tool.TypeSchema{Type: reflect.TypeFor[Scope](), Schema: scopeSchema},
		tool.TypeSchema{Type: reflect.TypeFor[action](), Schema: actionSchema},
		tool.TypeSchema{Type: reflect.TypeFor[hitLimit](), Schema: limitSchema},
		tool.TypeSchema{Type: reflect.TypeFor[neighbours](), Schema: aroundSchema})
}

var searchDescription = fmt.Sprintf(
	"Search this repository's history (what models, users and tools wrote in every session) and "+
		"remembered notes (kind=note); hits are quoted data, newest first.\n"+
		"- words (default): whole words, any case, NO stemming (test* for a prefix), OR for alternatives, quotes and "+
		"operators are text; with no whole-word hit, %d+ characters match inside words (and CJK). "+
		"syntax=raw: FTS5 (\"a phrase\", AND, OR, NOT, NEAR(), prefix*).\n"+
		"- limit %d to %d (default %d, clamped); before=<seq> pages older; query at most %d bytes, %d words; "+
		"scope repository (default) or session (yours; a blank query lists your newest).\n"+
		"- action=read: entry (session default yours) whole as JSON, around=0..%d neighbours; over %d bytes spills to a file.",
	MinSubstringRunes, MinLimit, MaxLimit, defaultLimit, MaxQueryBytes, maxQueryTerms, MaxAround, blob.OverflowThreshold)

func runSearch(ctx context.Context, c *tool.Call, h History, session string, a searchArgs) tool.Outcome {
	if h == nil {
		return refusalOutcome(refuse(CodeIndexUnavailable, "this host has no history index"))
	}
	if o, over := overBound(a); over {
		return o
	}
	if a.Action == actionRead {
		around, note, o, bad := clampArg("around", a.Around, 0, MaxAround)
		if bad {
			return o
		}
		return withNote(note, runRead(ctx, c, h, session, a, around))
	}
	if a.Session != "" || a.Entry != "" || a.Around != nil {
		return tool.Fail(CodeIndexRefused, "session, entry and around belong to action=read; a search takes query, syntax, kind, before, limit and scope")
	}
	limit, note, o, bad := clampArg("limit", a.Limit, defaultLimit, MaxLimit)
	if bad {
		return o
	}
	return withNote(note, search(ctx, h, session, a, limit))
}

// search runs a search (or a browse, on a blank query) whose limit is
// settled.
func search(ctx context.Context, h History, session string, a searchArgs, limit int) tool.Outcome {
	text := strings.TrimSpace(a.Query)
	if text == "" {
		if a.Scope != Session {
			return tool.Fail(CodeIndexRefused, "the query is blank: send a query to search the repository, "+
				"or scope=session with a blank query to list your own newest entries")
		}
		if a.Kind != "" || a.Before != 0 || a.Syntax != "" {
			return tool.Fail(CodeIndexRefused, "a blank query lists your newest entries and takes no kind, before or syntax; send a query to filter")
		}
		hits, err := h.Recent(ctx, session, limit)
		if err != nil {
			return refusalOutcome(err)
		}
		return renderHits(hits, fmt.Sprintf("your %d newest entries", len(hits)), "", WordsQuery{}, a, limit)
	}
	q := Query{Text: text, Syntax: a.Syntax, Kind: a.Kind, Before: a.Before, Limit: limit, Scope: a.Scope, Session: session}
	if q.Syntax == "" {
		q.Syntax = Words
	}
	if q.Scope == "" {
		q.Scope = Repository
	}
	if a.Before < 0 {
		return tool.Fail(CodeIndexRefused, fmt.Sprintf("before must be a seq shown on a hit (a positive number), not %d", a.Before))
	}
	var plan WordsQuery
	if q.Syntax == Words {
		p, err := ParseWords(text)
		if err != nil {
			return refusalOutcome(err)
		}
		plan = p
	}
	hits, err := h.Search(ctx, q)
	if err != nil {
		return refusalOutcome(err)
	}
	return renderHits(hits, "", text, plan, a, limit)
}

// SearchDetails is the Details of a successful search or browse: the hits
// as the seam answered them, the query as searched ("" for a browse) and
// the limit after clamping.
type SearchDetails struct {
	Hits  []Hit  `json:"hits"`
	Query string `json:"query,omitempty"`
	Limit int    `json:"limit"`
}

func renderHits(hits []Hit, browse, text string, plan WordsQuery, a searchArgs, limit int) tool.Outcome {
	// The bounds are the tool's: a History answering more, or longer
	// snippets, than asked is cut here.
	if len(hits) > limit {
		hits = hits[:limit]
	}
	for i := range hits {
		hits[i].Snippet = ClipSnippet(hits[i].Snippet)
	}
	var b strings.Builder
	syntax := a.Syntax
	if syntax == "" {
		syntax = Words
	}
	scope := a.Scope
	if scope == "" {
		scope = Repository
	}
	filters := "scope " + string(scope)
	if a.Kind != "" {
		filters += ", kind " + quote(a.Kind)
	}
	if a.Before > 0 {
		filters += fmt.Sprintf(", before %d", a.Before)
	}
	if len(hits) == 0 {
		if browse != "" {
			b.WriteString("history_search: your session has no indexed entries yet.")
			return tool.Success(b.String()).WithDetails(SearchDetails{Hits: hits, Limit: limit})
		}
		fmt.Fprintf(&b, "history_search: no hits for %s query %s (%s).\n", syntax, quote(text), filters)
		b.WriteString("Words match whole words, case-insensitively, with no stemming.")
		if syntax == Words && plan.Terms() > 1 {
			fmt.Fprintf(&b, " Try alternatives with OR: %q.", orVariant(plan))
		}
		b.WriteString(" Also try a prefix (word*), fewer or other words")
		if scope == Session {
			b.WriteString(", scope=repository")
		}
		if a.Kind != "" || a.Before > 0 {
			b.WriteString(", or dropping the kind/before filters")
		}
		b.WriteString(".\n")
		return tool.Success(b.String()).WithDetails(SearchDetails{Hits: hits, Query: text, Limit: limit})
	}
	if browse != "" {
		fmt.Fprintf(&b, "history_search: %s, newest first.\n", browse)
	} else {
		fmt.Fprintf(&b, "history_search: %d hit(s) for %s query %s (%s), newest first.\n", len(hits), syntax, quote(text), filters)
		if hits[0].Substring {
			b.WriteString("No entry has these whole words; these hits have longer words containing them.\n")
		}
	}
	f := newFence()
	var body strings.Builder
	for i, h := range hits {
		fmt.Fprintf(&body, "[%d] seq=%d date=%s kind=%s role=%s session=%q entry=%q\n",
			i+1, h.Seq, utcDate(h), h.Kind, h.Role, h.Session, h.Entry)
		for _, line := range strings.Split(strings.TrimRight(h.Snippet, "\n"), "\n") {
			body.WriteString("    ")
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	f.quote(&b, body.String())
	if len(hits) == limit {
		fmt.Fprintf(&b, "There may be more: send the same call with before=%d for older hits.\n", hits[len(hits)-1].Seq)
	}
	fmt.Fprintf(&b, "Read one entry whole with action=read, session and entry (around=1..%d adds neighbours).\n", MaxAround)
	return tool.Success(b.String()).WithDetails(SearchDetails{Hits: hits, Query: text, Limit: limit})
}

// utcDate renders a hit's time as a UTC date and minute.
func utcDate(h Hit) string {
	return h.Time.UTC().Format("2006-01-02 15:04Z")
}

// entryJSON is the shape action=read answers.
type entryJSON struct {
	Session string `json:"session"`
	Entry   string `json:"entry"`
	Kind    string `json:"kind"`
	Role    string `json:"role"`
	Time    string `json:"time"`
	Text    string `json:"text"`
}

// ReadDetails is the Details of a successful read: the entries, oldest
// first, and where the rendered read spilled when it was over
// blob.OverflowThreshold.
type ReadDetails struct {
	Entries  []Entry        `json:"entries"`
	Overflow *blob.Overflow `json:"overflow,omitempty"`
}

func runRead(ctx context.Context, c *tool.Call, h History, session string, a searchArgs, around int) tool.Outcome {
	if a.Entry == "" {
		return tool.Fail(CodeIndexRefused, "action=read needs entry (and session, default your own): copy them from a hit")
	}
	if a.Query != "" || a.Kind != "" || a.Before != 0 || a.Limit != nil || a.Syntax != "" || a.Scope != "" {
		return tool.Fail(CodeIndexRefused, "action=read takes entry, session and around only; query, syntax, kind, before, limit and scope belong to a search")
	}
	if a.Session != "" {
		session = a.Session
	}
	entries, err := h.Read(ctx, session, a.Entry, around)
	if err != nil {
		return refusalOutcome(err)
	}
	out := make([]entryJSON, len(entries))
	for i, e := range entries {
		out[i] = entryJSON{e.Session, e.ID, e.Kind, e.Role, e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), e.Text}
	}
	var data []byte
	if around == 0 && len(out) == 1 {
		data, err = json.MarshalIndent(out[0], "", "  ")
	} else {
		data, err = json.MarshalIndent(out, "", "  ")
	}
	if err != nil {
		return tool.Fail(CodeIndexUnavailable, "the entry could not be encoded: "+err.Error())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "history_search: entry %q of session %q", a.Entry, session)
	if around > 0 {
		fmt.Fprintf(&b, " with up to %d neighbouring entries on each side, oldest first", around)
	}
	b.WriteString(".\n")
	f := newFence()
	if len(data) <= blob.OverflowThreshold {
		f.quote(&b, string(data))
		return tool.Success(b.String()).WithDetails(ReadDetails{Entries: entries})
	}
	if c.Blobs == nil {
		return tool.Fail(tool.CodeSpillFailed, fmt.Sprintf("the read is %d bytes, over the %d-byte inline limit, and this host has no blob store to spill it to; read fewer neighbours (around)", len(data), blob.OverflowThreshold))
	}
	_, spilled, err := c.Blobs.Bound(data)
	if spilled == nil { // a refusal for the session's budget comes with the excerpts, shown below
		return tool.Fail(tool.CodeSpillFailed, fmt.Sprintf("the read is %d bytes, over the %d-byte inline limit, and spilling it failed: %v", len(data), blob.OverflowThreshold, err))
	}
	f.quote(&b, spilled.Text("the read"))
	if spilled.NotKept != "" {
		b.WriteString("The whole read was not kept (see above); read fewer neighbours (around), if any, to see more of it inline.\n")
		return tool.Success(b.String()).WithDetails(ReadDetails{Entries: entries, Overflow: spilled})
	}
	b.WriteString("The whole read is JSON in the file named above; read it in bounded slices (it may be one long line).\n")
	return tool.Success(b.String()).WithDetails(ReadDetails{Entries: entries, Overflow: spilled})
}

// overBound refuses, before any History is asked, a value over the bound
// the seam declares for it: the query (MaxQueryBytes, in either syntax),
// the kind (MaxKindBytes), the session and entry of a read (MaxIDBytes).
// The refusal states the size, never the value.
func overBound(a searchArgs) (tool.Outcome, bool) {
	for _, f := range []struct {
		name  string
		value string
		limit int
	}{
		{"query", a.Query, MaxQueryBytes},
		{"kind", a.Kind, MaxKindBytes},
		{"session", a.Session, MaxIDBytes},
		{"entry", a.Entry, MaxIDBytes},
	} {
		if len(f.value) > f.limit {
			return tool.Fail(CodeIndexRefused, fmt.Sprintf("the %s is %d bytes; at most %d are accepted", f.name, len(f.value), f.limit)), true
		}
	}
	return tool.Outcome{}, false
}

// clampArg settles a count argument the way every tool does: omitted or
// zero is def, a negative value is refused (bad, with the refusal in o),
// and a value over hi is clamped to it with a note saying so
// ("limit 80 clamped to 50").
func clampArg[T ~int](name string, v *T, def, hi int) (n int, note string, o tool.Outcome, bad bool) {
	switch {
	case v == nil || *v == 0:
		return def, "", tool.Outcome{}, false
	case *v < 0:
		return 0, "", tool.Fail(tool.CodeInvalidArguments, fmt.Sprintf("%s is %d; it must not be negative (omit it or send 0 for the default, %d)", name, *v, def)), true
	case int(*v) > hi:
		return hi, tool.ClampNote(name, int64(*v), int64(hi)), tool.Outcome{}, false
	}
	return int(*v), "", tool.Outcome{}, false
}

// withNote puts a clamp note on its own line ahead of o's text.
func withNote(note string, o tool.Outcome) tool.Outcome {
	if note != "" {
		o.Text = "note: " + note + "\n" + o.Text
	}
	return o
}

// refusalOutcome renders a seam failure for the model: the code, the
// message, and for a transient code the advice to send the same call again.
func refusalOutcome(err error) tool.Outcome {
	code := tool.CodeOf(err)
	if code == "" {
		code = CodeIndexUnavailable
	}
	msg := err.Error()
	if r := asRefusal(err); r != nil {
		msg = r.Message
	}
	text := fmt.Sprintf("%s: %s.", code, strings.TrimSuffix(msg, "."))
	switch {
	case Transient(code):
		text += " The request itself was fine: send the same call again."
	case code == CodeIndexRefused:
		text += " Change the query or check the IDs."
	}
	return tool.Fail(code, text)
}
