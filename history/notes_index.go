package history

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// NoteHeading is what the notes index shows of one stored note:
// everything but its text.
type NoteHeading struct {
	// Title and Description are the note's single lines.
	Title       string
	Description string
	// Kind classifies the note.
	Kind NoteKind
	// Session is the session that wrote it.
	Session string
	// Time is when it was written, in UTC.
	Time time.Time
}

// NoteLister is the seam the notes index reads: the stored notes'
// headings. The reference stores (history/sqlite, history/postgres)
// implement it beside Memory. Implementations must be safe for
// concurrent use and answer every failure with a *Refusal.
type NoteLister interface {
	// NoteHeadings answers the headings of the stored notes, newest
	// (last stored) first, at most limit of them.
	NoteHeadings(ctx context.Context, limit int) ([]NoteHeading, error)
}

// MaxNotesIndexBytes bounds the text of the notes index (NotesIndex.Text),
// fence and header included.
const MaxNotesIndexBytes = 8 << 10

// NotesIndex is the bounded index of memory notes a host shows a model at
// the start of a run, so that it knows what earlier sessions remembered
// without a read door: the newest notes' titles, descriptions and kinds,
// as many as fit in MaxNotesIndexBytes. A note's text is found with
// history_search kind=note.
type NotesIndex struct {
	// Shown are the headings the text lists, newest first.
	Shown []NoteHeading
	// Omitted is how many stored notes (older than every shown one) the
	// text leaves out to stay under MaxNotesIndexBytes.
	Omitted int
	// Text is the index as a model reads it: a header, the headings
	// between fence lines (they were written by models: quoted data, not
	// instructions), and how many were left out. Empty when no note is
	// stored.
	Text string
}

// IndexNotes reads every stored note's heading from l (at most MaxNotes,
// the lifetime ceiling, so the count left out is exact) and renders the
// index. A nil l answers the empty index.
func IndexNotes(ctx context.Context, l NoteLister) (NotesIndex, error) {
	if l == nil {
		return NotesIndex{}, nil
	}
	hs, err := l.NoteHeadings(ctx, MaxNotes)
	if err != nil {
		return NotesIndex{}, err
	}
	return renderNotesIndex(hs, MaxNotesIndexBytes), nil
}

// notesIndexHeader is said above the index's fence.
const notesIndexHeader = "Notes remembered in this repository (with remember), newest first: title, kind and what each is about. " +
	"Read one's text with history_search kind=note and words of its title."

// renderNotesIndex renders hs (newest first) as the index, keeping the
// newest headings whose lines fit with the frame in budget bytes.
func renderNotesIndex(hs []NoteHeading, budget int) NotesIndex {
	if len(hs) == 0 {
		return NotesIndex{}
	}
	f := newFence()
	frame := len(notesIndexHeader) + 1 + len(quoteHeader) + 1 + len(f.open()) + 1 + len(f.close()) + 1
	omittedLine := func(n int) string {
		return fmt.Sprintf("(%d older notes not listed: find them with history_search kind=note)\n", n)
	}
	var body strings.Builder
	idx := NotesIndex{}
	for i, h := range hs {
		line := defang(noteLine(h))
		reserve := 0
		if i < len(hs)-1 {
			reserve = len(omittedLine(len(hs) - i - 1))
		}
		if frame+body.Len()+len(line)+reserve > budget {
			break
		}
		body.WriteString(line)
		idx.Shown = append(idx.Shown, h)
	}
	idx.Omitted = len(hs) - len(idx.Shown)
	var b strings.Builder
	b.WriteString(notesIndexHeader)
	b.WriteByte('\n')
	if body.Len() == 0 {
		body.WriteString("(none fits)\n")
	}
	f.quote(&b, body.String())
	if idx.Omitted > 0 {
		b.WriteString(omittedLine(idx.Omitted))
	}
	idx.Text = b.String()
	return idx
}

// noteLine is one heading of the index: date, kind, title and
// description, one line. The fields are single lines already (PrepareNote);
// a line break a NoteLister let through is flattened all the same.
func noteLine(h NoteHeading) string {
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	date := "undated"
	if !h.Time.IsZero() {
		date = h.Time.UTC().Format(time.DateOnly)
	}
	return fmt.Sprintf("- %s [%s] %s: %s\n", date, flat(string(h.Kind)), flat(h.Title), flat(h.Description))
}

// HeadingOf reads the heading of a note stored the way the reference
// stores store one: an entry of kind KindNote whose role is the note's
// kind and whose text starts with the title and description lines. text
// may be cut after them.
func HeadingOf(session, role, text string, at time.Time) NoteHeading {
	title, rest, _ := strings.Cut(text, "\n")
	desc, _, _ := strings.Cut(rest, "\n")
	return NoteHeading{Title: title, Description: desc, Kind: NoteKind(role), Session: session, Time: at.UTC()}
}
