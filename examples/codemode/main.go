// Command codemode runs one program a model might write through Loom's
// code mode — vetted, built offline in a jail, run in an empty jail — over
// a small demo workspace, and prints what a host sees: the program's
// result, its call record and both stages' enforcement reports. Then it
// launches a second program in the background (mode "launch") and drives
// it as a model would: check until it is ready, send it input on its
// endpoint, join it for what it printed (runBackground).
//
//	go run ./examples/codemode
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/plane"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "codemode:", err)
		os.Exit(1)
	}
}

// survey is the program: it walks the workspace, reads every Go file
// from goroutines, greps for TODOs, runs a jailed git log and emits a
// report.
const survey = `package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"cap/fs"
	"cap/proc"
	"cap/report"
	"cap/search"
)

func main() {
	ctx := context.Background()
	var files []string
	var walk func(dir string)
	walk = func(dir string) {
		l, err := fs.List(ctx, dir)
		if err != nil {
			return
		}
		for _, e := range l.Entries {
			p := dir + "/" + e.Name
			switch {
			case e.Kind == fs.KindDir && !strings.HasPrefix(e.Name, "."):
				walk(p)
			case e.Kind == fs.KindFile && strings.HasSuffix(e.Name, ".go"):
				files = append(files, strings.TrimPrefix(p, "./"))
			}
		}
	}
	walk(".")
	lines := make([]int, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := fs.Read(ctx, f); err == nil {
				lines[i] = strings.Count(r.Text(), "\n")
			}
		}()
	}
	wg.Wait()
	sort.Strings(files)
	var b strings.Builder
	fmt.Fprintf(&b, "%d Go files\n", len(files))
	todo, err := search.Grep(ctx, "TODO", search.GrepOptions{Glob: "*.go"})
	if err == nil {
		for _, m := range todo.Matches {
			fmt.Fprintf(&b, "TODO %s:%d %s\n", m.Path, m.Line, strings.TrimSpace(m.Text))
		}
	}
	log, err := proc.Run(ctx, proc.Cmd{Argv: []string{"git", "log", "--oneline"}})
	if err != nil {
		fmt.Fprintf(&b, "git log: %v\n", err)
	} else {
		fmt.Fprintf(&b, "git log (exit %d): %s", log.Exit, log.Stdout)
	}
	a, err := report.Emit(ctx, "survey.txt", []byte(b.String()), "text/plain")
	if err == nil {
		fmt.Fprintf(&b, "report %s (%d bytes)\n", a.Digest[:12], a.Bytes)
	}
	fmt.Print(b.String())
}
`

func run(w io.Writer) error {
	ws, err := demoWorkspace()
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(ws))
	p, err := plane.New(plane.Config{Workspace: ws, Families: plane.FamilyFiles | plane.FamilyGrep | plane.FamilyShell | plane.FamilyCodeMode,
		BlobDir: filepath.Join(filepath.Dir(ws), "blobs"), Scratch: filepath.Join(filepath.Dir(ws), "scratch"),
		CodeMode: codemode.BuilderOptions{Progress: func(s string) { fmt.Fprintln(w, "warm-up:", s) }}})
	if err != nil {
		return err
	}
	defer p.Close()
	io.WriteString(w, "program:\n"+survey)
	raw, _ := json.Marshal(map[string]any{"program": survey})
	out := p.Registry.Dispatch(context.Background(), p.Call.At("op-1", "1", 0), codemode.ToolName, raw)
	fmt.Fprintf(w, "code_mode answered (error: %v, code %q):\n%s\n", out.IsError, out.Code, out.Text)
	d, ok := out.Details.(codemode.Details)
	if !ok {
		return fmt.Errorf("no details: %s", out.Text)
	}
	rec, _ := json.MarshalIndent(d.Record, "", "  ")
	fmt.Fprintf(w, "\ncall record:\n%s\n", rec)
	if d.Build != nil {
		fmt.Fprintf(w, "\nbuild stage: %s\n", d.Build)
	} else {
		fmt.Fprint(w, "\nbuild stage: none ran (the binary of an identical earlier program was kept)\n")
	}
	if d.Run != nil {
		fmt.Fprintf(w, "run stage:   %s\n", d.Run)
	}
	if out.IsError {
		return fmt.Errorf("the program failed: %s", out.Code)
	}
	return runBackground(w, p)
}

// demoWorkspace makes a small Go module with a git history, under
// /var/tmp where possible (a jail's /tmp is its own).
func demoWorkspace() (string, error) {
	root, err := os.MkdirTemp("/var/tmp", "loom-codemode-demo-")
	if err != nil {
		root, err = os.MkdirTemp("", "loom-codemode-demo-")
	}
	if err != nil {
		return "", err
	}
	ws := filepath.Join(root, "ws")
	files := map[string]string{
		"go.mod":           "module example.com/demo\n\ngo 1.26\n",
		"main.go":          "package main\n\nimport \"example.com/demo/greet\"\n\n// TODO: take a name from the command line\nfunc main() { println(greet.Hello()) }\n",
		"greet/greet.go":   "package greet\n\n// Hello greets.\nfunc Hello() string { return \"hello\" } // TODO: i18n\n",
		"greet/doc.go":     "// Package greet says hello.\npackage greet\n",
		"notes/readme.txt": "not Go\n",
	}
	for p, s := range files {
		p = filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=demo@example.com", "-c", "user.name=demo", "commit", "-qm", "a demo module"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %v: %v: %s", args, err, out)
		}
	}
	return ws, nil
}
