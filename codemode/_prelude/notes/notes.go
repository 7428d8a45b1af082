// Package notes reads and writes the session's durable notes: small JSON
// values that outlive the program, shared by every agent of the session
// (what agent_note and agent_notes read and write). You write only under
// your own namespace, "agent/{your strand}/"; you read anyone's. Keys are
// write-once: writing the same value again succeeds, a different one
// fails with "note_exists". A value is one JSON document of at most 1 MiB
// ("note_too_large"); agent_notes shows a value over 16 KiB only by its
// size, so keep what another agent must read at a glance small. Read
// serves the read-only note:// views as JSON. Writing needs the agent_note tool, reading
// agent_notes ("tool_not_held" without them). The host counts writes and
// reads per program ("admission_ceiling"; waiting frees no slot).
//
// Safe to call from many goroutines at once.
//
// Example:
//
//	key, err := notes.Put(ctx, "plan", []byte(`{"step":1}`))
//	if err != nil {
//		panic(err)
//	}
//	v, found, err := notes.Get(ctx, key)
//	if err != nil || !found {
//		panic(fmt.Sprint("no note ", key, err))
//	}
//	all, _, err := notes.List(ctx, "agent/")
//	fmt.Println(key, string(v), len(all), err)
package notes

import (
	"context"

	"cap/internal/client"
)

// Error is the error every cap package returns: notes.Error, fs.Error
// and the rest are one type. Fields: Cap (e.g. "notes.put"), Code (a
// stable snake_case word to switch on), Message.
type Error = client.Error

// Note is one entry: Key is the full key, "agent/{strand}/{key}", Value
// its JSON.
type Note struct {
	Key   string
	Value []byte
}

// Put writes value (one JSON value) under key in your own namespace and
// returns the full key it was written under. key is relative to that
// namespace: "plan" is written as "agent/{your strand}/plan", and
// "agent/x/plan" as "agent/{your strand}/agent/x/plan".
func Put(ctx context.Context, key string, value []byte) (fullKey string, err error) {
	const name = "notes.put"
	if value == nil {
		value = []byte{}
	}
	m, err := client.Call(ctx, name, map[string]any{"key": key, "value": value})
	if err != nil {
		return "", err
	}
	r := client.Read(m)
	fullKey = r.Str("key")
	return fullKey, r.Err(name)
}

// Get reads the note under a full key (as Put and List return it, so it
// starts with "agent/"; a relative key such as "plan" fails with
// "bad_note_key"); found is false when there is none.
func Get(ctx context.Context, fullKey string) (value []byte, found bool, err error) {
	const name = "notes.get"
	m, err := client.Call(ctx, name, map[string]any{"key": fullKey})
	if err != nil {
		return nil, false, err
	}
	r := client.Read(m)
	value, found = r.Bytes("value"), r.Bool("found")
	if err := r.Err(name); err != nil || !found {
		return nil, false, err
	}
	return value, true, nil
}

// List reads the notes whose full key starts with prefix (which starts
// with "agent/"; "" lists them all), in key order; truncated says more
// matched than the host returns at once.
func List(ctx context.Context, prefix string) (notes []Note, truncated bool, err error) {
	const name = "notes.list"
	m, err := client.Call(ctx, name, map[string]any{"prefix": prefix})
	if err != nil {
		return nil, false, err
	}
	r := client.Read(m)
	r.Maps("notes", func(f *client.Fields) { notes = append(notes, Note{Key: f.Str("key"), Value: f.Bytes("value")}) })
	truncated = r.Bool("truncated")
	return notes, truncated, r.Err(name)
}

// Read reads a note:// view as JSON (the path may leave out "note://"):
// "note://agent/{strand}/{key}" is that note's value, indented, and a
// path ending in "/" (or "note://" alone) lists the notes under it as
// {"prefix": ..., "notes": [{"key": ..., "bytes": ...}], "truncated": ...},
// without their values. A key no note is written under fails with
// "note_not_found". It counts as a note read.
func Read(ctx context.Context, path string) (view []byte, err error) {
	const name = "notes.read"
	m, err := client.Call(ctx, name, map[string]any{"path": path})
	if err != nil {
		return nil, err
	}
	r := client.Read(m)
	view = r.Bytes("json")
	return view, r.Err(name)
}
