package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fs_write and fs_edit refuse every scheme:// path with
// read_only_namespace and create nothing (before, "note://x" was a
// relative file name); a path with "://" after a slash is still a file.
func TestWritesRefuseSchemes(t *testing.T) {
	r, c := fileRegistry(t)
	edit := func(path string) map[string]any {
		return map[string]any{"path": path, "digest": "x", "hunks": []any{map[string]any{"op": "append", "lines": []string{"x"}}}}
	}
	cases := []struct {
		name, tool string
		args       map[string]any
		want       Code
		says       string
	}{
		{"write a note", "fs_write", map[string]any{"path": "note://agent/main/x", "content": "1"}, CodeReadOnlyNamespace, "agent_note"},
		{"write a job", "fs_write", map[string]any{"path": "job://j1", "content": "1"}, CodeReadOnlyNamespace, "read-only"},
		{"edit a note", "fs_edit", edit("note://agent/main/x"), CodeReadOnlyNamespace, "agent_note"},
		{"edit a cap page", "fs_edit", edit("cap://fs"), CodeReadOnlyNamespace, "read-only"},
		{"a 1 MiB scheme name is quoted bounded", "fs_write", map[string]any{"path": strings.Repeat("s", 1<<20) + "://x", "content": "1"}, CodeReadOnlyNamespace, ""},
		// The control: a file path holding "://" after a slash is written.
		{"a file path with :// after a slash", "fs_write", map[string]any{"path": "src/x://y", "content": "1"}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := call(t, r, c, tc.tool, tc.args)
			if code(out) != tc.want || !strings.Contains(out.Text, tc.says) || len(out.Text) > 2<<10 {
				t.Fatalf("%s: code %q, want %q; %d bytes: %.300s", tc.tool, code(out), tc.want, len(out.Text), out.Text)
			}
		})
	}
	for _, leftover := range []string{"note:", "job:", "cap:"} {
		if _, err := os.Stat(filepath.Join(c.Workspace, leftover)); err == nil {
			t.Errorf("a refused write created %s", leftover)
		}
	}
}
