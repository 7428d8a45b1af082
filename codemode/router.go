package codemode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/lsp"
	"github.com/agentloom/loom/tool"
)

// Bounds of the workspace seam's capabilities.
const (
	// maxEmitBytes bounds one report.emit artifact. (Not the frame
	// bound: a frame is transient, an artifact a durable blob.)
	maxEmitBytes = 1 << 20
	// maxFSEdits bounds the find/replace pairs of one fs.edit.
	maxFSEdits = 64
	// maxGlobPaths bounds the paths one search.glob answers.
	maxGlobPaths = 1000
	// maxGrepMatches is the largest max_results a search.grep takes, and
	// its default.
	maxGrepMatches = tool.MaxGrepResults
	// maxJobWaitMs bounds job.poll's wait_ms.
	maxJobWaitMs = 30_000
)

// Artifact is one report.emit of an execution: a blob in the host's
// store.
type Artifact struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type,omitempty"`
	Digest    string `json:"digest"`
	Bytes     int    `json:"bytes"`
	Path      string `json:"path"` // the blob's path, readable with fs_read
}

// seamHost is what the routers serve a program from: the seam its
// binary was vetted on (the only capabilities served), the code_mode call
// (its pinned roots, identity and session), never raising a refusal (a
// program's refusals are answered in band), the registry whose holds gate
// the capabilities, the job plane, the kv store, the Agency and the
// execution's admission tally.
type seamHost struct {
	seam   Seam
	call   *tool.Call
	reg    *tool.Registry
	jobs   job.Jobs // nil: the host serves no job plane
	kv     *kvStore
	proc   *procRunner
	agency agent.Agency     // nil: no strand.* or notes.*
	diag   tool.Diagnostics // nil: fs.write and fs.edit answer no diagnostics
	lsp    *lsp.Plane       // nil: no lsp.*
	mcp    *mcpSet          // nil: no mcp.*
	adm    admissions
	// permit is what the permissions composed before the start settled
	// (nil: none declared).
	permit *permit
	// exec is the launched execution the program is, under execs; nil
	// for a foreground run.
	exec  *execution
	execs *executions

	mu        sync.Mutex
	artifacts []Artifact
}

// route serves one capability call. The error is a *CapError (or a
// tool.FileError, a job refusal) carrying a code.
func (h *seamHost) route(ctx context.Context, cap string, m map[string]any) (any, error) {
	c := h.lookup(cap)
	if c == nil || !h.seam.offers(cap) {
		return nil, h.unknownCapability(cap)
	}
	if err := gate(ctx, h.reg, c, h.call.Strand); err != nil {
		return nil, err
	}
	return c.serve(h, ctx, newCapArgs(cap, m))
}

// lookup is the row of cap: the table's, else an MCP package's; nil
// for none.
func (h *seamHost) lookup(cap string) *capability {
	if c := lookupCapability(cap); c != nil {
		return c
	}
	return h.mcp.row(cap)
}

// summary is the call record's summary of a call of cap, as summary's.
func (h *seamHost) summary(cap string, m map[string]any) string {
	return summaryOf(h.lookup(cap), m)
}

// unknownCapability refuses cap, naming what the seam offers.
func (h *seamHost) unknownCapability(cap string) error {
	if strings.HasPrefix(cap, mcpCapPrefix) {
		return &CapError{Code: codeUnknownCapability, Message: fmt.Sprintf("no capability %s on the %s seam: %s offers no such tool (fs_read cap://%s lists its functions)", quoteArg(cap), h.seam.Name, capPackagePath(cap), strings.TrimPrefix(capPackagePath(cap), preludeModule+"/"))}
	}
	return &CapError{Code: codeUnknownCapability, Message: fmt.Sprintf("no capability %s on the %s seam; it offers %s", quoteArg(cap), h.seam.Name, strings.Join(h.seam.capabilities(), ", "))}
}

func (h *seamHost) fsRead(_ context.Context, a *capArgs) (any, error) {
	path := a.str("path", true)
	if err := a.done(); err != nil {
		return nil, err
	}
	f, err := h.call.ReadFile(path)
	if err != nil {
		return nil, forProgram(path, err)
	}
	return map[string]any{"path": f.Path, "content": f.Content, "size": len(f.Content)}, nil
}

func (h *seamHost) fsList(_ context.Context, a *capArgs) (any, error) {
	path := a.str("path", false)
	if err := a.done(); err != nil {
		return nil, err
	}
	if path == "" {
		path = "."
	}
	entries, more, err := h.call.ListDir(path, 0)
	if err != nil {
		return nil, forProgram(path, err)
	}
	list := make([]any, len(entries))
	for i, e := range entries {
		list[i] = map[string]any{"name": e.Name, "kind": e.Kind, "size": e.Size}
	}
	return map[string]any{"path": path, "entries": list, "truncated": more}, nil
}

func (h *seamHost) fsWrite(ctx context.Context, a *capArgs) (any, error) {
	path, content := a.str("path", true), a.bytes("content", false)
	if err := a.done(); err != nil {
		return nil, err
	}
	w, err := h.call.WriteFile(path, content)
	if err != nil {
		return nil, forProgram(path, err)
	}
	return map[string]any{"path": w.Path, "bytes": w.Bytes, "created": w.Created,
		"diagnostics": h.call.DiagnoseWritten(ctx, h.diag, w, content)}, nil
}

// fsEdit applies exact find/replace pairs in order, each find present
// exactly once in the text it is applied to, all or nothing.
func (h *seamHost) fsEdit(ctx context.Context, a *capArgs) (any, error) {
	path, edits := a.str("path", true), a.list("edits", true)
	if err := a.done(); err != nil {
		return nil, err
	}
	if len(edits) == 0 || len(edits) > maxFSEdits {
		return nil, &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("fs.edit takes 1 to %d edits (got %d)", maxFSEdits, len(edits))}
	}
	f, err := h.call.ReadFile(path)
	if err != nil {
		return nil, forProgram(path, err)
	}
	text := string(f.Content)
	for i, e := range edits {
		em, ok := e.(map[string]any)
		if !ok {
			return nil, &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("edits[%d] must be {find, replace}", i)}
		}
		ea := newCapArgs(fmt.Sprintf("fs.edit edits[%d]", i), em)
		find, replace := ea.str("find", true), ea.str("replace", false)
		if err := ea.done(); err != nil {
			return nil, err
		}
		switch n := strings.Count(text, find); {
		case find == "":
			return nil, &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("edits[%d].find is empty", i)}
		case n != 1:
			return nil, &CapError{Code: codeEditNoMatch, Message: fmt.Sprintf("edits[%d].find %s occurs %d times in %s after the edits before it; it must occur exactly once. Nothing was written", i, quoteArg(find), n, f.Path)}
		}
		text = strings.Replace(text, find, replace, 1)
	}
	w, err := h.call.WriteFile(path, []byte(text))
	if err != nil {
		return nil, forProgram(path, err)
	}
	return map[string]any{"path": f.Path, "replaced": len(edits),
		"diagnostics": h.call.DiagnoseWritten(ctx, h.diag, w, []byte(text))}, nil
}

func (h *seamHost) kvGet(_ context.Context, a *capArgs) (any, error) {
	key := a.str("key", true)
	if err := a.done(); err != nil {
		return nil, err
	}
	v, ok, err := h.kv.Get(h.call.Strand, key)
	if err != nil {
		return nil, err
	}
	return map[string]any{"value": v, "found": ok}, nil
}

func (h *seamHost) kvSet(_ context.Context, a *capArgs) (any, error) {
	key, val := a.str("key", true), a.bytes("value", false)
	if err := a.done(); err != nil {
		return nil, err
	}
	if err := h.kv.Set(h.call.Strand, key, val); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

func (h *seamHost) kvDelete(_ context.Context, a *capArgs) (any, error) {
	key := a.str("key", true)
	if err := a.done(); err != nil {
		return nil, err
	}
	had, err := h.kv.Delete(h.call.Strand, key)
	if err != nil {
		return nil, err
	}
	return map[string]any{"deleted": had}, nil
}

// emit mints an artifact in the blob store, admitted against maxEmits.
func (h *seamHost) emit(_ context.Context, a *capArgs) (any, error) {
	name, content, media := a.str("name", true), a.bytes("content", false), a.str("media_type", false)
	if err := a.done(); err != nil {
		return nil, err
	}
	if len(content) > maxEmitBytes {
		return nil, &CapError{Code: codeArtifactTooLarge, Message: fmt.Sprintf("report.emit content is %d bytes; at most %d (%d MiB) per artifact", len(content), maxEmitBytes, maxEmitBytes>>20)}
	}
	if h.call.Blobs == nil {
		return nil, &CapError{Code: tool.CodeBlobStore, Message: "this host has no blob store, so report.emit cannot keep an artifact"}
	}
	if _, err := h.adm.admit(admitEmit, "report.emit"); err != nil {
		return nil, err
	}
	ref, err := h.call.Blobs.Put(content)
	if err != nil {
		return nil, &CapError{Code: tool.Code(blob.CodeOf(err)), Message: "report.emit could not store the artifact: " + err.Error()}
	}
	art := Artifact{Name: cutSummary(name), MediaType: cutSummary(media), Digest: string(ref), Bytes: len(content), Path: h.call.Blobs.Path(ref)}
	h.mu.Lock()
	h.artifacts = append(h.artifacts, art)
	h.mu.Unlock()
	return map[string]any{"digest": art.Digest, "bytes": art.Bytes}, nil
}

// forProgram words a file API refusal for a program, where the file
// tools' own advice (list with bash, create with fs_write, ask for
// permissions) names what a program cannot call; the code stays the
// tools' own.
func forProgram(path string, err error) error {
	var fe *tool.FileError
	if !errors.As(err, &fe) {
		return err
	}
	switch fe.Code {
	case tool.CodeNotFound:
		return &CapError{Code: fe.Code, Message: fmt.Sprintf("%s does not exist; paths are relative to the workspace root: list a directory with fs.List, or create the file with fs.Write", quoteArg(path))}
	case tool.CodeIsADirectory:
		return &CapError{Code: fe.Code, Message: fmt.Sprintf("%s is a directory: list it with fs.List", quoteArg(path))}
	case tool.CodeOutsideRoots:
		return &CapError{Code: fe.Code, Message: fmt.Sprintf("%s is outside the workspace and every root this call may reach; to reach it, declare it in the code_mode call's permissions (readable_roots or writable_roots) and submit the program again", quoteArg(path))}
	}
	return err
}

// codeOf reads the code of a routed call's error: tool.CodeOf's (a
// CapError's, the file API's, a job refusal's, ...), else codeProcFailed
// for an uncoded failure.
func codeOf(err error) tool.Code {
	if c := tool.CodeOf(err); c != "" {
		return c
	}
	return codeProcFailed
}
