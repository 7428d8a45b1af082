package tool

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/internal/search"
	"github.com/agentloom/loom/internal/search/searchtest"
)

// engineCalls returns a Call per engine over one workspace of files: the
// Go engine (no broker) and, when rg is installed, ripgrep (a broker).
func engineCalls(t *testing.T, files map[string]string) map[string]*Call {
	t.Helper()
	calls := map[string]*Call{EngineGo: grepCall(t, files, false)}
	searchtest.RequireRipgrep(t)
	calls[EngineRipgrep] = grepCall(t, files, true)
	return calls
}

func TestGrepRefusesBadGlobsBeforeEitherEngine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", search.MaxGlobBytes+1)
	for engine, c := range engineCalls(t, grepTree) {
		for _, tt := range []struct{ glob, mention string }{
			{"[abc", "no ] closes"},
			{"{a,b", "no } closes"},
			{"{a,{b,c}}", "nests"},
			{"[z-a]", "z-a runs backwards"},
			{`a\`, `lone \`},
			{"a}", "closes no alternation"},
			{"!", "must be followed"},
			{long, "more than"},
		} {
			o := runGrepArgs(t, c, map[string]any{"pattern": "needle", "glob": tt.glob})
			if !o.IsError || grepCode(o) != CodeInvalidGlob || !strings.Contains(o.Text, tt.mention) {
				t.Errorf("%s: glob %.20q: IsError=%v code=%q text=%q, want %s mentioning %q", engine, tt.glob, o.IsError, grepCode(o), o.Text, CodeInvalidGlob, tt.mention)
			}
			if strings.Contains(o.Text, long) || len(o.Text) > 1000 {
				t.Errorf("%s: the refusal quotes the glob unbounded (%d bytes)", engine, len(o.Text))
			}
			if !strings.Contains(o.Text, "{a,b} alternatives") {
				t.Errorf("%s: the refusal does not say what is accepted: %q", engine, o.Text)
			}
			if d, ok := o.Details.(GrepDetails); ok && (d.Enforcement != nil || d.Engine != "") {
				t.Errorf("%s: a refused glob reached an engine: %+v", engine, d)
			}
		}
		// Control: the same globs, made valid, search.
		if o := runGrepArgs(t, c, map[string]any{"pattern": "needle", "glob": "[abc]*"}); o.IsError || grepDetails(t, o).Matches == 0 {
			t.Errorf("%s: a valid glob: %q", engine, o.Text)
		}
	}
}

// fakeRipgrep puts an "rg" on PATH that writes stdout and stderr and
// exits with status, and lets the session's jail read it. Not for
// parallel tests: it sets PATH.
func fakeRipgrep(t *testing.T, c *Call, stdout, stderr string, status int) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"out": stdout, "err": stderr} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf("#!/bin/sh\ncat %s/out\ncat %s/err >&2\nexit %d\n", dir, dir, status)
	if err := os.WriteFile(filepath.Join(dir, "rg"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	c.Base.SystemRoots = append(c.Base.SystemRoots, dir)
}

// rgEvents renders a ripgrep --json stream holding one match of text
// at line 1 of path (relative, "./a.txt", as ripgrep run on "." reports
// it), with or without the closing summary event.
func rgEvents(path, text string, summary bool) string {
	p, _ := json.Marshal(map[string]string{"text": path})
	l, _ := json.Marshal(map[string]string{"text": text + "\n"})
	s := fmt.Sprintf(`{"type":"begin","data":{"path":%s}}`+"\n"+
		`{"type":"match","data":{"path":%s,"lines":%s,"line_number":1}}`+"\n"+
		`{"type":"end","data":{"path":%s,"binary_offset":null}}`+"\n", p, p, l, p)
	if summary {
		s += `{"type":"summary","data":{}}` + "\n"
	}
	return s
}

// Not parallel: fakeRipgrep sets PATH.
func TestGrepRipgrepFailureIsAnErrorNeverAFallback(t *testing.T) {
	for _, tt := range []struct {
		name           string
		stdout, stderr string
		status         int
		wantError      bool
		mention        string
	}{
		{"exit 2 before searching", "", "rg: error parsing something the model sent", 2, true, "error parsing something"},
		{"unparsable output", "{not json\n", "", 0, true, "could not be parsed"},
		{"exit 3", "", "", 3, true, "status 3"},
		{"exit 2 after searching", "<events>", "./locked: Permission denied (os error 13)", 2, false, "could not read some entries"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := grepCall(t, grepTree, true)
			out := strings.ReplaceAll(tt.stdout, "<events>", rgEvents("./a.txt", "alpha needle", true))
			fakeRipgrep(t, c, out, tt.stderr, tt.status)
			o := runGrepArgs(t, c, map[string]any{"pattern": "needle"})
			d := grepDetails(t, o)
			if d.Engine != EngineRipgrep || d.InHost != "" || d.Fallback != "" {
				t.Fatalf("engine %q in_host %q fallback %q: a failed ripgrep must not hand over to the Go engine", d.Engine, d.InHost, d.Fallback)
			}
			if d.Enforcement == nil {
				t.Fatal("the ripgrep run's outcome has no enforcement report")
			}
			if o.IsError != tt.wantError || !strings.Contains(o.Text, tt.mention) {
				t.Fatalf("IsError=%v text=%q, want error=%v mentioning %q", o.IsError, o.Text, tt.wantError, tt.mention)
			}
			if tt.wantError && grepCode(o) != CodeSearchFailed {
				t.Fatalf("code %q, want %s", grepCode(o), CodeSearchFailed)
			}
			if !tt.wantError && (d.Matches != 1 || !strings.Contains(d.Warnings, "Permission denied")) {
				t.Fatalf("a completed search with warnings: %+v", d)
			}
		})
	}
}

// Not parallel: a case sets PATH.
func TestGrepSaysWhichEngineRanAndWhatConfinedIt(t *testing.T) {
	searchtest.RequireRipgrep(t)
	for _, tt := range []struct {
		name       string
		setup      func(t *testing.T, c *Call)
		broker     bool
		engine     string
		fallback   bool
		enforement bool
	}{
		{"no broker", func(*testing.T, *Call) {}, false, EngineGo, false, false},
		{"no ripgrep", func(t *testing.T, _ *Call) { t.Setenv("PATH", "") }, true, EngineGo, false, false},
		{"ripgrep not jailable", func(_ *testing.T, c *Call) { c.Base.SystemRoots = nil }, true, EngineGo, true, false},
		{"ripgrep", func(*testing.T, *Call) {}, true, EngineRipgrep, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := grepCall(t, grepTree, tt.broker)
			tt.setup(t, c)
			o := runGrepArgs(t, c, map[string]any{"pattern": "needle"})
			d := grepDetails(t, o)
			if o.IsError || d.Engine != tt.engine || (d.Fallback != "") != tt.fallback || (d.Enforcement != nil) != tt.enforement {
				t.Fatalf("IsError=%v engine=%q fallback=%q enforcement=%v: %s", o.IsError, d.Engine, d.Fallback, d.Enforcement != nil, o.Text)
			}
			if wantInHost := tt.engine == EngineGo; (d.InHost == goEngineInHost) != wantInHost || (!wantInHost && d.InHost != "") {
				t.Fatalf("in_host %q for engine %s", d.InHost, d.Engine)
			}
		})
	}
}

func TestGrepReadsNoSystemRootTheHostDidNotList(t *testing.T) {
	t.Parallel()
	files := map[string]string{"f.txt": "root of the matter\n"}
	for engine, c := range engineCalls(t, files) {
		for _, link := range [][2]string{{"etc", "/etc"}, {"passwd", "/etc/passwd"}} {
			if err := os.Symlink(link[1], filepath.Join(c.Workspace, link[0])); err != nil {
				t.Fatal(err)
			}
		}
		for _, path := range []string{"/etc", "/etc/passwd", "etc", "etc/passwd"} {
			o := runGrepArgs(t, c, map[string]any{"pattern": "root", "path": path})
			// Through a workspace link the lexical path lies under /tmp
			// (where tests keep workspaces), which is refused first.
			if code := grepCode(o); !o.IsError || (code != "outside_roots" && code != "jail_replaced") {
				t.Errorf("%s: grep path=%s: IsError=%v code=%q text=%q, want outside_roots", engine, path, o.IsError, code, o.Text)
			}
		}
		// The workspace's links to /etc are not followed either.
		o := runGrepArgs(t, c, map[string]any{"pattern": "root"})
		if d := grepDetails(t, o); o.IsError || d.Engine != engine || d.Files != 1 {
			t.Errorf("%s: grep of the workspace: engine %q, %d files (want f.txt only): %s", engine, d.Engine, d.Files, o.Text)
		}
		// Control: a host that lists /etc lets both engines read it.
		listed := *c
		listed.Base.ReadableRoots = append(listed.Base.ReadableRoots, "/etc")
		o = runGrepArgs(t, &listed, map[string]any{"pattern": "root", "path": "/etc/passwd"})
		if d := grepDetails(t, o); o.IsError || d.Engine != engine || d.Matches == 0 {
			t.Errorf("%s: with /etc listed: engine %q, %d matches: %s", engine, d.Engine, d.Matches, o.Text)
		}
	}
}

// Not parallel: fakeRipgrep sets PATH. A ripgrep whose stream passes
// maxRipgrepOutputBytes is stopped there by the broker; what it found
// stands and the outcome says the search was cut. Control: the same
// stream without the flood completes with no such note.
func TestGrepRipgrepOutputBound(t *testing.T) {
	for _, flood := range []bool{false, true} {
		c := grepCall(t, grepTree, true)
		out := rgEvents("./a.txt", "alpha needle", !flood)
		fakeRipgrep(t, c, out, "", 0)
		if flood {
			// Endless begin/end pairs of files without matches: valid
			// events the collector keeps reading, so only the bound ends it.
			p, _ := json.Marshal(map[string]string{"text": "./nomatch.txt"})
			pair := fmt.Sprintf(`{"type":"begin","data":{"path":%s}}`+"\n"+`{"type":"end","data":{"path":%s,"binary_offset":null}}`, p, p)
			rg := filepath.Join(filepath.SplitList(os.Getenv("PATH"))[0], "rg")
			script, _ := os.ReadFile(rg)
			script = []byte(strings.Replace(string(script), "exit 0", "yes '"+pair+"'\nexit 0", 1))
			if err := os.WriteFile(rg, script, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		o := runGrepArgs(t, c, map[string]any{"pattern": "needle"})
		d := grepDetails(t, o)
		noted := strings.Contains(o.Text, "output reached its")
		if o.IsError || d.Engine != EngineRipgrep || d.Matches != 1 || noted != flood {
			t.Errorf("flood=%v: IsError=%v engine=%q matches=%d noted=%v: %s", flood, o.IsError, d.Engine, d.Matches, noted, o.Text)
		}
	}
}
