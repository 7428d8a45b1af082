package tool

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/sandbox"
)

// MaxCommandOutputBytes bounds what one command a tool runs may write to
// stdout and stderr together (128 MiB). At the bound the broker stops
// the command's whole tree. A host lowers it per call with
// Call.MaxOutputBytes, and for every broker client with
// broker.Options.MaxOutputBytes.
const MaxCommandOutputBytes = 128 << 20

// OutputBound is the output bound of a command this call runs:
// Call.MaxOutputBytes when set and lower than MaxCommandOutputBytes,
// else MaxCommandOutputBytes. A host may lower the bound, never raise it.
func (c *Call) OutputBound() int64 {
	if c.MaxOutputBytes > 0 && c.MaxOutputBytes < MaxCommandOutputBytes {
		return c.MaxOutputBytes
	}
	return MaxCommandOutputBytes
}

// CanonicalRoot turns a root a model requested for a command (a
// readable or writable root to ask the operator for) into the directory
// it really is: a relative root joins the workspace, then every symlink
// is resolved against the filesystem (components that do not exist yet
// are kept as written). A root that resolves outside the workspace is
// answered as what it resolves to (a link "rootfs -> /" answers "/"); one
// that resolves inside is expressed under the workspace path as the host
// wrote it, so base roots written the same way still cover it. It
// authorizes nothing: sandbox.Compose decides what the root needs.
func (c *Call) CanonicalRoot(p string) (string, error) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", errors.New("a root must be non-empty and free of NUL bytes")
	}
	if len(p) > maxPathBytes {
		return "", fmt.Errorf("a root is at most %d bytes; this one is %d", maxPathBytes, len(p))
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.Workspace, p)
	}
	resolved, err := resolveReal(p)
	if err != nil {
		return "", fmt.Errorf("%s cannot be resolved: %w", p, err)
	}
	if ws, err := resolveReal(c.Workspace); err == nil && sandbox.Covers(ws, resolved) {
		rel, err := filepath.Rel(ws, resolved)
		if err == nil {
			return filepath.Join(c.Workspace, rel), nil
		}
	}
	return resolved, nil
}

// MakeScratch creates the session scratch directory (Scratch) if it is
// missing and returns it. The harness creates it unjailed, so it goes
// through the write discipline: resolved by ResolveWrite, then made
// through pinned parents without following links, so a link a command
// left on the way cannot make the harness create it elsewhere.
func (c *Call) MakeScratch() (string, error) {
	scratch := c.Scratch()
	dir, err := c.ResolveWrite(scratch)
	if err != nil {
		return "", err
	}
	if _, err := mkdirAll(dir); err != nil {
		return "", err
	}
	return scratch, nil
}
