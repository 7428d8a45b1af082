package lsp

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/hashline"
	"github.com/agentloom/loom/tool"
)

// langSession is a workspace of *.txt files the fake server answers the
// language operations over (see lsp/internal/fakeserver/lang.go).
func langSession(t *testing.T, files map[string]string) (*testSession, *Plane) {
	t.Helper()
	s := newSession(t)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(s.ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s, s.plane(t, fakeConfig(t, "lang"))
}

const aTxt = "def T.Greet\nuse Greet here\ndef Use\ncall Greet\ncall Other\n"
const bTxt = "def Other\ncall Use\nGreet again, Greet\n"

func siteList(s Sites) []string {
	var out []string
	for _, x := range s.Items {
		out = append(out, x.Path+":"+strconv.Itoa(x.Line)+":"+strconv.Itoa(x.Column))
	}
	return out
}

func TestLanguageOperationsAgainstTheFake(t *testing.T) {
	t.Parallel()
	s, p := langSession(t, map[string]string{"a.txt": aTxt, "b.txt": bTxt})
	ctx := within(t, settleWithin)

	// By file and line, the identifier found on it.
	def, err := p.Definition(ctx, Position{Path: "b.txt", Line: 3, Ident: "Greet"})
	if err != nil || def.Total != 1 || def.Items[0] != (Site{Path: "a.txt", Line: 1, Column: 7, Anchor: hashline.AnchorOf("def T.Greet"), Text: "def T.Greet"}) {
		t.Fatalf("definition: %s %v", show(def), err)
	}
	// By column, 1-based, in characters.
	if def, err := p.Definition(ctx, Position{Path: filepath.Join(s.ws, "a.txt"), Line: 2, Column: 6}); err != nil || def.Total != 1 || def.Items[0].Line != 1 {
		t.Errorf("definition by column: %s %v", show(def), err)
	}
	// By name, qualified as far as needed.
	for _, name := range []string{"pkg.T.Greet", "T.Greet", "Greet"} {
		refs, err := p.References(ctx, Position{Symbol: name})
		if want := []string{"a.txt:1:7", "a.txt:2:5", "a.txt:4:6", "b.txt:3:1", "b.txt:3:14"}; err != nil || !slices.Equal(siteList(refs), want) || refs.Total != 5 {
			t.Errorf("references of %s: %q %v, want %q", name, siteList(refs), err, want)
		}
	}
	if _, err := p.References(ctx, Position{Symbol: "U.Greet"}); CodeOf(err) != CodeSymbolNotFound {
		t.Errorf("a name no symbol has: %v", err)
	}
	if _, err := p.References(ctx, Position{Symbol: "DUP"}); CodeOf(err) != CodeSymbolAmbiguous || !strings.Contains(err.Error(), "pkga.DUP") || !strings.Contains(err.Error(), "a.txt:2") {
		t.Errorf("an ambiguous name: %v", err)
	}
	h, err := p.Hover(ctx, Position{Path: "a.txt", Line: 3, Ident: "Use"})
	if err != nil || h.Text != "hover of **Use**" || h.Site.Line != 3 || h.Site.Column != 5 || h.Site.Anchor != hashline.AnchorOf("def Use") {
		t.Errorf("hover: %s %v", show(h), err)
	}
	syms, err := p.DocumentSymbols(ctx, "a.txt")
	if err != nil || syms.Total != 3 || syms.Items[1].Name != "T.Greet" || syms.Items[1].Container != "file" || syms.Items[1].Kind != "function" {
		t.Errorf("document symbols: %s %v", show(syms), err)
	}
	ws, err := p.WorkspaceSymbols(ctx, "Use")
	if err != nil || ws.Total != 1 || ws.Items[0].Name != "Use" || ws.Items[0].Container != "pkg" {
		t.Errorf("workspace symbols: %s %v", show(ws), err)
	}
	impl, err := p.Implementation(ctx, Position{Symbol: "Other"})
	if err != nil || !slices.Equal(siteList(impl), []string{"b.txt:1:5"}) {
		t.Errorf("implementation: %s %v", show(impl), err)
	}
	in, err := p.IncomingCalls(ctx, Position{Symbol: "Use"})
	if err != nil || in.Total != 1 || in.Items[0].Path != "b.txt" || in.Items[0].Line != 2 || in.Items[0].Name != "Other" {
		t.Errorf("incoming calls: %s %v", show(in), err)
	}
	out, err := p.OutgoingCalls(ctx, Position{Symbol: "Use"})
	if err != nil || out.Total != 2 || out.Items[0].Name != "Greet" || out.Items[1].Name != "Other" {
		t.Errorf("outgoing calls: %s %v", show(out), err)
	}
	for _, bad := range []Position{
		{Path: "a.txt", Line: 9},
		{Path: "a.txt", Line: 0},
		{Path: "a.txt", Line: 1, Column: 40},
		{Path: "a.txt", Line: 1, Ident: "Nope"},
		{Path: "../outside.txt", Line: 1},
		{},
	} {
		if _, err := p.Definition(ctx, bad); CodeOf(err) != CodeBadPosition {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := p.Definition(ctx, Position{Path: "a.md", Line: 1}); CodeOf(err) != CodeNoServer {
		t.Errorf("a file no server owns: %v", err)
	}
	// A link out of the workspace is never followed.
	os.WriteFile(filepath.Join(filepath.Dir(s.ws), "secret.txt"), []byte("def Secret\n"), 0o644)
	os.Symlink(filepath.Join(filepath.Dir(s.ws), "secret.txt"), filepath.Join(s.ws, "link.txt"))
	if _, err := p.Definition(ctx, Position{Path: "link.txt", Line: 1}); CodeOf(err) != CodeUnreadable {
		t.Errorf("a link out of the workspace: %v", err)
	}
}

// TestHostileSitesAreCountedAndBounded: a flood of sites is capped at
// MaxSites with its total, URIs outside the workspace are dropped and
// counted, malformed elements are dropped and counted.
func TestHostileSitesAreCountedAndBounded(t *testing.T) {
	t.Parallel()
	_, p := langSession(t, map[string]string{"h.txt": "HUGE\nBADRANGE\nline\nline\n"})
	ctx := within(t, settleWithin)
	refs, err := p.References(ctx, Position{Path: "h.txt", Line: 1, Ident: "HUGE"})
	if err != nil || len(refs.Items) != MaxSites || refs.Total != 20000 || refs.Outside != 5 || refs.Malformed != 6 {
		t.Fatalf("references: %d items, total %d, outside %d, malformed %d, %v", len(refs.Items), refs.Total, refs.Outside, refs.Malformed, err)
	}
	if refs.Items[0].Line != 1 || refs.Items[0].Anchor != hashline.AnchorOf("HUGE") || refs.Items[len(refs.Items)-1].Anchor != "" {
		t.Errorf("first %+v, last %+v", refs.Items[0], refs.Items[len(refs.Items)-1])
	}
	def, err := p.Definition(ctx, Position{Path: "h.txt", Line: 2, Ident: "BADRANGE"})
	if err != nil || def.Total != 1 || def.Malformed != 5 || def.Items[0].Line != 1 {
		t.Errorf("malformed ranges: %s %v", show(def), err)
	}
}

func TestRenamePreviewAndApply(t *testing.T) {
	t.Parallel()
	s, p := langSession(t, map[string]string{"a.txt": aTxt, "b.txt": bTxt})
	ctx := within(t, settleWithin)
	c := &tool.Call{Workspace: s.ws, Base: s.base}
	e, err := p.Rename(ctx, Position{Symbol: "T.Greet"}, "Hello")
	if err != nil || len(e.Files) != 2 || e.Files[0].Path != "a.txt" || len(e.Files[0].Changes) != 3 || len(e.Files[1].Changes) != 2 {
		t.Fatalf("preview: %s %v", show(e), err)
	}
	if e.Files[0].Digest != hashline.Digest([]byte(aTxt)) || e.Files[0].Changes[0] != (Change{Line: 1, Column: 7, EndLine: 1, EndColumn: 12, Anchor: hashline.AnchorOf("def T.Greet"), NewText: "Hello"}) {
		t.Errorf("the first file's plan: %s", show(e.Files[0]))
	}
	if got, _ := os.ReadFile(filepath.Join(s.ws, "a.txt")); string(got) != aTxt {
		t.Fatal("the preview wrote")
	}

	// A file changed between preview and apply: refused, naming it, and
	// nothing is written (a.txt, planned first, is untouched too).
	os.WriteFile(filepath.Join(s.ws, "b.txt"), []byte(bTxt+"more\n"), 0o644)
	if _, err := p.Apply(ctx, c, e); CodeOf(err) != CodeStaleEdit || !strings.Contains(err.Error(), "b.txt") {
		t.Errorf("a stale file: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(s.ws, "a.txt")); string(got) != aTxt {
		t.Errorf("a.txt written by a refused apply: %q", got)
	}
	os.WriteFile(filepath.Join(s.ws, "b.txt"), []byte(bTxt), 0o644)

	done, err := p.Apply(ctx, c, e)
	if err != nil || len(done.Files) != 2 || len(done.Diagnostics) != 2 || done.Diagnostics[0].Status != tool.DiagnosticsSettled {
		t.Fatalf("apply: %s %v", show(done), err)
	}
	wantA := "def T.Hello\nuse Hello here\ndef Use\ncall Hello\ncall Other\n"
	if got, _ := os.ReadFile(filepath.Join(s.ws, "a.txt")); string(got) != wantA || done.Files[0].Digest != hashline.Digest([]byte(wantA)) {
		t.Errorf("a.txt: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(s.ws, "b.txt")); string(got) != "def Other\ncall Use\nHello again, Hello\n" {
		t.Errorf("b.txt: %q", got)
	}
	// Applying it again finds every file changed.
	if _, err := p.Apply(ctx, c, e); CodeOf(err) != CodeStaleEdit {
		t.Errorf("again: %v", err)
	}
	// The server hears of the landed files before the next request.
	if def, err := p.Definition(ctx, Position{Symbol: "Hello"}); err != nil || def.Total != 1 {
		t.Errorf("after the apply: %s %v", show(def), err)
	}

	// A forged edit: a path out of the workspace, a change past the end.
	for _, forged := range []Edit{
		{Files: []FileEdit{{Path: "../x.txt", Digest: "0"}}},
		{Files: []FileEdit{{Path: "/etc/passwd", Digest: "0"}}},
		{Files: []FileEdit{{Path: "a.txt", Digest: hashline.Digest([]byte(wantA)), Changes: []Change{{Line: 90, Column: 1, EndLine: 90, EndColumn: 1}}}}},
		{Files: []FileEdit{{Path: "a.txt", Digest: hashline.Digest([]byte(wantA)), Changes: []Change{{Line: 2, Column: 1, EndLine: 2, EndColumn: 2}, {Line: 1, Column: 1, EndLine: 1, EndColumn: 2}}}}},
		{Files: []FileEdit{{Path: "a.txt", Digest: hashline.Digest([]byte(wantA)), Changes: []Change{{Line: 1, Column: 1, EndLine: 1, EndColumn: 2, Anchor: "00000000"}}}}},
	} {
		if _, err := p.Apply(ctx, c, forged); err == nil {
			t.Errorf("a forged edit applied: %s", show(forged))
		}
	}
	if got, _ := os.ReadFile(filepath.Join(s.ws, "a.txt")); string(got) != wantA {
		t.Errorf("a forged edit wrote: %q", got)
	}

	// A file swapped for a link out of the workspace (to a writable file
	// of the same content) since the preview: refused, nothing written.
	e, err = p.Rename(ctx, Position{Symbol: "Other"}, "Another")
	if err != nil || len(e.Files) != 2 {
		t.Fatalf("second preview: %s %v", show(e), err)
	}
	elsewhere := filepath.Join(s.scratch, "b.txt")
	b, _ := os.ReadFile(filepath.Join(s.ws, "b.txt"))
	os.WriteFile(elsewhere, b, 0o644)
	os.Remove(filepath.Join(s.ws, "b.txt"))
	os.Symlink(elsewhere, filepath.Join(s.ws, "b.txt"))
	if _, err := p.Apply(ctx, c, e); CodeOf(err) != CodeStaleEdit || !strings.Contains(err.Error(), "b.txt") {
		t.Errorf("a link swapped in: %v", err)
	}
	if got, _ := os.ReadFile(elsewhere); !slices.Equal(got, b) {
		t.Errorf("written through a link: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(s.ws, "a.txt")); string(got) != wantA {
		t.Errorf("a.txt written by a refused apply: %q", got)
	}
}

// TestHostileEditsAreRefusedWhole: an edit touching a file outside the
// workspace, past a file's end, overlapping, or creating a file is
// refused whole, and nothing is written.
func TestHostileEditsAreRefusedWhole(t *testing.T) {
	t.Parallel()
	s, p := langSession(t, map[string]string{"e.txt": "ESCAPE BADRANGE OVERLAP CREATE\nESCAPE\n"})
	ctx := within(t, settleWithin)
	for _, tc := range []struct {
		ident string
		code  Code
	}{
		{"ESCAPE", CodeEditOutside},
		{"BADRANGE", CodeBadEdit},
		{"OVERLAP", CodeBadEdit},
		{"CREATE", CodeBadEdit},
	} {
		e, err := p.Rename(ctx, Position{Path: "e.txt", Line: 1, Ident: tc.ident}, "x")
		if CodeOf(err) != tc.code || len(e.Files) != 0 {
			t.Errorf("%s: %s %v", tc.ident, show(e), err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(s.ws, "e.txt")); string(got) != "ESCAPE BADRANGE OVERLAP CREATE\nESCAPE\n" {
		t.Errorf("e.txt: %q", got)
	}
}

func TestCodeActionsPreviewAndApply(t *testing.T) {
	t.Parallel()
	s, p := langSession(t, map[string]string{"c.txt": "fine\nan ERR here\nBADFIX\nERR again\n"})
	ctx := within(t, settleWithin)
	acts, err := p.CodeActions(ctx, "c.txt", 2, 3, nil)
	if err != nil || acts.Total != 3 || len(acts.Items) != 3 {
		t.Fatalf("actions: %s %v", show(acts), err)
	}
	cmd, fix, bad := acts.Items[0], acts.Items[1], acts.Items[2]
	if cmd.Command != "fake.cmd" || cmd.Edit != nil {
		t.Errorf("a command: %+v", cmd)
	}
	if fix.Title != "Replace ERR on line 2" || fix.Kind != "quickfix" || !fix.Preferred || fix.Edit == nil || fix.Edit.Files[0].Changes[0].Line != 2 {
		t.Errorf("a quick fix: %s", show(fix))
	}
	if bad.Edit != nil || bad.Refused == nil || bad.Refused.Code != CodeBadEdit {
		t.Errorf("a fix past the end: %s", show(bad))
	}
	if _, err := p.Apply(ctx, &tool.Call{Workspace: s.ws, Base: s.base}, *fix.Edit); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(s.ws, "c.txt")); string(got) != "fine\nan OK here\nBADFIX\nERR again\n" {
		t.Errorf("c.txt: %q", got)
	}
	if _, err := p.CodeActions(ctx, "c.txt", 7, 9, nil); CodeOf(err) != CodeBadPosition {
		t.Errorf("lines past the end: %v", err)
	}
}

// TestOperationsOnASilentOrClosedServer: a request the server never
// answers ends with its context (CodeTimeout); after Close, CodeClosed.
func TestOperationsOnASilentOrClosedServer(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	os.WriteFile(filepath.Join(s.ws, "a.txt"), []byte("x\n"), 0o644)
	p := s.plane(t, fakeConfig(t, "silent"))
	// Started first, so the wait below is the unanswered request alone.
	s.write(t, p, within(t, 500*time.Millisecond), "warm.txt", "x")
	if _, err := p.Definition(within(t, 500*time.Millisecond), Position{Path: "a.txt", Line: 1}); CodeOf(err) != CodeTimeout {
		t.Errorf("an unanswered request: %v", err)
	}
	p.Close()
	if _, err := p.Definition(within(t, settleWithin), Position{Path: "a.txt", Line: 1}); CodeOf(err) != CodeClosed {
		t.Errorf("after Close: %v", err)
	}
}

// TestAFileChangedWhileAnEditLandsRestoresTheRest: a file that changes
// after the plan and before its own write refuses the edit, and the
// files the edit already wrote get their content back.
func TestAFileChangedWhileAnEditLandsRestoresTheRest(t *testing.T) {
	t.Parallel()
	s, p := langSession(t, map[string]string{"a.txt": aTxt, "b.txt": bTxt})
	ctx := within(t, settleWithin)
	e, err := p.Rename(ctx, Position{Symbol: "T.Greet"}, "Hello")
	if err != nil || len(e.Files) != 2 {
		t.Fatalf("preview: %s %v", show(e), err)
	}
	p.test.beforeLanding = func(path string) {
		if path == "b.txt" {
			os.WriteFile(filepath.Join(s.ws, "b.txt"), []byte("raced\n"), 0o644)
		}
	}
	_, err = p.Apply(ctx, &tool.Call{Workspace: s.ws, Base: s.base}, e)
	if CodeOf(err) != CodeStaleEdit || !strings.Contains(err.Error(), "b.txt") || !strings.Contains(err.Error(), "restored: a.txt") {
		t.Fatalf("a race: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(s.ws, "a.txt")); string(got) != aTxt {
		t.Errorf("a.txt was not restored: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(s.ws, "b.txt")); string(got) != "raced\n" {
		t.Errorf("b.txt: %q", got)
	}
}
