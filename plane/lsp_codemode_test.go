package plane

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/hashline"
	"github.com/agentloom/loom/lsp"
)

// TestCodeModeLanguageServer: with a language server configured, a
// program imports cap/lsp and asks it by name and by line: references of
// a symbol, a hover, a rename previewed then applied, a stale apply
// refused with nothing written, the diagnostics of a file and its quick
// fix applied; fs_read
// cap://lsp documents the package.
func TestCodeModeLanguageServer(t *testing.T) {
	t.Parallel()
	ws, cfg := testDirs(t)
	cfg.Families = FamilyFiles | FamilyCodeMode
	cfg.LanguageServers = func([]lsp.Server) []lsp.Server {
		return []lsp.Server{{Name: "fake", Command: []string{fakeServer.Path(t), "-mode", "lang"},
			Files: []lsp.FilePattern{{Pattern: "*.txt", LanguageID: "plaintext"}}}}
	}
	for name, content := range map[string]string{
		"a.txt": "def T.Greet\nuse Greet here\ndef Use\ncall Greet\ncall Other\n",
		"b.txt": "def Other\ncall Use\nGreet again, Greet\n",
		"c.txt": "fine\nERR here\n",
		"d.txt": "def Stale\nStale too\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := newTestPlane(t, cfg)
	src := `package main

import (
	"context"
	"errors"
	"fmt"

	"cap/fs"
	"cap/lsp"
)

func main() {
	ctx := context.Background()
	refs, err := lsp.References(ctx, lsp.Symbol("T.Greet"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("refs %d of %d by %s:", len(refs.Items), refs.Total, refs.Server)
	for _, s := range refs.Items {
		fmt.Printf(" %s:%d:%d", s.Path, s.Line, s.Column)
	}
	fmt.Printf("\nfirst %s %s\n", refs.Items[0].Anchor, refs.Items[0].Text)
	h, err := lsp.Hover(ctx, lsp.At("a.txt", 3, "Use"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("hover %q at %d:%d\n", h.Text, h.Site.Line, h.Site.Column)
	edit, err := lsp.Rename(ctx, lsp.Symbol("Other"), "Another")
	if err != nil {
		panic(err)
	}
	b, _ := fs.Read(ctx, "b.txt")
	fmt.Printf("preview %d files, b.txt still %q\n", len(edit.Files), b.Text())
	applied, err := lsp.Apply(ctx, edit)
	if err != nil {
		panic(err)
	}
	for _, f := range applied.Files {
		fmt.Printf("applied %s %d bytes\n", f.Path, f.Bytes)
	}
	b, _ = fs.Read(ctx, "b.txt")
	fmt.Printf("b.txt now %q\n", b.Text())
	stale, err := lsp.Rename(ctx, lsp.Symbol("Stale"), "Fresh")
	if err != nil {
		panic(err)
	}
	if _, err := fs.Write(ctx, "d.txt", []byte("def Stale\nStale changed\n")); err != nil {
		panic(err)
	}
	_, err = lsp.Apply(ctx, stale)
	var e *lsp.Error
	d, _ := fs.Read(ctx, "d.txt")
	fmt.Printf("stale apply: %v %q\n", errors.As(err, &e) && e.Code == "lsp_stale_edit", d.Text())
	diags, err := lsp.Diagnostics(ctx, "c.txt")
	if err != nil {
		panic(err)
	}
	for _, f := range diags {
		fmt.Printf("diagnostics %s %s %d errors:", f.Path, f.Status, f.Errors)
		for _, it := range f.Items {
			fmt.Printf(" %d:%s %s %q", it.Line, it.Anchor, it.Severity, it.Message)
		}
		fmt.Println()
	}
	acts, err := lsp.CodeActions(ctx, "c.txt", 1, 2)
	if err != nil {
		panic(err)
	}
	for _, a := range acts.Items {
		fmt.Printf("action %q %s edit=%v command=%s\n", a.Title, a.Kind, a.Edit != nil, a.Command)
		if a.Edit != nil {
			if _, err := lsp.Apply(ctx, *a.Edit); err != nil {
				panic(err)
			}
		}
	}
	c, _ := fs.Read(ctx, "c.txt")
	fmt.Printf("c.txt now %q\n", c.Text())
}
`
	raw, _ := json.Marshal(map[string]any{"program": src, "within_ms": 600000})
	o := p.Registry.Dispatch(t.Context(), p.Call.At("op-1", "step-1", 0), "code_mode", raw)
	if o.IsError {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	for _, want := range []string{
		"refs 5 of 5 by fake: a.txt:1:7 a.txt:2:5 a.txt:4:6 b.txt:3:1 b.txt:3:14\n",
		fmt.Sprintf("first %s def T.Greet\n", hashline.AnchorOf("def T.Greet")),
		"hover \"hover of **Use**\" at 3:5\n",
		"preview 2 files, b.txt still \"def Other\\ncall Use\\nGreet again, Greet\\n\"\n",
		"applied a.txt ", "applied b.txt ",
		"b.txt now \"def Another\\ncall Use\\nGreet again, Greet\\n\"\n",
		"stale apply: true \"def Stale\\nStale changed\\n\"\n",
		fmt.Sprintf("diagnostics c.txt settled 1 errors: 2:%s error \"flagged: ERR here\"\n", hashline.AnchorOf("ERR here")),
		"action \"Replace ERR on line 2\" quickfix edit=true command=\n",
		"action \"Run a command\"  edit=false command=fake.cmd\n",
		"c.txt now \"fine\\nOK here\\n\"\n",
	} {
		if !strings.Contains(o.Text, want) {
			t.Errorf("the program's output lacks %q:\n%s", want, o.Text)
		}
	}
	tl, _ := p.Registry.Lookup("code_mode")
	if d := tl.Description; !strings.Contains(d, "import \"cap/lsp\"\nlsp.Definition, References,") || !strings.Contains(d, "fs_read cap://lsp") ||
		len(d)+len(tl.Schema) > 8<<10 {
		t.Errorf("code_mode's description (%d bytes with its schema) does not point at cap/lsp within 8 KiB:\n%s", len(d)+len(tl.Schema), d)
	}
	doc, _ := json.Marshal(map[string]string{"path": "cap://lsp"})
	if o := p.Registry.Dispatch(t.Context(), p.Call.At("op-2", "step-1", 0), "fs_read", doc); o.IsError ||
		!strings.Contains(o.Text, "func Rename(ctx context.Context, at Position, newName string) (Edit, error)") ||
		!strings.Contains(o.Text, "writes nothing") {
		t.Errorf("fs_read cap://lsp:\n%s", o.Text)
	}
}
