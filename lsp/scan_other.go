//go:build !unix

package lsp

import "context"

// scanWorkspace does not scan where directories cannot be walked by
// descriptor: ok is false, and a server is told only of the files Loom
// writes.
func scanWorkspace(ctx context.Context, ws string, want func(string) bool) (files map[string]stamp, ok bool) {
	return nil, false
}
