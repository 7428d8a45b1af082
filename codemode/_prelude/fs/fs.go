// Package fs reads, lists, writes and edits files in the workspace.
//
// Paths are relative to the workspace root (absolute paths under it also
// work). The host applies the same checks as its fs_read, fs_write and
// fs_edit tools: a path outside the workspace fails with code
// "outside_roots", a protected path (such as a .git control file) with
// "protected_path", a missing one with "not_found". Writing and editing
// need the fs_write and fs_edit tools; without them a call fails with
// "tool_not_held".
//
// Every function is safe to call from many goroutines at once; each call
// is one round trip to the host, bounded by the host's per-call timeout.
//
// Example:
//
//	f, err := fs.Read(ctx, "go.mod")
//	if err != nil {
//		var e *fs.Error
//		if errors.As(err, &e) && e.Code == "not_found" {
//			fmt.Println("no go.mod")
//			return
//		}
//		panic(err)
//	}
//	fmt.Println(strings.SplitN(f.Text(), "\n", 2)[0])
//	_, err = fs.Edit(ctx, "main.go", fs.Replacement{Find: "Hello", Replace: "Hi"})
package fs

import (
	"context"

	"cap/internal/client"
)

// Error is the error every cap package returns: fs.Error, search.Error,
// proc.Error, kv.Error, report.Error and job.Error are one type, so one
// errors.As catches a failure from any package.
//
//	type Error struct {
//		Cap     string // the capability called, e.g. "fs.read"
//		Code    string // a stable snake_case word to switch on
//		Message string // what happened and what to do about it
//	}
//
// Code is the host's refusal code ("not_found", "outside_roots",
// "protected_path", "tool_not_held", "invalid_capability_arguments",
// "call_timeout", "too_many_calls", "execution_ending", ...) or one of
// the prelude's own: "cancelled" (the call's context ended;
// errors.Is(err, context.Canceled) or context.DeadlineExceeded also
// holds), "channel_closed" (the host is gone; no later call can
// succeed), "bad_result" (the host's answer had the wrong shape),
// "frame_too_large" (the arguments exceed 16 MiB; nothing was sent).
type Error = client.Error

// Entry kinds in a Listing.
const (
	KindFile  = "file"
	KindDir   = "dir"
	KindLink  = "link"
	KindOther = "other"
)

// File is a file's content as read.
type File struct {
	Path    string // the path as the host resolved it, relative to the workspace
	Content []byte // the whole content
	Size    int    // len(Content)
}

// Text returns the content as a string.
func (f File) Text() string { return string(f.Content) }

// Read returns the whole content of the file at path. The host refuses
// files past its size bound of 8 MiB ("file_too_large"), a directory
// ("is_a_directory": list it with List) and anything else that is not a
// regular file ("not_a_regular_file").
func Read(ctx context.Context, path string) (File, error) {
	const name = "fs.read"
	m, err := client.Call(ctx, name, map[string]any{"path": path})
	if err != nil {
		return File{}, err
	}
	r := client.Read(m)
	f := File{Path: r.Str("path"), Content: r.Bytes("content"), Size: r.Int("size")}
	return f, r.Err(name)
}

// Entry is one name in a directory.
type Entry struct {
	Name string // the base name
	Kind string // KindFile, KindDir, KindLink or KindOther
	Size int    // bytes, for a file
}

// Listing is a directory's entries.
type Listing struct {
	Path      string
	Entries   []Entry
	Truncated bool // true when the host's bound cut the list short
}

// List returns the entries of the directory at path ("" or "." is the
// workspace root). Links are listed, never followed.
func List(ctx context.Context, path string) (Listing, error) {
	const name = "fs.list"
	m, err := client.Call(ctx, name, map[string]any{"path": path})
	if err != nil {
		return Listing{}, err
	}
	r := client.Read(m)
	l := Listing{Path: r.Str("path"), Truncated: r.Bool("truncated")}
	r.Maps("entries", func(e *client.Fields) {
		l.Entries = append(l.Entries, Entry{Name: e.Str("name"), Kind: e.Str("kind"), Size: e.Int("size")})
	})
	return l, r.Err(name)
}

// WriteResult says what Write did.
type WriteResult struct {
	Path    string
	Bytes   int  // bytes written
	Created bool // true when the file did not exist before
	// Diagnostics is what the workspace's language server found in the
	// file once it landed, as fs_write shows it (errors first, each with
	// its line's N:anchor; "clean" only when it settled with none); empty
	// when no server is configured.
	Diagnostics string
}

// Write replaces the whole file at path with content, creating it and
// any missing parent directories, as the fs_write tool does.
func Write(ctx context.Context, path string, content []byte) (WriteResult, error) {
	const name = "fs.write"
	if content == nil {
		content = []byte{}
	}
	m, err := client.Call(ctx, name, map[string]any{"path": path, "content": content})
	if err != nil {
		return WriteResult{}, err
	}
	r := client.Read(m)
	w := WriteResult{Path: r.Str("path"), Bytes: r.Int("bytes"), Created: r.Bool("created"), Diagnostics: r.Str("diagnostics")}
	return w, r.Err(name)
}

// Replacement is one exact find/replace of Edit.
type Replacement struct {
	Find    string // text that must occur exactly once in the file
	Replace string // what replaces it
}

// EditResult says what Edit did.
type EditResult struct {
	Path     string
	Replaced int // the number of replacements applied (all of them)
	// Diagnostics is as WriteResult's.
	Diagnostics string
}

// Edit applies edits to the file at path in order, each Find matched
// against the content as the earlier edits left it. Each Find must occur
// exactly once; if any does not, nothing is written and the error
// ("edit_no_match") says which. All or nothing.
func Edit(ctx context.Context, path string, edits ...Replacement) (EditResult, error) {
	const name = "fs.edit"
	list := make([]any, len(edits))
	for i, e := range edits {
		list[i] = map[string]any{"find": e.Find, "replace": e.Replace}
	}
	m, err := client.Call(ctx, name, map[string]any{"path": path, "edits": list})
	if err != nil {
		return EditResult{}, err
	}
	r := client.Read(m)
	e := EditResult{Path: r.Str("path"), Replaced: r.Int("replaced"), Diagnostics: r.Str("diagnostics")}
	return e, r.Err(name)
}
