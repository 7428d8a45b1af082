package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentloom/loom/agent"
)

// maxNoteListBytes bounds the values one notes.list or strand.notes
// answer carries in all: the notes past it are left out and the answer
// says truncated, as when more match than agent.MaxNotesListed. It keeps
// a page of program notes (each up to agent.MaxProgramNoteBytes) well
// inside the channel's frame.
const maxNoteListBytes = 8 << 20

// notesCall serves strand.note, strand.notes and cap/notes (put, get,
// list, read) onto the Agency's note closures, the ones agent_note and
// agent_notes call. A program's note value is bounded by
// agent.MaxProgramNoteBytes (1 MiB), apart from agent_note's
// agent.MaxNoteBytes (16 KiB): a program may keep a larger analysis,
// which the agent tools show only by size. Writes share one tally
// (maxNoteWrites), reads another (maxNoteReads). None of them asks the
// broker for anything.
func (h *seamHost) notesCall(ctx context.Context, a *capArgs) (any, error) {
	cap := a.cap
	if h.agency == nil {
		return nil, &CapError{Code: agent.CodeAgencyUnavailable, Message: "this host offers no agency, so " + cap + " cannot be served"}
	}
	var res any
	var err error
	switch cap {
	case "strand.note", "notes.put":
		res, err = h.notePut(ctx, cap, a)
	case "notes.get":
		res, err = h.noteGet(ctx, a)
	case "notes.read":
		res, err = h.noteRead(ctx, a)
	default:
		res, err = h.noteList(ctx, cap, a)
	}
	return res, fromAgency(err)
}

// notePut writes one note: a JSON value of at most
// agent.MaxProgramNoteBytes under the caller's own "agent/{strand}/"
// namespace, write-once.
func (h *seamHost) notePut(ctx context.Context, cap string, a *capArgs) (any, error) {
	key, value := a.str("key", true), a.bytes("value", true)
	if err := a.done(); err != nil {
		return nil, err
	}
	switch {
	case len(value) > agent.MaxProgramNoteBytes:
		return nil, &CapError{Code: agent.CodeNoteTooLarge, Message: fmt.Sprintf("%s value is %d bytes; a program's note is at most %d (%d MiB): store a summary, or the whole in a file", cap, len(value), agent.MaxProgramNoteBytes, agent.MaxProgramNoteBytes>>20)}
	case !json.Valid(value):
		return nil, &CapError{Code: codeInvalidCapabilityArguments, Message: cap + " value is not one JSON value; a note holds JSON (quote a string: \"\\\"text\\\"\")"}
	}
	if _, err := h.adm.admit(admitNoteWrite, cap); err != nil {
		return nil, err
	}
	n, err := h.agency.Note(ctx, h.caller(), key, json.RawMessage(value))
	if err != nil {
		return nil, err
	}
	return map[string]any{"key": n.Key}, nil
}

// noteGet reads the one note whose full key is key.
func (h *seamHost) noteGet(ctx context.Context, a *capArgs) (any, error) {
	key := a.str("key", true)
	if err := a.done(); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(key, agent.NotesNamespace) {
		return nil, &CapError{Code: agent.CodeBadNoteKey, Message: fmt.Sprintf("notes.get takes a full key, as notes.put answers it (%s{strand}/{key}); for this strand's own note %s that is %s",
			agent.NotesNamespace, quoteArg(key), quoteArg(agent.NoteKey(h.call.Strand, key)))}
	}
	if _, err := h.adm.admit(admitNoteRead, "notes.get"); err != nil {
		return nil, err
	}
	page, err := h.agency.Notes(ctx, h.caller(), key)
	if err != nil {
		return nil, err
	}
	for _, n := range page.Notes {
		if n.Key == key {
			return map[string]any{"value": []byte(n.Value), "found": true}, nil
		}
	}
	return map[string]any{"value": []byte{}, "found": false}, nil
}

// noteList reads the session's notes whose full key starts with prefix,
// in key order, at most agent.MaxNotesListed and maxNoteListBytes of
// values.
func (h *seamHost) noteList(ctx context.Context, cap string, a *capArgs) (any, error) {
	prefix := a.str("prefix", false)
	if err := a.done(); err != nil {
		return nil, err
	}
	if prefix == "" {
		prefix = agent.NotesNamespace
	}
	if _, err := h.adm.admit(admitNoteRead, cap); err != nil {
		return nil, err
	}
	page, err := h.agency.Notes(ctx, h.caller(), prefix)
	if err != nil {
		return nil, err
	}
	list := make([]any, 0, len(page.Notes))
	total, truncated := 0, page.Truncated
	for _, n := range page.Notes {
		if total+len(n.Value) > maxNoteListBytes {
			truncated = true
			break
		}
		total += len(n.Value)
		list = append(list, map[string]any{"key": n.Key, "value": []byte(n.Value)})
	}
	return map[string]any{"notes": list, "truncated": truncated}, nil
}

// noteRead answers a note:// view (agent.ReadNoteView) as serialized
// JSON, without passing the path through the filesystem router: a
// note's value indented, or for a path ending in "/" the listing
// {"prefix", "notes": [{"key", "bytes"}], "truncated"}. A path without
// the note:// scheme is read as one.
func (h *seamHost) noteRead(ctx context.Context, a *capArgs) (any, error) {
	path := a.str("path", true)
	if err := a.done(); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(path, agent.NoteSchemePrefix) {
		path = agent.NoteSchemePrefix + path
	}
	if _, err := h.adm.admit(admitNoteRead, "notes.read"); err != nil {
		return nil, err
	}
	v, err := agent.ReadNoteView(ctx, h.agency, h.caller(), path)
	if err != nil {
		return nil, err
	}
	if v.Key != "" {
		return map[string]any{"json": []byte(v.Value)}, nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return map[string]any{"json": b}, nil
}
