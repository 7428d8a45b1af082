package tool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/hashline"
)

// stubDiagnostics answers every diagnosis with answer(files), recording
// what it was told and the deadline it got.
type stubDiagnostics struct {
	answer   func([]ChangedFile) []FileDiagnostics
	told     []ChangedFile
	deadline time.Duration
}

func (s *stubDiagnostics) Diagnose(ctx context.Context, files []ChangedFile) []FileDiagnostics {
	s.told = files
	if d, ok := ctx.Deadline(); ok {
		s.deadline = time.Until(d)
	}
	return s.answer(files)
}

func diagRegistry(t *testing.T, d Diagnostics) (*Registry, *Call) {
	t.Helper()
	c, _ := testWorkspace(t)
	r, err := NewRegistry(ReadTool(), WriteTool(d), EditTool(d))
	if err != nil {
		t.Fatal(err)
	}
	return r, c
}

func settled(f ChangedFile, items ...Diagnostic) FileDiagnostics {
	out := FileDiagnostics{Path: f.Path, Server: "fake", Status: DiagnosticsSettled, Items: items}
	for _, d := range items {
		switch d.Severity {
		case SeverityError:
			out.Errors++
		case SeverityWarning:
			out.Warnings++
		default:
			out.Infos++
		}
	}
	return out
}

func TestWriteAppendsSettledDiagnosticsErrorsFirstWithAnchors(t *testing.T) {
	stub := &stubDiagnostics{answer: func(fs []ChangedFile) []FileDiagnostics {
		return []FileDiagnostics{settled(fs[0],
			Diagnostic{Line: 1, Severity: SeverityWarning, Message: "unused", Source: "vet"},
			Diagnostic{Line: 3, Severity: SeverityError, Message: "undefined: x", Source: "compiler"},
			Diagnostic{Line: 9, Severity: SeverityError, Message: "past the end"},
		)}
	}}
	r, c := diagRegistry(t, stub)
	content := "package m\n\nvar y = x\n"
	o := call(t, r, c, "fs_write", map[string]any{"path": "m.go", "content": content})
	if o.IsError {
		t.Fatal(o.Text)
	}
	if len(stub.told) != 1 || stub.told[0].Path != filepath.Join(c.Workspace, "m.go") || string(stub.told[0].Content) != content {
		t.Fatalf("the seam was told %+v", stub.told)
	}
	if stub.deadline <= 0 || stub.deadline > DiagnosticsWait {
		t.Errorf("the seam's deadline is %v away, want within %v", stub.deadline, DiagnosticsWait)
	}
	lines := hashline.Annotate([]byte(content))
	want := fmt.Sprintf("diagnostics (fake): 2 errors, 1 warning in m.go:\n"+
		"  m.go:3 error [3:%s]: undefined: x (compiler)\n"+
		"  m.go:9 error [past the end]: past the end\n"+
		"  m.go:1 warning [1:%s]: unused (vet)\n", lines[2].Anchor, lines[0].Anchor)
	if !strings.HasSuffix(o.Text, want) {
		t.Errorf("answer ends\n%s\nwant it to end\n%s", o.Text, want)
	}
	det := o.Details.(WriteDetails)
	if len(det.Diagnostics) != 1 || det.Diagnostics[0].Path != "m.go" || det.Diagnostics[0].Items[0].Anchor != lines[2].Anchor {
		t.Errorf("details: %+v", det.Diagnostics)
	}
}

func TestEditAppendsDiagnosticsOfTheEditedContent(t *testing.T) {
	stub := &stubDiagnostics{answer: func(fs []ChangedFile) []FileDiagnostics {
		return []FileDiagnostics{settled(fs[0], Diagnostic{Line: 2, Severity: SeverityError, Message: "bad"})}
	}}
	r, c := diagRegistry(t, stub)
	os.WriteFile(filepath.Join(c.Workspace, "f.txt"), []byte("a\nb\n"), 0o644)
	ls := hashline.Annotate([]byte("a\nb\n"))
	o := call(t, r, c, "fs_edit", map[string]any{"path": "f.txt", "digest": hashline.Digest([]byte("a\nb\n")),
		"hunks": []map[string]any{{"op": "replace", "start": fmt.Sprintf("2:%s", ls[1].Anchor), "lines": []string{"B"}}}})
	if o.IsError {
		t.Fatal(o.Text)
	}
	if string(stub.told[0].Content) != "a\nB\n" {
		t.Errorf("the seam was told %q", stub.told[0].Content)
	}
	want := fmt.Sprintf("  f.txt:2 error [2:%s]: bad\n", hashline.AnchorOf("B"))
	if !strings.Contains(o.Text, want) {
		t.Errorf("answer\n%s\nlacks %q", o.Text, want)
	}
	if d := o.Details.(EditDetails).Diagnostics; len(d) != 1 || d[0].Errors != 1 {
		t.Errorf("details: %+v", d)
	}
}

func TestWriteShowsAtMostMaxDiagnosticsShown(t *testing.T) {
	stub := &stubDiagnostics{answer: func(fs []ChangedFile) []FileDiagnostics {
		var items []Diagnostic
		for i := range MaxDiagnosticsShown + 5 {
			items = append(items, Diagnostic{Line: 1, Severity: SeverityHint, Message: fmt.Sprint("hint ", i)})
		}
		items = append(items, Diagnostic{Line: 1, Severity: SeverityError, Message: "the error"})
		f := settled(fs[0], items...)
		f.Errors, f.Infos, f.Hints = 1, 0, MaxDiagnosticsShown+5+100 // the server published more than it kept
		return []FileDiagnostics{f}
	}}
	r, c := diagRegistry(t, stub)
	o := call(t, r, c, "fs_write", map[string]any{"path": "f.txt", "content": "x\n"})
	shown := strings.Count(o.Text, "  f.txt:1 ")
	if shown != MaxDiagnosticsShown {
		t.Errorf("showed %d diagnostics, want %d:\n%s", shown, MaxDiagnosticsShown, o.Text)
	}
	if !strings.Contains(o.Text, fmt.Sprintf("1 error, %d hints in f.txt (showing %d, errors first):\n  f.txt:1 error", MaxDiagnosticsShown+105, MaxDiagnosticsShown)) {
		t.Errorf("the error is not first, or the counts are not the server's:\n%s", o.Text)
	}
	if n := len(o.Details.(WriteDetails).Diagnostics[0].Items); n != MaxDiagnosticsShown {
		t.Errorf("details carry %d items", n)
	}
}

func TestWriteSaysCleanUnsettledAndUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(ChangedFile) FileDiagnostics
		want string
	}{
		{"clean", func(f ChangedFile) FileDiagnostics { return settled(f) }, "diagnostics (fake): f.txt clean\n"},
		{"unsettled", func(f ChangedFile) FileDiagnostics {
			return FileDiagnostics{Path: f.Path, Server: "fake", Status: DiagnosticsUnsettled, Waited: 5 * time.Second}
		}, "diagnostics (fake): f.txt unsettled after 5000 ms; the write landed"},
		{"unavailable", func(f ChangedFile) FileDiagnostics {
			return FileDiagnostics{Path: f.Path, Server: "fake", Status: DiagnosticsUnavailable, Code: "lsp_server_crashed", Reason: "fake: it exited with status 3"}
		}, "diagnostics (fake): unavailable for f.txt: fake: it exited with status 3 [lsp_server_crashed]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, c := diagRegistry(t, &stubDiagnostics{answer: func(fs []ChangedFile) []FileDiagnostics { return []FileDiagnostics{tc.f(fs[0])} }})
			o := call(t, r, c, "fs_write", map[string]any{"path": "f.txt", "content": "x\n"})
			if o.IsError {
				t.Fatalf("a diagnosis failed the write: %s", o.Text)
			}
			if !strings.Contains(o.Text, tc.want) {
				t.Errorf("answer\n%s\nlacks %q", o.Text, tc.want)
			}
		})
	}
}

func TestWriteEscapesWhatAServerWrote(t *testing.T) {
	hostile := "red\x1b[31m\u202eevil\nsecond line\x00\xff" + strings.Repeat("long ", 200)
	stub := &stubDiagnostics{answer: func(fs []ChangedFile) []FileDiagnostics {
		return []FileDiagnostics{settled(fs[0], Diagnostic{Line: 1, Severity: "error\n", Message: hostile, Source: "s\x07"})}
	}}
	r, c := diagRegistry(t, stub)
	o := call(t, r, c, "fs_write", map[string]any{"path": "f.txt", "content": "x\n"})
	tail := o.Text[strings.Index(o.Text, "diagnostics (fake)"):]
	lines := strings.Split(strings.TrimSuffix(tail, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("a hostile diagnostic took %d lines:\n%s", len(lines), tail)
	}
	for _, bad := range []string{"\x1b", "\u202e", "\x00", "\x07", "\xff"} {
		if strings.Contains(tail, bad) {
			t.Errorf("the answer carries %q", bad)
		}
	}
	if !strings.Contains(tail, `red\u001b[31m\u202eevil\nsecond line\u0000\xff`) {
		t.Errorf("not escaped as expected:\n%s", tail)
	}
	if len(lines[1]) > MaxDiagnosticMessageBytes+100 {
		t.Errorf("the line is %d bytes", len(lines[1]))
	}
}

type panickyDiagnostics struct{}

func (panickyDiagnostics) Diagnose(context.Context, []ChangedFile) []FileDiagnostics { panic("boom") }

func TestWriteLandsWhenTheSeamPanics(t *testing.T) {
	r, c := diagRegistry(t, panickyDiagnostics{})
	o := call(t, r, c, "fs_write", map[string]any{"path": "f.txt", "content": "x\n"})
	if o.IsError {
		t.Fatalf("a panicking seam failed the write: %s", o.Text)
	}
	if b, _ := os.ReadFile(filepath.Join(c.Workspace, "f.txt")); string(b) != "x\n" {
		t.Errorf("the file holds %q", b)
	}
	if !strings.Contains(o.Text, "[diagnostics_failed]") {
		t.Errorf("answer does not say the seam failed:\n%s", o.Text)
	}
}

// TestNilDiagnosticsLeavesTheToolsAsTheyWere: without a seam, the
// descriptions and answers are the ones a host without diagnostics
// always had; with one, the description states the bounds.
func TestNilDiagnosticsLeavesTheToolsAsTheyWere(t *testing.T) {
	none := &stubDiagnostics{answer: func([]ChangedFile) []FileDiagnostics { return nil }}
	for _, pair := range [][2]Tool{{WriteTool(nil), WriteTool(none)}, {EditTool(nil), EditTool(none)}} {
		if strings.Contains(pair[0].Description, "diagnostics") {
			t.Errorf("%s without a seam mentions diagnostics", pair[0].Name)
		}
		if !strings.HasPrefix(pair[1].Description, pair[0].Description) ||
			!strings.Contains(pair[1].Description, fmt.Sprintf("at most %d", MaxDiagnosticsShown)) ||
			!strings.Contains(pair[1].Description, fmt.Sprintf("%d ms", DiagnosticsWait.Milliseconds())) {
			t.Errorf("%s with a seam: %q", pair[1].Name, pair[1].Description)
		}
	}
	r, c := diagRegistry(t, none)
	o := call(t, r, c, "fs_write", map[string]any{"path": "f.txt", "content": "x\n"})
	r0, c0 := fileRegistry(t)
	o0 := call(t, r0, c0, "fs_write", map[string]any{"path": "f.txt", "content": "x\n"})
	if o.Text != o0.Text {
		t.Errorf("a seam that owns no file changed the answer:\n%s\nwant\n%s", o.Text, o0.Text)
	}
}
