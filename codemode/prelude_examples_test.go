package codemode

import (
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

// docExample returns the example of the package at dir of the prelude:
// the indented block after "Example:" in its package doc.
func docExample(t *testing.T, dir string) string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := fs.ReadDir(embeddedPrelude(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		src, err := fs.ReadFile(embeddedPrelude(), path.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, e.Name(), src, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil || f.Doc == nil {
			continue
		}
		_, ex, ok := strings.Cut(f.Doc.Text(), "Example:\n")
		if !ok {
			continue
		}
		var lines []string
		for _, l := range strings.Split(ex, "\n") {
			if l != "" && !strings.HasPrefix(l, "\t") {
				break
			}
			lines = append(lines, strings.TrimPrefix(l, "\t"))
		}
		return strings.Join(lines, "\n")
	}
	t.Fatalf("the package doc of cap/%s shows no example", dir)
	return ""
}

// TestPreludeDocExamplesRun runs the example in every seam package's
// documentation through vet, build and run, as a model that copied it
// into main would: the imports it may need are given (the build drops the
// unused ones), and so is the data a fragment names.
func TestPreludeDocExamplesRun(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, seam := range []Seam{WorkspaceSeam(), OrchestrationSeam()} {
		for _, pkg := range seam.Packages {
			if seen[pkg] {
				continue
			}
			seen[pkg] = true
			if pkg == "cap/lsp" {
				continue // it needs a language server: plane's TestCodeModeLanguageServer runs it against the fake
			}
			dir := strings.TrimPrefix(pkg, preludeModule+"/")
			t.Run(dir, func(t *testing.T) {
				t.Parallel()
				body := docExample(t, dir)
				src := fmt.Sprintf("package main\n\nimport (\n\t\"context\"\n\t\"errors\"\n\t\"fmt\"\n\t\"strings\"\n\t\"time\"\n\n\t%q\n)\n\nfunc main() {\n\tctx := context.Background()\n\tdata := []byte(`{\"ok\": true}`)\n%s\n}\n", pkg, body)
				var s *session
				if pkg == "cap/strand" || pkg == "cap/notes" {
					// The packages over the Agency run with a scripted one.
					s, _ = newAgentSession(t, agent.Options{}, 0)
				} else if pkg == "cap/schedule" {
					s, _ = newScheduleSession(t)
				} else {
					s = newSession(t, map[string]string{
						"go.mod":       "module example.com/demo\n\ngo 1.26\n",
						"main.go":      "package main\n\nfunc main() { println(\"Hello\") }\n",
						"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestMain2(t *testing.T) {}\n",
					})
					seedGoBuildCache(t, s)
				}
				ctx, cancel := context.WithTimeout(context.Background(), exampleWithin+time.Minute)
				defer cancel()
				// A generous wall: cap/job's example runs go test in a job,
				// which a loaded machine can keep past the default.
				x, err := s.eng.Execute(ctx, s.call, Request{Source: []byte(src), Seam: seam.Name, Within: exampleWithin})
				if err != nil {
					t.Fatalf("the example did not run: %v\n%s", err, src)
				}
				if x.Run.Code != "" {
					t.Fatalf("the example failed (%s): %s\nstderr: %s\n%s", x.Run.Code, x.Run.Stdout, x.Run.Stderr, src)
				}
				failed := x.Run.Record.Failed
				if pkg == "cap/execution" {
					// Run in the foreground, the example's Receive is
					// refused not_background, as its doc says.
					failed -= countCode(x.Run.Record, codeNotBackground)
				}
				if failed != 0 {
					t.Errorf("the example's calls failed: %+v\n%s", x.Run.Record, x.Run.Stdout)
				}
			})
		}
	}
}

// TestPreludeStatesTheHostsBounds: a bound the prelude's docs state is the
// host's constant, so the two cannot drift apart.
func TestPreludeStatesTheHostsBounds(t *testing.T) {
	t.Parallel()
	src, err := fs.ReadFile(embeddedPrelude(), "fs/fs.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("size bound of %d MiB", tool.MaxFileBytes>>20); !strings.Contains(string(src), want) {
		t.Errorf("cap/fs's Read doc does not say %q", want)
	}
}

// countCode counts the record's calls that failed with code.
func countCode(r CallRecord, code tool.Code) int {
	n := 0
	for _, c := range r.Calls {
		if c.Status == CallFailed && c.Code == code {
			n++
		}
	}
	return n
}

// exampleWithin is the wall deadline a doc example runs under.
const exampleWithin = 4 * time.Minute
