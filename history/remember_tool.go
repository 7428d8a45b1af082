package history

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloom/loom/tool"
)

// RememberToolName is the name of the tool RememberTool builds.
const RememberToolName = "remember"

// rememberArgs are remember's arguments; all are required.
type rememberArgs struct {
	Title       noteTitle       `json:"title"`
	Description noteDescription `json:"description"`
	Note        noteText        `json:"note"`
	Kind        NoteKind        `json:"kind"`
}

// noteTitle, noteDescription and noteText are the types of remember's text
// arguments, so that their schemas can state the bounds from their
// constants.
type (
	noteTitle       string
	noteDescription string
	noteText        string
)

var (
	// The bounds are stated once, in the description.
	titleSchema       = &jsonschema.Schema{Type: "string"}
	descriptionSchema = &jsonschema.Schema{Type: "string", Description: "when it matters"}
	noteTextSchema    = &jsonschema.Schema{Type: "string"}
)

var noteKindSchema = &jsonschema.Schema{Type: "string", Enum: []any{string(Feedback), string(Fact), string(Decision)}}

// RememberTool returns remember over m. session tells which session a
// call belongs to (nil means StrandSession). The tool checks the note with
// PrepareNote (redaction first) and hands the model's text to m, which
// checks it again and stores it, or finds an identical note already
// stored, which the answer says (Remembered.AlreadyStored).
//
// It asks the broker for nothing. It is ReplayNever: a Memory need not
// recognise a note it already holds, and one that does not would store a
// replay twice and spend two of the MaxNotes lifetime slots. It is
// Exclusive: two in one batch would only contend for the one writer.
func RememberTool(m Memory, session SessionOf) tool.Tool {
	if session == nil {
		session = StrandSession
	}
	return tool.Typed(tool.Tool{
		Name:          RememberToolName,
		Title:         "Remember a fact",
		Description:   rememberDescription,
		PromptSnippet: "remember: leave a durable note for later sessions of this repository",
		Replay:        tool.ReplayNever,
		Mode:          tool.Exclusive,
	}, func(ctx context.Context, c *tool.Call, a rememberArgs) tool.Outcome {
		return runRemember(ctx, c, m, session(c), a)
	},
		tool.TypeSchema{Type: reflect.TypeFor[NoteKind](), Schema: noteKindSchema},
		tool.TypeSchema{Type: reflect.TypeFor[noteTitle](), Schema: titleSchema},
		tool.TypeSchema{Type: reflect.TypeFor[noteDescription](), Schema: descriptionSchema},
		tool.TypeSchema{Type: reflect.TypeFor[noteText](), Schema: noteTextSchema})
}

var rememberDescription = fmt.Sprintf(
	"Leave a durable note for later sessions of this repository: what the user asked or corrected (feedback), a truth "+
		"about it (fact), or a choice and why (decision); they read it only with history_search kind=note. title: one line, "+
		"at most %d characters; description: one line, at most %d characters; note: at most %d characters. Secrets are "+
		"redacted before storage. At most %d notes are ever kept for a repository: write few.",
	maxTitleChars, maxDescriptionChars, maxNoteChars, MaxNotes)

// RememberDetails is the Details of a successful remember: the title and
// kind as stored (trimmed and redacted), and whether an identical note
// was already stored, so nothing new was.
type RememberDetails struct {
	Title         string   `json:"title"`
	Kind          NoteKind `json:"kind"`
	AlreadyStored bool     `json:"already_stored,omitempty"`
}

func runRemember(ctx context.Context, c *tool.Call, m Memory, session string, a rememberArgs) tool.Outcome {
	if m == nil {
		return memoryOutcome(refuse(CodeMemoryUnavailable, "this host keeps no memory"))
	}
	n := Note{Title: string(a.Title), Description: string(a.Description), Text: string(a.Note), Kind: a.Kind, Session: session, Time: c.Clock()}
	prepared, err := PrepareNote(n)
	if err != nil {
		return memoryOutcome(err)
	}
	r, err := m.Remember(ctx, n)
	if err != nil {
		return memoryOutcome(err)
	}
	text := fmt.Sprintf("Remembered %s note %q. Later sessions find it with history_search kind=note.", prepared.Kind, prepared.Title)
	if r.AlreadyStored {
		text = fmt.Sprintf("An identical %s note %q is already stored: nothing new was stored and no note slot was spent. "+
			"Later sessions find it with history_search kind=note.", prepared.Kind, prepared.Title)
	}
	if prepared.Text != string(a.Note) || prepared.Title != string(a.Title) || prepared.Description != string(a.Description) {
		text += " (Surrounding blanks were trimmed and anything that looked like a secret was replaced by " + redactedMark + ".)"
	}
	return tool.Success(text).WithDetails(RememberDetails{Title: prepared.Title, Kind: prepared.Kind, AlreadyStored: r.AlreadyStored})
}

// memoryOutcome renders a Memory refusal for the model.
func memoryOutcome(err error) tool.Outcome {
	code := tool.CodeOf(err)
	if code == "" {
		code = CodeMemoryUnavailable
	}
	msg := err.Error()
	if r := asRefusal(err); r != nil {
		msg = r.Message
	}
	text := fmt.Sprintf("%s: %s.", code, msg)
	if Transient(code) {
		text += " The note was fine: send the same call again later."
	}
	return tool.Fail(code, text)
}
