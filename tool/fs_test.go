package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/hashline"
)

func fileRegistry(t *testing.T) (*Registry, *Call) {
	t.Helper()
	c, _ := testWorkspace(t)
	r, err := NewRegistry(FileTools()...)
	if err != nil {
		t.Fatal(err)
	}
	return r, c
}

func call(t *testing.T, r *Registry, c *Call, name string, args any) Outcome {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return r.Dispatch(context.Background(), c, name, raw)
}

func code(o Outcome) Code { return o.Code }

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadWindows(t *testing.T) {
	r, c := fileRegistry(t)
	os.WriteFile(filepath.Join(c.Workspace, "f.txt"), []byte(numbered(2500)), 0o644)
	cases := []struct {
		name          string
		offset, limit int
		first, last   int
		next          int
		code          Code
	}{
		{"default window", 0, 0, 1, 2000, 2001, ""},
		{"continue", 2001, 0, 2001, 2500, 0, ""},
		{"limit", 10, 5, 10, 14, 15, ""},
		{"limit clamped to the maximum", 1, defaultReadLines + 1, 1, 2000, 2001, ""},
		{"last line", 2500, 1, 2500, 2500, 0, ""},
		{"one past the end", 2501, 0, 0, 0, 0, "offset_past_end"},
		{"negative offset", -1, 0, 0, 0, 0, "invalid_window"},
		{"negative limit", 1, -1, 0, 0, 0, "invalid_window"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := call(t, r, c, "fs_read", map[string]any{"path": "f.txt", "offset": tc.offset, "limit": tc.limit})
			if tc.code != "" {
				if !out.IsError || code(out) != tc.code {
					t.Fatalf("got %+v, want %s", out, tc.code)
				}
				return
			}
			d := out.Details.(ReadDetails)
			if d.FirstLine != tc.first || d.LastLine != tc.last || d.NextOffset != tc.next || d.HasMore != (tc.next != 0) {
				t.Fatalf("details %+v", d)
			}
			if !strings.HasPrefix(out.Text, "digest: "+d.Digest+"\n") {
				t.Errorf("digest must come first: %.80q", out.Text)
			}
			if tc.next != 0 && !strings.Contains(out.Text, fmt.Sprintf("offset=%d", tc.next)) {
				t.Errorf("a partial read must say how to continue")
			}
			// A clamp is announced, as every tool announces one.
			note := fmt.Sprintf("note: limit %d clamped to %d\n", tc.limit, defaultReadLines)
			if clamped := tc.limit > defaultReadLines; strings.HasSuffix(out.Text, note) != clamped || strings.Contains(out.Text, "clamped") != clamped {
				t.Errorf("clamp announced %v, want %v: ...%q", strings.Contains(out.Text, "clamped"), clamped, out.Text[max(0, len(out.Text)-120):])
			}
		})
	}
}

func TestReadBounds(t *testing.T) {
	r, c := fileRegistry(t)
	at := bytes.Repeat([]byte("a"), MaxFileBytes-1)
	at = append(at, '\n')
	os.WriteFile(filepath.Join(c.Workspace, "at.txt"), at, 0o644)
	os.WriteFile(filepath.Join(c.Workspace, "over.txt"), append(at, 'x'), 0o644)
	if out := call(t, r, c, "fs_read", map[string]any{"path": "at.txt"}); out.IsError {
		t.Fatalf("a file of exactly 8 MiB: %.200s", out.Text)
	}
	if out := call(t, r, c, "fs_read", map[string]any{"path": "over.txt"}); code(out) != "file_too_large" {
		t.Fatalf("one byte over: %+v", out.Details)
	}
	if out := call(t, r, c, "fs_read", map[string]any{"path": "missing.txt"}); code(out) != "not_found" {
		t.Fatalf("missing: %+v", out.Details)
	}
	if out := call(t, r, c, "fs_read", map[string]any{"path": "src"}); code(out) != CodeIsADirectory || !strings.Contains(out.Text, "is a directory") {
		t.Fatalf("directory: %+v", out)
	}
}

func TestReadImageAndBinary(t *testing.T) {
	r, c := fileRegistry(t)
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 32)...)
	os.WriteFile(filepath.Join(c.Workspace, "pic.png"), png, 0o644)
	os.WriteFile(filepath.Join(c.Workspace, "blob.bin"), []byte("ab\x00cd"), 0o644)
	out := call(t, r, c, "fs_read", map[string]any{"path": "pic.png"})
	if out.IsError || len(out.Images) != 1 || out.Images[0].MIME != "image/png" || !strings.Contains(out.Text, "pic.png") {
		t.Fatalf("image: %+v", out)
	}
	if out := call(t, r, c, "fs_read", map[string]any{"path": "blob.bin"}); code(out) != "binary_file" {
		t.Fatalf("binary: %+v", out)
	}
}

func TestWriteThenEditWithoutRead(t *testing.T) {
	r, c := fileRegistry(t)
	out := call(t, r, c, "fs_write", map[string]any{"path": "new_dir/sub/f.go", "content": "package f\n\nfunc A() {}\n"})
	if out.IsError {
		t.Fatal(out.Text)
	}
	wd := out.Details.(WriteDetails)
	if !wd.Created || wd.Lines != 3 || !strings.Contains(out.Text, "3:"+hashline.AnchorOf("func A() {}")+"|func A() {}") {
		t.Fatalf("write: %s", out.Text)
	}
	// Plan an edit from the write's own answer.
	out = call(t, r, c, "fs_edit", map[string]any{
		"path": "new_dir/sub/f.go", "digest": wd.Digest,
		"hunks": []any{map[string]any{"op": "replace", "start": "3:" + hashline.AnchorOf("func A() {}"), "lines": []string{"func A() int { return 1 }"}}},
	})
	if out.IsError {
		t.Fatal(out.Text)
	}
	lines := strings.SplitN(out.Text, "\n", 3)
	ed := out.Details.(EditDetails)
	if lines[0] != "applied 1 hunk(s) to new_dir/sub/f.go" || lines[1] != "digest: "+ed.Digest {
		t.Fatalf("a success opens with the hunk count then the digest: %q", out.Text)
	}
	// The fresh anchors equal those of a fresh read.
	read := call(t, r, c, "fs_read", map[string]any{"path": "new_dir/sub/f.go"})
	for _, l := range strings.Split(strings.TrimSpace(lines[2]), "\n")[1:] {
		if !strings.Contains(read.Text, l+"\n") {
			t.Errorf("fresh anchor line %q is not in a fresh read:\n%s", l, read.Text)
		}
	}
	if read.Details.(ReadDetails).Digest != ed.Digest {
		t.Error("edit digest differs from the read's")
	}
}

func TestEditRefusals(t *testing.T) {
	r, c := fileRegistry(t)
	content := "one\ntwo\nthree\n"
	os.WriteFile(filepath.Join(c.Workspace, "f.txt"), []byte(content), 0o644)
	digest := hashline.Digest([]byte(content))
	two := "2:" + hashline.AnchorOf("two")
	cases := []struct {
		name   string
		args   map[string]any
		code   Code
		expect []string
	}{
		{"stale digest", map[string]any{"path": "f.txt", "digest": "0000000000000000-1",
			"hunks": []any{map[string]any{"op": "replace", "start": two, "lines": []string{"2"}}}},
			"stale_digest", []string{"digest: " + digest, two + "|two", "Fresh anchors:"}},
		{"malformed digest", map[string]any{"path": "f.txt", "digest": "latest",
			"hunks": []any{map[string]any{"op": "replace", "start": two, "lines": []string{"2"}}}},
			"bad_digest", []string{`"latest" is not a digest`, digest}},
		{"stale anchor", map[string]any{"path": "f.txt", "digest": digest,
			"hunks": []any{map[string]any{"op": "replace", "start": "2:deadbeef", "lines": []string{"2"}}}},
			"stale_anchor", []string{"digest: " + digest, two + "|two"}},
		{"display prefix pasted", map[string]any{"path": "f.txt", "digest": digest,
			"hunks": []any{map[string]any{"op": "replace", "start": two, "lines": []string{two + "|two"}}}},
			"display_prefix", []string{"display prefix"}},
		{"bad ref shape", map[string]any{"path": "f.txt", "digest": digest,
			"hunks": []any{map[string]any{"op": "replace", "start": "two", "lines": []string{}}}},
			"invalid_arguments", []string{"start"}},
		{"unknown op", map[string]any{"path": "f.txt", "digest": digest,
			"hunks": []any{map[string]any{"op": "rewrite", "start": two, "lines": []string{}}}},
			"invalid_arguments", []string{"op"}},
		{"protected", map[string]any{"path": ".git/config", "digest": digest,
			"hunks": []any{map[string]any{"op": "append", "lines": []string{"x"}}}},
			"protected_path", []string{"permission denied"}},
		{"missing file", map[string]any{"path": "nope.txt", "digest": digest,
			"hunks": []any{map[string]any{"op": "append", "lines": []string{"x"}}}},
			"not_found", []string{"fs_write"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := call(t, r, c, "fs_edit", tc.args)
			if !out.IsError || code(out) != tc.code {
				t.Fatalf("got %q %+v, want %s", out.Text, out.Details, tc.code)
			}
			for _, e := range tc.expect {
				if !strings.Contains(out.Text, e) {
					t.Errorf("text lacks %q:\n%s", e, out.Text)
				}
			}
			if got, _ := os.ReadFile(filepath.Join(c.Workspace, "f.txt")); string(got) != content {
				t.Fatalf("a refused edit changed the file: %q", got)
			}
		})
	}
}

func TestEditKeepsLineEndings(t *testing.T) {
	r, c := fileRegistry(t)
	content := "\ufeffa\r\nb\r\nc" // BOM, CRLF, no final newline
	os.WriteFile(filepath.Join(c.Workspace, "w.txt"), []byte(content), 0o644)
	out := call(t, r, c, "fs_edit", map[string]any{"path": "w.txt", "digest": hashline.Digest([]byte(content)),
		"hunks": []any{map[string]any{"op": "replace", "start": "2:" + hashline.AnchorOf("b"), "lines": []string{"B"}},
			map[string]any{"op": "append", "lines": []string{"d"}}}})
	if out.IsError {
		t.Fatal(out.Text)
	}
	got, _ := os.ReadFile(filepath.Join(c.Workspace, "w.txt"))
	if want := "\ufeffa\r\nB\r\nc\r\nd"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestWriteRefusals(t *testing.T) {
	r, c := fileRegistry(t)
	if out := call(t, r, c, "fs_write", map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}); code(out) != "protected_path" {
		t.Fatalf("hook write: %+v", out)
	}
	if _, err := os.Stat(filepath.Join(c.Workspace, ".git/hooks/pre-commit")); err == nil {
		t.Fatal("the hook was written")
	}
	if out := call(t, r, c, "fs_write", map[string]any{"path": "../outside/x", "content": "x"}); code(out) != "outside_roots" ||
		!strings.Contains(out.Text, "writable root") || !strings.Contains(out.Text, "permissions.writable_roots") || strings.Contains(out.Text, "readable_roots") {
		t.Fatalf("escape: %+v", out)
	}
	big := strings.Repeat("a", MaxFileBytes+1)
	if out := call(t, r, c, "fs_write", map[string]any{"path": "big", "content": big}); code(out) != "file_too_large" {
		t.Fatalf("over the bound: %+v", out.Details)
	}
	// No staging file is left behind by a successful write.
	call(t, r, c, "fs_write", map[string]any{"path": "ok.txt", "content": "x"})
	entries, _ := os.ReadDir(c.Workspace)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".loom-") {
			t.Errorf("staging file left: %s", e.Name())
		}
	}
}

// TestFailedWriteSaysWhatItChanged: a write that fails after creating
// parent directories (here the file name is one byte longer than a name
// may be, which only the final step meets) says which directories it
// created, never that nothing was changed; one that fails before
// creating anything says nothing was changed.
func TestFailedWriteSaysWhatItChanged(t *testing.T) {
	r, c := fileRegistry(t)
	long := strings.Repeat("n", 256)
	out := call(t, r, c, "fs_write", map[string]any{"path": "made/deeper/" + long, "content": "x"})
	if !out.IsError || strings.Contains(out.Text, "nothing was changed") || !strings.Contains(out.Text, "made, made/deeper") {
		t.Fatalf("failed write after creating parents: %s", out.Text)
	}
	if fi, err := os.Stat(filepath.Join(c.Workspace, "made", "deeper")); err != nil || !fi.IsDir() {
		t.Fatalf("the directories the answer names are not there: %v", err)
	}
	out = call(t, r, c, "fs_write", map[string]any{"path": "made", "content": "x"})
	if code(out) != "not_a_regular_file" || !strings.Contains(out.Text, "nothing was changed") {
		t.Fatalf("failed write that created nothing: %s", out.Text)
	}
}

func TestWorkingDirectory(t *testing.T) {
	r, c := fileRegistry(t)
	c.Shell = &Shell{}
	out := call(t, r, c, "working_directory", map[string]any{})
	if out.IsError || out.Details.(WorkdirDetails).Cwd != c.Workspace {
		t.Fatalf("report: %+v", out)
	}
	out = call(t, r, c, "working_directory", map[string]any{"path": "src"})
	if out.IsError || !strings.HasSuffix(c.Dir(), "/src") {
		t.Fatalf("change: %+v", out)
	}
	if out := call(t, r, c, "working_directory", map[string]any{"path": "../../outside"}); !out.IsError {
		t.Fatalf("escape accepted: %+v", out)
	}
	if out := call(t, r, c, "working_directory", map[string]any{"path": "nope"}); code(out) != "not_a_directory" {
		t.Fatalf("missing dir: %+v", out)
	}
	// A directory bash would refuse as its cwd is refused when selected,
	// even when the session may read it.
	c.Base.ReadableRoots = []string{"/etc"}
	c.Base.SystemRoots = []string{"/etc"}
	out = call(t, r, c, "working_directory", map[string]any{"path": "/etc"})
	if code(out) != "outside_writable_roots" || !strings.Contains(out.Text, "bash could run in") || !strings.Contains(out.Text, c.Workspace) || !strings.Contains(out.Text, "unchanged") {
		t.Fatalf("/etc selected: %+v", out)
	}
	if !strings.HasSuffix(c.Dir(), "/src") {
		t.Fatalf("a refused change moved the shell directory to %s", c.Dir())
	}
}

func TestReadSchemes(t *testing.T) {
	c, _ := testWorkspace(t)
	echo := Scheme{Name: "echo", Describe: "`echo://x` echoes x.", Read: func(_ context.Context, c *Call, uri string) Outcome {
		return Success(c.Strand + " read " + uri)
	}}
	r, err := NewRegistry(ReadTool(echo))
	if err != nil {
		t.Fatal(err)
	}
	c.Strand = "main"
	if out := call(t, r, c, "fs_read", map[string]any{"path": "echo://hello"}); out.IsError || out.Text != "main read echo://hello" {
		t.Fatalf("scheme read: %+v", out)
	}
	out := call(t, r, c, "fs_read", map[string]any{"path": "cap://fs"})
	if code(out) != "unknown_scheme" || !strings.Contains(out.Text, "echo://") {
		t.Fatalf("unknown scheme: %+v", out)
	}
	// An unknown scheme's name is quoted bounded, never echoed whole.
	long := strings.Repeat("s", 1<<20)
	if out := call(t, r, c, "fs_read", map[string]any{"path": long + "://x"}); code(out) != "unknown_scheme" || len(out.Text) > 1<<10 {
		t.Fatalf("a 1 MiB scheme name: %s, %d bytes", code(out), len(out.Text))
	}
	// A path that merely contains "://" after a slash is a file path.
	if out := call(t, r, c, "fs_read", map[string]any{"path": "src/x://y"}); code(out) != "not_found" {
		t.Fatalf("file path with ://: %+v", out)
	}
	if tl, _ := r.Lookup("fs_read"); !strings.Contains(tl.Description, "echoes x") {
		t.Error("a scheme's sentence is missing from the description")
	}
}
