package codemode

import (
	"context"

	"github.com/agentloom/loom/tool"
)

func grepQuery(a *capArgs) tool.GrepQuery {
	return tool.GrepQuery{
		Pattern: a.str("pattern", true), Path: a.str("path", false), Glob: a.str("glob", false),
		CaseInsensitive: a.boolean("ignore_case"), MaxMatches: int(a.integer("max_results", maxGrepMatches, 1, maxGrepMatches)),
	}
}

func (h *seamHost) searchGlob(ctx context.Context, a *capArgs) (any, error) {
	pattern, path := a.str("pattern", true), a.str("path", false)
	if err := a.done(); err != nil {
		return nil, err
	}
	paths, more, err := h.call.Glob(ctx, path, pattern, maxGlobPaths)
	if err != nil {
		return nil, err
	}
	list := make([]any, len(paths))
	for i, p := range paths {
		list[i] = p
	}
	return map[string]any{"paths": list, "truncated": more}, nil
}

func (h *seamHost) searchGrep(ctx context.Context, a *capArgs) (any, error) {
	q := grepQuery(a)
	if err := a.done(); err != nil {
		return nil, err
	}
	ms, more, err := h.call.Grep(ctx, q)
	if err != nil {
		return nil, err
	}
	list := make([]any, len(ms))
	for i, m := range ms {
		list[i] = map[string]any{"path": m.Path, "line": m.Line, "text": m.Text}
	}
	return map[string]any{"matches": list, "truncated": more}, nil
}
