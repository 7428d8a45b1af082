package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentloom/loom/hashline"
)

type writeArgs struct {
	Path    string `json:"path" jsonschema:"file to write, relative to the workspace or absolute; missing parent directories are created"`
	Content string `json:"content" jsonschema:"the whole new content of the file"`
}

// WriteDetails is the Details of a successful fs_write.
type WriteDetails struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Lines   int    `json:"lines"`
	Digest  string `json:"digest"`
	Created bool   `json:"created"`
}

// WriteTool returns fs_write: replace a whole file (creating parents),
// answering with the digest and anchors of what it wrote so an edit can
// follow without a read.
func WriteTool() Tool {
	return Typed(Tool{
		Name: "fs_write",
		Description: "Write a whole file, creating missing parent directories. The answer gives the new `digest:` and " +
			"the file's `N:anchor|text` lines, enough to plan an fs_edit without reading the file again " +
			"(for files too large to show, fs_read them). Prefer fs_edit for changing part of an existing file. " +
			"Files over 8 MiB are refused.",
		PromptSnippet: "fs_write: create or replace a whole file",
		Replay:        ReplaySafe,
		Mode:          Exclusive,
	}, runWrite)
}

func runWrite(_ context.Context, c *Call, a writeArgs) Outcome {
	if len(a.Content) > MaxFileBytes {
		return Fail("file_too_large", fmt.Sprintf("content is %d bytes; at most %d bytes (8 MiB) are written", len(a.Content), MaxFileBytes))
	}
	path, err := c.ResolveWrite(a.Path)
	if err != nil {
		return pathFailure(err)
	}
	data := []byte(a.Content)
	res, err := writeWhole(path, data, true)
	if err != nil {
		return writeFailure(c, a.Path, res, err)
	}
	created := res.Created
	shown := c.displayPath(path)
	digest := hashline.Digest(data)
	lines := hashline.Annotate(data)
	var b strings.Builder
	verb := "wrote"
	if created {
		verb = "created"
	}
	fmt.Fprintf(&b, "%s %s (%d bytes, %d lines)\n", verb, shown, len(data), len(lines))
	fmt.Fprintf(&b, "digest: %s\n", digest)
	writeNotes(&b, res)
	if len(lines) > 0 {
		// Rendering is strictly larger than the content, so a file
		// already over the cap is never annotated to find out.
		text, complete := "", false
		if len(data) < hashline.MaxFreshAnchorBytes {
			text, complete, _ = hashline.RenderRegions(lines, []hashline.Region{{Start: 1, End: len(lines)}}, 0, hashline.MaxFreshAnchorBytes)
		}
		if complete {
			b.WriteString("Fresh anchors:\n")
			b.WriteString(text)
		} else {
			fmt.Fprintf(&b, "The file is too large to show its anchors here (over %d bytes rendered); fs_read it, with offset/limit for the part you will edit.\n", hashline.MaxFreshAnchorBytes)
		}
	}
	return Outcome{Text: b.String(), Details: WriteDetails{Path: shown, Bytes: len(data), Lines: len(lines), Digest: digest, Created: created}}
}

// writeNotes states what a successful write could not make durable: a
// directory sync that failed after the rename (the content is in place
// but may not survive a crash). Parents a write created are implied by
// its success ("missing parent directories are created"); a failed
// write names them (see writeResult.changed).
func writeNotes(b *strings.Builder, res writeResult) {
	if res.SyncErr != nil {
		fmt.Fprintf(b, "warning: the file is written, but its directory could not be synced (%v); a crash now could lose it\n", res.SyncErr)
	}
}

// writeFailure renders a failed write, saying what it changed anyway.
func writeFailure(c *Call, path string, res writeResult, err error) Outcome {
	code := "write_failed"
	switch {
	case errors.Is(err, ErrPathChanged):
		code = "path_changed"
	case errors.Is(err, ErrNotRegularFile):
		code = "not_a_regular_file"
	}
	return Fail(code, fmt.Sprintf("%s: %v (%s)", path, err, res.changed(c)))
}
