package search

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/internal/search/searchtest"
)

// selectionTree holds hidden entries, ignored entries and entries an
// .rgignore, a .gitignore and an .ignore each decide about.
var selectionTree = map[string]string{
	"a.go":            "x\n",
	"b.txt":           "x\n",
	".h.go":           "x\n",
	".hid/in.go":      "x\n",
	"ign.go":          "x\n",
	"gen/g.go":        "x\n",
	"sub/c.go":        "x\n",
	"sub/.h2.go":      "x\n",
	"r.go":            "x\n",
	"rg/kept.log":     "x\n",
	"rg/other.log":    "x\n",
	"rg/dropped.go":   "x\n",
	"rg/.rgignore":    "!kept.log\ndropped.go\n",
	"i.go":            "x\n",
	".gitignore":      "ign.go\ngen/\n*.log\n",
	".rgignore":       "r.go\n",
	".ignore":         "i.go\n",
	"deep/x/y/z.go":   "x\n",
	"deep/.gitignore": "!keep-me.txt\n",
}

// TestEnginesSelectTheSameFiles holds both engines to one expected file
// list per glob: an admitting glob only narrows (hidden and ignored
// files stay skipped, though ripgrep's own --glob would admit them), an
// excluding glob skips what it matches, .rgignore is honoured (its rules
// before any .gitignore rule) and .ignore is not; an explicitly named
// root is searched whatever the rules say of its name.
func TestEnginesSelectTheSameFiles(t *testing.T) {
	t.Parallel()
	searchtest.RequireRipgrep(t)
	root := fixture(t, selectionTree)
	for _, tt := range []struct {
		root, glob string
		want       []string
	}{
		{"", "", []string{"a.go", "b.txt", "deep/x/y/z.go", "i.go", "rg/kept.log", "sub/c.go"}},
		{"", "*.go", []string{"a.go", "deep/x/y/z.go", "i.go", "sub/c.go"}},
		{"", "**/*.go", []string{"a.go", "deep/x/y/z.go", "i.go", "sub/c.go"}},
		{"", "sub/*", []string{"sub/c.go"}},
		{"", "*.log", []string{"rg/kept.log"}},
		{"", "!*.go", []string{"b.txt", "rg/kept.log"}},
		{"", "!sub", []string{"a.go", "b.txt", "deep/x/y/z.go", "i.go", "rg/kept.log"}},
		{"", "*.md", nil},
		{".hid", "*.go", []string{".hid/in.go"}},
		{"gen", "*.go", []string{"gen/g.go"}},
		{".h.go", "*.txt", []string{".h.go"}},
		{"ign.go", "", []string{"ign.go"}},
		{"r.go", "!*.go", []string{"r.go"}},
	} {
		t.Run(fmt.Sprintf("%s/%s", tt.root, tt.glob), func(t *testing.T) {
			r := filepath.Join(root, tt.root)
			o := Options{Pattern: "x", Glob: tt.glob, IgnoreRoot: root}
			for engine, res := range map[string]Result{"go": goRun(t, r, o), "ripgrep": rgRun(t, r, o)} {
				if diff := cmp.Diff(tt.want, filesOf(root, res)); diff != "" {
					t.Errorf("%s engine: files (-want +got):\n%s", engine, diff)
				}
			}
		})
	}
}
