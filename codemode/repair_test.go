package codemode

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func TestRepairUnusedRewrites(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, diag, want string
	}{
		{"drop spec",
			"package main\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n",
			"main.go:5:2: \"strings\" imported and not used\n",
			"package main\n\nimport (\n\t\"fmt\"\n\t\n)\n"},
		{"drop declaration",
			"package main\n\nimport \"strings\"\n",
			"main.go:3:8: \"strings\" imported and not used\n",
			"package main\n\n\n"},
		{"blank use after statement",
			"package main\n\nfunc main() {\n\tx := 1\n}\n",
			"main.go:4:2: declared and not used: x\n",
			"package main\n\nfunc main() {\n\tx := 1; _ = x\n}\n"},
		{"blank use in if body",
			"package main\n\nfunc main() {\n\tif v := 1; true {\n\t}\n}\n",
			"main.go:4:5: declared and not used: v\n",
			"package main\n\nfunc main() {\n\tif v := 1; true { _ = v;\n\t}\n}\n"},
		{"drop label",
			"package main\n\nfunc main() {\nL:\n\tfor {\n\t}\n}\n",
			"main.go:4:1: label L defined and not used\n",
			"package main\n\nfunc main() {\n\n\tfor {\n\t}\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _, ok := repairUnused([]byte(tt.src), tt.diag)
			if !ok {
				t.Fatal("not repaired")
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRepairUnusedRefuses(t *testing.T) {
	t.Parallel()
	const src = "package main\n\nimport \"strings\"\n\nfunc main() {\n\tx := 1\n\tvar e any\n\tswitch q := e.(type) {\n\t}\n}\n"
	tests := []struct{ name, diag string }{
		{"another error beside", "main.go:3:8: \"strings\" imported and not used\nmain.go:6:2: undefined: y\n"},
		{"another file", "other.go:3:8: \"strings\" imported and not used\n"},
		{"wrong position", "main.go:3:9: \"strings\" imported and not used\n"},
		{"wrong name", "main.go:6:2: declared and not used: y\n"},
		{"line past the end", "main.go:99:1: declared and not used: x\n"},
		{"no clause to use it in", "main.go:8:9: q declared and not used\n"},
		{"the same error twice", "main.go:3:8: \"strings\" imported and not used\nmain.go:3:8: \"strings\" imported and not used\n"},
		{"a cut note", "main.go:3:8: \"strings\" imported and not used\n\n[12 more bytes of diagnostics cut at 65536]\n"},
		{"a continuation line", "main.go:6:2: declared and not used: x\n\thave int\n"},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, edits, ok := repairUnused([]byte(src), tt.diag); ok {
				t.Fatalf("repaired into %q with %v", got, edits)
			}
		})
	}
	// Control: the repairable part alone is repaired.
	if _, _, ok := repairUnused([]byte(src), "main.go:3:8: \"strings\" imported and not used\nmain.go:6:2: declared and not used: x\n"); !ok {
		t.Fatal("the control was not repaired")
	}
}

// TestRepairUnusedVariablesProperty: for any set of variables, the unused
// ones (reported in the compiler's words) each get exactly one blank use,
// the used ones none, every line keeps its number and the result parses.
func TestRepairUnusedVariablesProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "vars")
		used := rapid.SliceOfN(rapid.Bool(), n, n).Draw(t, "used")
		var src bytes.Buffer
		var diag strings.Builder
		src.WriteString("package main\n\nfunc main() {\n")
		line := 4
		anyUnused := false
		for i := range n {
			fmt.Fprintf(&src, "\tv%d := %d\n", i, i)
			if !used[i] {
				fmt.Fprintf(&diag, "main.go:%d:2: declared and not used: v%d\n", line, i)
				anyUnused = true
			}
			line++
		}
		for i := range n {
			if used[i] {
				fmt.Fprintf(&src, "\tprintln(v%d)\n", i)
			}
		}
		src.WriteString("}\n")
		fixed, edits, ok := repairUnused(src.Bytes(), diag.String())
		if !anyUnused {
			if ok {
				t.Fatalf("repaired with no diagnostics")
			}
			return
		}
		if !ok {
			t.Fatalf("not repaired:\n%s\n%s", src.String(), diag.String())
		}
		if _, err := parser.ParseFile(token.NewFileSet(), programFileName, fixed, 0); err != nil {
			t.Fatalf("the result does not parse: %v", err)
		}
		if bytes.Count(fixed, []byte("\n")) != bytes.Count(src.Bytes(), []byte("\n")) {
			t.Fatalf("line count changed:\n%s", fixed)
		}
		lines := strings.Split(string(fixed), "\n")
		for i := range n {
			want := 0
			if !used[i] {
				want = 1
			}
			if got := strings.Count(string(fixed), fmt.Sprintf("_ = v%d\n", i)); got != want {
				t.Fatalf("v%d: %d blank uses, want %d:\n%s", i, got, want, fixed)
			}
			if !used[i] && lines[3+i] != fmt.Sprintf("\tv%d := %d; _ = v%d", i, i, i) {
				t.Fatalf("line %d is %q", 4+i, lines[3+i])
			}
		}
		if got := len(edits); got != n-countTrue(used) {
			t.Fatalf("%d edits for %d unused variables", got, n-countTrue(used))
		}
	})
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
