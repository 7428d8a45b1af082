package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/internal/search"
	"github.com/agentloom/loom/internal/search/searchtest"
	"github.com/agentloom/loom/sandbox"
	"github.com/google/go-cmp/cmp"
)

var grepTree = map[string]string{
	"a.txt":           "alpha needle\nbeta\ngamma\ndelta needle\nepsilon\n",
	"a/b.txt":         "needle in a\n",
	"src/main.go":     "package main\n\n// Needle here\nfunc main() {}\n",
	"src/gen/x.go":    "needle generated\n",
	"src/.gitignore":  "gen/\n",
	".gitignore":      "*.log\n",
	"debug.log":       "needle in a log\n",
	".hidden/h.txt":   "needle hidden\n",
	"bin.dat":         "\x00\x01needle\n",
	".git/config":     "[core]\n# needle in config\n",
	".git/hooks/pre":  "needle in hook\n",
	"private/k.txt":   "needle protected\n",
	"crlf.txt":        "needle\r\n",
	"deep/er/est.txt": "x\nneedle deep\ny\n",
}

// grepCall returns a Call over a fresh workspace holding files; withBroker
// gives it a broker (so ripgrep runs when installed).
func grepCall(t *testing.T, files map[string]string, withBroker bool) *Call {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	for name, content := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := blob.Open(filepath.Join(root, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Call{
		Workspace: ws,
		OpID:      "op", StepID: t.Name(),
		Base: sandbox.Policy{
			SystemRoots:   sandbox.SystemReadableRoots(),
			WritableRoots: []string{ws},
			Protected:     append(broker.DefaultProtected(ws), filepath.Join(ws, "private")),
		},
		Blobs: store,
	}
	if withBroker {
		c.Broker = testBroker(t)
	}
	return c
}

func runGrepArgs(t *testing.T, c *Call, args map[string]any) Outcome {
	t.Helper()
	r, err := NewRegistry(GrepTool())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return r.Dispatch(context.Background(), c, "grep", raw)
}

func grepDetails(t *testing.T, o Outcome) GrepDetails {
	t.Helper()
	d, ok := o.Details.(GrepDetails)
	if !ok {
		t.Fatalf("details %T (%+v), want GrepDetails; text %q", o.Details, o.Details, o.Text)
	}
	return d
}

func TestGrepGoEngine(t *testing.T) {
	c := grepCall(t, grepTree, false)
	o := runGrepArgs(t, c, map[string]any{"pattern": "needle"})
	if o.IsError {
		t.Fatalf("grep failed: %s", o.Text)
	}
	want := "a/b.txt:1:needle in a\n" +
		"a.txt:1:alpha needle\n" +
		"a.txt:4:delta needle\n" +
		"crlf.txt:1:needle\n" +
		"deep/er/est.txt:2:needle deep\n" +
		"[5 matching lines in 4 files]\n"
	if diff := cmp.Diff(want, o.Text); diff != "" {
		t.Fatalf("text (-want +got):\n%s", diff)
	}
	d := grepDetails(t, o)
	if d.Engine != EngineGo || d.Matches != 5 || d.Files != 4 || d.Shown != 5 || d.Truncated {
		t.Fatalf("details %+v", d)
	}
}

func TestGrepEnginesRenderTheSame(t *testing.T) {
	searchtest.RequireRipgrep(t)
	cases := []map[string]any{
		{"pattern": "needle"},
		{"pattern": "NEEDLE", "case_insensitive": true},
		{"pattern": "needle", "context": 1},
		{"pattern": "needle", "glob": "*.go"},
		{"pattern": "needle", "glob": "!a*"},
		{"pattern": "needle", "path": "src"},
		{"pattern": "needle", "path": "a.txt", "context": 2},
		{"pattern": "needle", "max_results": 2},
		{"pattern": "^needle$"},
		{"pattern": "no such thing"},
	}
	goCall := grepCall(t, grepTree, false)
	rgCall := grepCall(t, grepTree, true)
	for _, args := range cases {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			g := runGrepArgs(t, goCall, args)
			r := runGrepArgs(t, rgCall, args)
			gd, rd := grepDetails(t, g), grepDetails(t, r)
			if gd.Engine != EngineGo || rd.Engine != EngineRipgrep {
				t.Fatalf("engines %q and %q (fallback %q), want go and ripgrep", gd.Engine, rd.Engine, rd.Fallback)
			}
			if rd.Enforcement == nil {
				t.Fatal("ripgrep run has no enforcement report")
			}
			if diff := cmp.Diff(g.Text, r.Text); diff != "" {
				t.Fatalf("outputs differ (-go +ripgrep):\n%s", diff)
			}
			if g.IsError || r.IsError {
				t.Fatalf("error outcomes: %q / %q", g.Text, r.Text)
			}
		})
	}
}

func TestGrepMaxResultsBound(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 12; i++ {
		b.WriteString("hit\n")
	}
	files := map[string]string{"f.txt": b.String()}
	for _, withBroker := range []bool{false, true} {
		if withBroker {
			searchtest.RequireRipgrep(t)
		}
		c := grepCall(t, files, withBroker)
		for _, tt := range []struct {
			max       int
			shown     int
			truncated bool
		}{{12, 12, false}, {11, 11, true}, {13, 12, false}, {1, 1, true}} {
			o := runGrepArgs(t, c, map[string]any{"pattern": "hit", "max_results": tt.max})
			d := grepDetails(t, o)
			if d.Shown != tt.shown || d.Truncated != tt.truncated || d.Matches != 12 {
				t.Errorf("broker=%v max_results=%d: %+v", withBroker, tt.max, d)
			}
			if tt.truncated && !strings.Contains(o.Text, fmt.Sprintf("showing the first %d of 12", tt.shown)) {
				t.Errorf("truncation not stated: %q", o.Text)
			}
		}
	}
}

func TestGrepClamps(t *testing.T) {
	c := grepCall(t, map[string]string{"f.txt": "a\n"}, false)
	for _, tt := range []struct {
		args map[string]any
		note string // "" means no clamp note
	}{
		{map[string]any{"pattern": "a", "max_results": MaxGrepResults}, ""},
		{map[string]any{"pattern": "a", "max_results": MaxGrepResults + 1}, fmt.Sprintf("max_results %d clamped to %d", MaxGrepResults+1, MaxGrepResults)},
		{map[string]any{"pattern": "a", "context": maxGrepContext}, ""},
		{map[string]any{"pattern": "a", "context": maxGrepContext + 1}, fmt.Sprintf("context %d clamped to %d", maxGrepContext+1, maxGrepContext)},
	} {
		o := runGrepArgs(t, c, tt.args)
		if o.IsError {
			t.Fatalf("%v: %s", tt.args, o.Text)
		}
		if got := strings.Contains(o.Text, "clamped"); got != (tt.note != "") || (tt.note != "" && !strings.Contains(o.Text, tt.note)) {
			t.Errorf("%v: text %q, want note %q", tt.args, o.Text, tt.note)
		}
	}
	o := runGrepArgs(t, c, map[string]any{"pattern": "a", "context": -1})
	if !o.IsError || grepCode(o) != "invalid_arguments" {
		t.Errorf("negative context accepted: %q", o.Text)
	}
}

func TestGrepRefusals(t *testing.T) {
	c := grepCall(t, grepTree, false)
	outside := t.TempDir()
	tests := []struct {
		args    map[string]any
		code    Code
		mention string
	}{
		{map[string]any{"pattern": "(unclosed"}, "invalid_pattern", "missing closing )"},
		{map[string]any{"pattern": "a{2,1}"}, "invalid_pattern", "invalid repeat count"},
		{map[string]any{"pattern": ""}, "invalid_pattern", "empty pattern"},
		{map[string]any{"pattern": strings.Repeat("(a|b)*", 1<<18)}, "invalid_pattern", fmt.Sprintf("at most %d are accepted", search.MaxPatternBytes)},
		{map[string]any{"pattern": "x", "glob": strings.Repeat("*", 1<<20)}, "invalid_glob", "bytes"},
		{map[string]any{"pattern": "x", "path": outside}, outsideCode(outside), "permission denied"},
		{map[string]any{"pattern": "x", "path": "../"}, outsideCode(filepath.Dir(c.Workspace)), "permission denied"},
		{map[string]any{"pattern": "x", "path": ".git/hooks"}, "protected_path", ".git/hooks"},
		{map[string]any{"pattern": "x", "path": "private/k.txt"}, "protected_path", "private"},
		{map[string]any{"pattern": "x", "bogus": 1}, "unknown_property", "bogus"},
		{map[string]any{"pattern": "x", "path": "nope"}, "not_found", `"nope" does not exist`},
	}
	for _, tt := range tests {
		o := runGrepArgs(t, c, tt.args)
		if !o.IsError || grepCode(o) != tt.code || !strings.Contains(o.Text, tt.mention) || len(o.Text) > 1024 {
			t.Errorf("%.200v: IsError=%v code=%q text=%.300q, want %s mentioning %q", tt.args, o.IsError, grepCode(o), o.Text, tt.code, tt.mention)
		}
	}
}

func TestGrepOverflowsToBlob(t *testing.T) {
	line := strings.Repeat("z", 200) + "\n"
	files := map[string]string{"big.txt": strings.Repeat(line, 600)}
	c := grepCall(t, files, false)
	o := runGrepArgs(t, c, map[string]any{"pattern": "z", "max_results": 600})
	d := grepDetails(t, o)
	if o.IsError || d.Overflow == nil {
		t.Fatalf("no overflow: error=%v details=%+v", o.IsError, d)
	}
	full, err := os.ReadFile(d.Overflow.Path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(full), "big.txt:"); n != 600 {
		t.Fatalf("blob holds %d result lines, want 600", n)
	}
	if len(o.Text) > blob.OverflowThreshold {
		t.Fatalf("inline text of %d bytes is over the threshold", len(o.Text))
	}
}

func TestGrepRespectsStepBudget(t *testing.T) {
	for _, engine := range []string{EngineRipgrep, EngineGo} {
		t.Run(engine, func(t *testing.T) {
			if engine == EngineGo {
				t.Setenv("PATH", "") // no rg: the Go engine runs, still budgeted
			} else {
				searchtest.RequireRipgrep(t)
			}
			c := grepCall(t, grepTree, true)
			l := c.Broker.Ledger()
			// maxConcurrentSearches-1 searches in flight: one more fits.
			var held []*sandbox.Ticket
			for i := 0; i < maxConcurrentSearches-1; i++ {
				tk, d := l.Admit(c.stepKey(), sandbox.Budget{MaxOutstanding: maxConcurrentSearches}, nil)
				if d != nil {
					t.Fatal(d)
				}
				held = append(held, tk)
			}
			o := runGrepArgs(t, c, map[string]any{"pattern": "needle"})
			if o.IsError || grepDetails(t, o).Engine != engine {
				t.Fatalf("at the cap: %q (%+v)", o.Text, o.Details)
			}
			// maxConcurrentSearches in flight: refused in band.
			tk, _ := l.Admit(c.stepKey(), sandbox.Budget{MaxOutstanding: maxConcurrentSearches}, nil)
			o = runGrepArgs(t, c, map[string]any{"pattern": "needle"})
			if !o.IsError || grepCode(o) != Code(sandbox.DenialOutstandingCapReached) {
				t.Fatalf("one past the cap: IsError=%v code=%q text=%q", o.IsError, grepCode(o), o.Text)
			}
			l.Release(tk)
			for _, h := range held {
				l.Release(h)
			}
			l.AbortStep(c.stepKey())
			o = runGrepArgs(t, c, map[string]any{"pattern": "needle"})
			if !o.IsError || grepCode(o) != Code(sandbox.DenialStepAborted) {
				t.Fatalf("aborted step: IsError=%v code=%q text=%q", o.IsError, grepCode(o), o.Text)
			}
		})
	}
}

func TestGrepDeclaration(t *testing.T) {
	g := GrepTool()
	if g.Mode != Concurrent || g.Replay != ReplaySafe {
		t.Fatalf("grep is %v/%v, want concurrent/safe", g.Mode, g.Replay)
	}
	req := g.Requirements("/w")
	if len(req.WritableRoots) != 0 || req.Network != sandbox.NetworkOff || req.ReadableRoots[0] != "/w" {
		t.Fatalf("requirements %+v", req)
	}
	if err := sandbox.Validate(req); err != nil {
		t.Fatal(err)
	}
	if maxConcurrentSearches <= sandbox.DefaultMaxOutstanding {
		t.Fatal("a Concurrent tool must declare headroom above the default cap")
	}
}

// grepCode returns the failure code of an outcome.
func grepCode(o Outcome) Code { return o.Code }

// outsideCode is the refusal a path outside the workspace gets: under /tmp
// it is "jail_replaced", elsewhere "outside_roots".
func outsideCode(p string) Code {
	if sandbox.Covers("/tmp", p) {
		return "jail_replaced"
	}
	return "outside_roots"
}

func benchCall(b *testing.B, withBroker bool) *Call {
	b.Helper()
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	if err := searchtest.WriteTree(ws); err != nil {
		b.Fatal(err)
	}
	store, err := blob.Open(filepath.Join(root, "blobs"))
	if err != nil {
		b.Fatal(err)
	}
	c := &Call{
		Workspace: ws, OpID: "bench", StepID: "s",
		Base: sandbox.Policy{
			SystemRoots:   sandbox.SystemReadableRoots(),
			WritableRoots: []string{ws},
			Protected:     broker.DefaultProtected(ws),
		},
		Blobs: store,
	}
	if withBroker {
		c.Broker = broker.New(broker.Options{})
	}
	return c
}

// BenchmarkGrep compares, on the same generated tree of searchtest.Files
// files: plain rg run directly (the baseline), the ripgrep engine (rg
// --json jailed through the broker, parsed and rendered) and the pure-Go
// engine, both through the grep tool (see benchGrepEngines).
func BenchmarkGrep(b *testing.B) {
	searchtest.RequireRipgrep(b)
	c := benchCall(b, true)
	benchGrepEngines(b, c, ".", "needle[A-Z]+", searchtest.Files/10)
}

// BenchmarkGrepOnGoSource times the grep tool on the Go source tree
// ($GOROOT/src) with the patterns the engines are held to against plain
// rg: an alternation of literals, and a pattern with no literal every
// match holds (see benchGrepEngines). Run it with
//
//	go test -run '^$' -bench GrepOnGoSource -benchtime 15x ./tool/
func BenchmarkGrepOnGoSource(b *testing.B) {
	searchtest.RequireRipgrep(b)
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Fatalf("go env GOROOT: %v", err)
	}
	src, err := filepath.EvalSymlinks(filepath.Join(strings.TrimSpace(string(out)), "src"))
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []struct{ name, pattern string }{
		{"alternation", `TODO|FIXME`},
		{"no_literal", `[^\x00-\x7F]{4}`},
	} {
		b.Run(p.name, func(b *testing.B) {
			c := benchCall(b, true)
			c.Base.ReadableRoots = []string{src}
			benchGrepEngines(b, c, src, p.pattern, -1)
		})
	}
}

// benchGrepEngines times, in each iteration and in turn, plain rg -n on
// path (the baseline, its output read), the ripgrep engine (rg --json
// jailed through c's broker, parsed, confirmed and rendered) and the
// pure-Go engine, both through the grep tool with max_results at
// MaxGrepResults, so the baseline shares the machine's state with what
// it is compared to, with a model's turn (untimed) after the jailed
// run. Both engines must find want matching lines (any count, the same
// for both, when want < 0). It reports each median (ms) and the
// engines' median ratios to plain rg (x-rg).
func benchGrepEngines(b *testing.B, c *Call, path, pattern string, want int) {
	b.Helper()
	raw, _ := json.Marshal(map[string]any{"pattern": pattern, "path": path, "max_results": MaxGrepResults})
	// The jail helper is a host program, not this test binary (see
	// package jailtest), so the ripgrep engine costs what a host pays.
	c.Broker = broker.New(broker.Options{HelperPath: jailtest.HostHelper(b)})
	defer c.Broker.(*broker.Broker).Close()
	goCall := *c
	goCall.Broker = nil
	r, err := NewRegistry(GrepTool())
	if err != nil {
		b.Fatal(err)
	}
	grep := func(c *Call, engine string) {
		o := r.Dispatch(context.Background(), c, "grep", raw)
		d, _ := o.Details.(GrepDetails)
		if o.IsError || d.Engine != engine || d.Matches == 0 || want >= 0 && d.Matches != want {
			b.Fatalf("engine %q matches %d: %s", d.Engine, d.Matches, o.Text[:min(len(o.Text), 300)])
		}
		if want < 0 {
			want = d.Matches
		}
	}
	grep(c, EngineRipgrep) // the one-time layer probe, untimed
	var plain, rg, goEngine []time.Duration
	timed := func(into *[]time.Duration, f func()) {
		t := time.Now()
		f()
		*into = append(*into, time.Since(t))
	}
	root := path
	if !filepath.IsAbs(root) {
		root = filepath.Join(c.Workspace, root)
	}
	b.ResetTimer()
	for b.Loop() {
		timed(&plain, func() {
			cmd := exec.Command("rg", "-n", pattern, root)
			if out, err := cmd.Output(); err != nil || len(out) == 0 {
				b.Fatalf("rg: %v", err)
			}
		})
		timed(&rg, func() { grep(c, EngineRipgrep) })
		// A model's turn: the broker starts the next jail helper once a
		// command settles, while the model thinks, so the next
		// measurement does not share the machine with that start.
		time.Sleep(modelTurn)
		timed(&goEngine, func() { grep(&goCall, EngineGo) })
	}
	b.StopTimer()
	mp, mr, mg := median(plain), median(rg), median(goEngine)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(mp), "plain-rg-ms")
	b.ReportMetric(ms(mr), "ripgrep-engine-ms")
	b.ReportMetric(ms(mg), "go-engine-ms")
	b.ReportMetric(float64(mr)/float64(mp), "ripgrep-engine-x-rg")
	b.ReportMetric(float64(mg)/float64(mp), "go-engine-x-rg")
	b.ReportMetric(0, "ns/op") // the three together mean nothing
}

// modelTurn stands for the time a model takes between two tool calls
// (seconds, in life) in benchmarks that run commands back to back.
const modelTurn = 20 * time.Millisecond

// median returns the middle of samples (which it sorts).
func median(samples []time.Duration) time.Duration {
	slices.Sort(samples)
	return samples[len(samples)/2]
}

// grep over a workspace with the pure-Go engine (a Call without a broker);
// with a broker and rg on PATH the same text comes from jailed ripgrep.
func ExampleGrepTool() {
	ws, _ := os.MkdirTemp("", "grep-example")
	defer os.RemoveAll(ws)
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n\n// TODO: wire the broker\nfunc main() {}\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("todo: nothing\n"), 0o644)

	reg, _ := NewRegistry(GrepTool())
	c := &Call{Workspace: ws}
	out := reg.Dispatch(context.Background(), c, "grep", json.RawMessage(`{"pattern":"todo","case_insensitive":true}`))
	fmt.Print(out.Text)
	fmt.Println(out.Details.(GrepDetails).Engine)
	// Output:
	// notes.txt:1:todo: nothing
	// src/main.go:3:// TODO: wire the broker
	// [2 matching lines in 2 files]
	// go
}

func TestGrepFallsBackToGoWhenRipgrepCannotBeJailed(t *testing.T) {
	searchtest.RequireRipgrep(t)
	c := grepCall(t, grepTree, true)
	c.Base.SystemRoots = nil // rg's own directory is not readable under the base
	o := runGrepArgs(t, c, map[string]any{"pattern": "needle"})
	d := grepDetails(t, o)
	if o.IsError || d.Engine != EngineGo || !strings.Contains(d.Fallback, "cannot be jailed") {
		t.Fatalf("IsError=%v engine=%q fallback=%q", o.IsError, d.Engine, d.Fallback)
	}
	if d.Matches != 5 {
		t.Fatalf("fallback search found %d matches, want 5", d.Matches)
	}
}
