package history

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// NoteKind classifies a note; the set is closed.
type NoteKind string

const (
	// Feedback is something the user asked for or corrected.
	Feedback NoteKind = "feedback"
	// Fact is something true about the repository or its environment.
	Fact NoteKind = "fact"
	// Decision is a choice made and the reason for it.
	Decision NoteKind = "decision"
)

// noteKinds returns every NoteKind, in the order the tool documents them.
// The slice is the caller's.
func noteKinds() []NoteKind { return []NoteKind{Feedback, Fact, Decision} }

// Valid reports whether k is Feedback, Fact or Decision.
func (k NoteKind) Valid() bool {
	for _, v := range noteKinds() {
		if k == v {
			return true
		}
	}
	return false
}

// Bounds of a note and of the memory store.
const (
	// maxTitleChars bounds a note's title, in characters (runes).
	maxTitleChars = 80
	// maxDescriptionChars bounds a note's one-line description, in
	// characters.
	maxDescriptionChars = 160
	// maxNoteChars bounds a note's text, in characters, after redaction.
	maxNoteChars = 4000
	// MaxNotes is the lifetime ceiling: the most notes one memory store
	// ever accepts. It is a durable count of distinct notes (one found
	// already stored is not counted again), never reset.
	MaxNotes = 500
)

// Note is one durable note. The tool fills Title, Description, Text and
// Kind from the model's arguments, and Session and Time from the call.
// PrepareNote states the bounds a stored note keeps.
type Note struct {
	// Title names the note: one line of at most 80 characters.
	Title string
	// Description says in one line of at most 160 characters what the
	// note is about.
	Description string
	// Text is the note itself: at most 4000 characters.
	Text string
	// Kind classifies the note.
	Kind NoteKind
	// Session is the session that wrote the note; the host's, never the
	// model's choice.
	Session string
	// Time is when the note was written; zero means the time it is stored.
	Time time.Time
}

// PrepareNote answers n as a Memory must store it, or a *Refusal. Memory
// implementations call it before storing.
//
// It first replaces every secret in the title, description and text by
// "[REDACTED]". The secrets are PEM private keys, provider API keys and
// tokens (sk-..., ghp_..., AKIA..., xoxb-..., AIza..., JWTs), bearer
// tokens, and the value of a KEY=value or KEY: value pair whose key names
// a secret (PASSWORD, API_KEY, CLIENT_SECRET, AUTH_TOKEN, ...). Redaction
// is idempotent. It then trims the three fields and judges them:
//   - CodeMemoryFieldInvalid: an unknown kind, a missing session, a text
//     that is not valid UTF-8, or a title (80 characters) or description
//     (160) that is blank, longer than its bound or not a single line;
//   - CodeNothingToRemember: a blank text;
//   - CodeMemoryNoteTooLong: a text over 4000 characters.
func PrepareNote(n Note) (Note, error) {
	n.Title = strings.TrimSpace(redact(n.Title))
	n.Description = strings.TrimSpace(redact(n.Description))
	n.Text = strings.TrimSpace(redact(n.Text))
	if !n.Kind.Valid() {
		return Note{}, refuse(CodeMemoryFieldInvalid, "kind %s is not one of feedback, fact, decision", quote(string(n.Kind)))
	}
	if n.Session == "" || len(n.Session) > MaxIDBytes {
		return Note{}, refuse(CodeMemoryFieldInvalid, "the note has no valid session (the host must set one of 1 to %d bytes)", MaxIDBytes)
	}
	if n.Text == "" {
		return Note{}, refuse(CodeNothingToRemember, "the note is blank; there is nothing to remember")
	}
	if err := checkLine("title", n.Title, maxTitleChars); err != nil {
		return Note{}, err
	}
	if err := checkLine("description", n.Description, maxDescriptionChars); err != nil {
		return Note{}, err
	}
	if c := utf8.RuneCountInString(n.Text); c > maxNoteChars {
		return Note{}, refuse(CodeMemoryNoteTooLong, "the note is %d characters; at most %d are accepted", c, maxNoteChars)
	}
	if !utf8.ValidString(n.Text) {
		return Note{}, refuse(CodeMemoryFieldInvalid, "the note is not valid UTF-8")
	}
	return n, nil
}

// checkLine judges a single-line field: not blank, at most limit
// characters, valid UTF-8 and free of control characters (line breaks
// included).
func checkLine(name, s string, limit int) error {
	if s == "" {
		return refuse(CodeMemoryFieldInvalid, "the %s is blank", name)
	}
	if !utf8.ValidString(s) {
		return refuse(CodeMemoryFieldInvalid, "the %s is not valid UTF-8", name)
	}
	if c := utf8.RuneCountInString(s); c > limit {
		return refuse(CodeMemoryFieldInvalid, "the %s is %d characters; at most %d are accepted", name, c, limit)
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return refuse(CodeMemoryFieldInvalid, "the %s must be one line without control characters", name)
		}
	}
	return nil
}
