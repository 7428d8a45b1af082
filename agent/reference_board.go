package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/agentloom/loom/todo"
	"github.com/agentloom/loom/tool"
)

// noteEntry is one stored note: compact JSON.
type noteEntry struct {
	value json.RawMessage
}

// maxTodoRetries bounds the compare-and-set attempts of one todo call.
const maxTodoRetries = 8

// todoCell is one strand's board with its compare-and-set sequence.
type todoCell struct {
	board todo.Board
	seq   uint64
}

// validNoteKey reports whether key may name a note: segments of
// [A-Za-z0-9._-] separated by single '/', none of them "." or "..", at
// most maxNoteKeyBytes, and not the reserved todo cell.
func validNoteKey(key string) bool {
	if key == "" || len(key) > maxNoteKeyBytes || key == todoNoteKey {
		return false
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			ok := c == '.' || c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
			if !ok {
				return false
			}
		}
	}
	return true
}

// Note implements Agency.
func (a *Reference) Note(ctx context.Context, c Caller, key string, value json.RawMessage) (Note, error) {
	if !validNoteKey(key) {
		return Note{}, refuse(CodeBadNoteKey, "note key %s must be segments of letters, digits, '.', '_' or '-' joined by '/', at most %d bytes, and not %q", quote(key), maxNoteKeyBytes, todoNoteKey)
	}
	if len(value) > MaxProgramNoteBytes {
		return Note{}, refuse(CodeNoteTooLarge, "the note is %d bytes, more than %d (%d MiB); store a summary", len(value), MaxProgramNoteBytes, MaxProgramNoteBytes>>20)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, value); err != nil || compact.Len() == 0 {
		return Note{}, refuse(CodeNoteTooLarge, "the note value must be one JSON value")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.callerLocked(c); err != nil {
		return Note{}, err
	}
	full := NoteKey(c.Strand, key)
	v := json.RawMessage(compact.Bytes())
	if key == ResultNoteKey && len(v) > MaxNoteBytes {
		return Note{}, refuse(CodeNoteTooLarge, "a result note is at most %d bytes (%d KiB), and this one is %d; record a summary and put the rest under another key", MaxNoteBytes, MaxNoteBytes>>10, len(v))
	}
	if old, ok := a.notes[full]; ok {
		if bytes.Equal(old.value, v) {
			return Note{Key: full, Value: old.value}, nil
		}
		return Note{}, refuse(CodeNoteExists, "%s is already written and notes are write-once; write a new key", full)
	}
	if a.written[c.Strand] >= maxNotesPerStrand {
		return Note{}, refuse(CodeNoteLimit, "%q has written %d notes, the most allowed", c.Strand, maxNotesPerStrand)
	}
	if a.writtenBytes[c.Strand]+len(v) > maxStrandNoteBytes {
		return Note{}, refuse(CodeNoteLimit, "%q has written %d bytes of notes; with this one's %d that passes the %d MiB allowed", c.Strand, a.writtenBytes[c.Strand], len(v), maxStrandNoteBytes>>20)
	}
	a.notes[full] = noteEntry{value: v}
	a.written[c.Strand]++
	a.writtenBytes[c.Strand] += len(v)
	return Note{Key: full, Value: v}, nil
}

// Notes implements Agency. The blackboard is the session's: any strand
// reads every strand's notes, while each writes only under its own
// prefix. Todo cells appear as their board's JSON.
func (a *Reference) Notes(ctx context.Context, c Caller, prefix string) (NotesPage, error) {
	if !strings.HasPrefix(prefix, NotesNamespace) {
		return NotesPage{}, refuse(CodeBadNoteKey, "a notes prefix must start with %q", NotesNamespace)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.callerLocked(c); err != nil {
		return NotesPage{}, err
	}
	var keys []string
	for k := range a.notes {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	for s, cell := range a.todos {
		if k := NoteKey(s, todoNoteKey); strings.HasPrefix(k, prefix) && len(cell.board.Tasks) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	page := NotesPage{}
	if len(keys) > MaxNotesListed {
		keys, page.Truncated = keys[:MaxNotesListed], true
	}
	for _, k := range keys {
		if e, ok := a.notes[k]; ok {
			page.Notes = append(page.Notes, Note{Key: k, Value: e.value})
			continue
		}
		strand := strings.TrimSuffix(strings.TrimPrefix(k, NotesNamespace), "/"+todoNoteKey)
		b, _ := json.Marshal(a.todos[strand].board)
		page.Notes = append(page.Notes, Note{Key: k, Value: b})
	}
	return page, nil
}

// Todos implements Agency. step runs outside the lock on a snapshot, and
// its board lands only if nobody wrote the cell meanwhile. Otherwise step
// runs again on the fresh board, at most 8 times in all (then
// CodeTodoConflict), unless ctx has ended (then tool.CodeCancelled).
func (a *Reference) Todos(ctx context.Context, c Caller, step func(todo.Board) (todo.Board, error)) (todo.Board, error) {
	for range maxTodoRetries {
		a.mu.Lock()
		if _, err := a.callerLocked(c); err != nil {
			a.mu.Unlock()
			return todo.Board{}, err
		}
		cell := a.todos[c.Strand]
		var seen todo.Board
		var seq uint64
		if cell != nil {
			seen, seq = cell.board.Clone(), cell.seq
		}
		a.mu.Unlock()

		next, err := step(seen)
		if err != nil {
			return todo.Board{}, err
		}
		if err := next.Validate(); err != nil {
			return todo.Board{}, err
		}

		a.mu.Lock()
		cell = a.todos[c.Strand]
		var now uint64
		if cell != nil {
			now = cell.seq
		}
		if now == seq {
			a.todos[c.Strand] = &todoCell{board: next.Clone(), seq: seq + 1}
			a.mu.Unlock()
			return next, nil
		}
		a.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return todo.Board{}, &Refusal{Code: tool.CodeCancelled, Reason: "the call's context ended while the board was contended; nothing was written", Err: err}
		}
	}
	return todo.Board{}, refuse(CodeTodoConflict, "the board changed under this call %d times in a row; try again", maxTodoRetries)
}
