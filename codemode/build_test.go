package codemode

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
	"github.com/google/go-cmp/cmp"
)

// run executes a test-authored binary and returns its stdout.
func run(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command(path).Output()
	if err != nil {
		t.Fatalf("running %s: %v", path, err)
	}
	return string(out)
}

func program(src string) *Program { return &Program{Source: []byte(src)} }

const helloSource = `package main

import (
	"cap/kv"
	"fmt"
)

func main() { fmt.Println("hello", kv.Twice(21)) }
`

func TestBuildRunsAProgram(t *testing.T) {
	t.Parallel()
	b := shared(t)
	bin, err := b.Build(context.Background(), program(helloSource+"// TestBuildRunsAProgram\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, bin.Path); got != "hello 42\n" {
		t.Fatalf("output %q, want %q", got, "hello 42\n")
	}
	if bin.Cached || len(bin.Key) != 64 || len(bin.Edits) != 0 {
		t.Fatalf("binary %+v: want a fresh build with a 64-hex key and no edits", bin)
	}
	if len(bin.Enforcement.Layers) == 0 {
		t.Fatalf("no enforcement report for the build stage")
	}
	if !bin.Enforcement.Applied(sandbox.LayerNamespaces) {
		t.Fatalf("the build jail has no namespaces: %s", bin.Enforcement)
	}
	t.Logf("build stage: %s", bin.Enforcement)
}

func TestBuildResubmissionIsCached(t *testing.T) {
	t.Parallel()
	b := shared(t)
	src := helloSource + "// TestBuildResubmissionIsCached\n"
	first, err := b.Build(context.Background(), program(src))
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Build(context.Background(), program(src))
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached || !again.Cached || again.Key != first.Key || again.Path != first.Path {
		t.Fatalf("first %+v, again %+v: want the second kept under the same key", first, again)
	}
	// Another builder (another process, as far as the cache can tell)
	// finds it too.
	other := sibling(t, BuilderOptions{})
	third, err := other.Build(context.Background(), program(src))
	if err != nil {
		t.Fatal(err)
	}
	if !third.Cached || third.Key != first.Key {
		t.Fatalf("a sibling builder rebuilt: %+v", third)
	}
	changed, err := b.Build(context.Background(), program(src+"// changed\n"))
	if err != nil {
		t.Fatal(err)
	}
	if changed.Cached || changed.Key == first.Key {
		t.Fatalf("a changed source was served from the cache: %+v", changed)
	}
}

// directCompile runs the toolchain's compiler outside any jail on src
// with the shared archives' compile importcfg, for a reference output.
func directCompile(t *testing.T, b *builder, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, programFileName), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(b.tc.compileBinary(), "-complete", "-importcfg", b.arch.compileCfg, "-p", "main", "-pack", "-trimpath="+dir, "-o", "main.a", "-e", programFileName)
	cmd.Dir = dir
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the reference compile succeeded")
	}
	return string(out)
}

func TestBuildErrorQuotesTheCompilerVerbatim(t *testing.T) {
	t.Parallel()
	b := shared(t)
	src := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(undefinedA)\n\tvar s string = 1\n\tundefinedB()\n}\n"
	_, err := b.Build(context.Background(), program(src))
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("error %v, want a *BuildError", err)
	}
	if be.Code() != CodeBuildRejected {
		t.Fatalf("code %q", be.Code())
	}
	if diff := cmp.Diff(directCompile(t, b, src), be.Diagnostics); diff != "" {
		t.Fatalf("diagnostics differ from the compiler's (-compiler +build):\n%s", diff)
	}
	for _, want := range []string{"main.go:6:14: undefined: undefinedA", "main.go:8:2: undefined: undefinedB"} {
		if !strings.Contains(be.Diagnostics, want) {
			t.Fatalf("diagnostics lack %q (every error, -e):\n%s", want, be.Diagnostics)
		}
	}
	if len(be.Enforcement.Layers) == 0 {
		t.Fatalf("a rejected build carries no enforcement report")
	}
}

func TestBuildDiagnosticsAreBounded(t *testing.T) {
	t.Parallel()
	b := shared(t)
	var src strings.Builder
	src.WriteString("package main\n\nfunc main() {\n")
	for i := range 4000 {
		fmt.Fprintf(&src, "\tundefinedIdentifierNumber%d()\n", i)
	}
	src.WriteString("}\n")
	_, err := b.Build(context.Background(), program(src.String()))
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("error %v, want a *BuildError", err)
	}
	if len(be.Diagnostics) > maxDiagnosticBytes+200 || !strings.Contains(be.Diagnostics, "more bytes of diagnostics cut") {
		t.Fatalf("diagnostics of %d bytes, want at most %d and a cut note", len(be.Diagnostics), maxDiagnosticBytes)
	}
}

// TestBuildRefusesPackagesOffTheAllowlist: the compile importcfg is a
// hard allowlist even with no vetter in front of it: called directly the
// compiler would admit unsafe and an internal package.
func TestBuildRefusesPackagesOffTheAllowlist(t *testing.T) {
	t.Parallel()
	b := shared(t)
	tests := []struct {
		name, imp, use string
		refused        bool
	}{
		{"unsafe", "unsafe", "_ = unsafe.Sizeof(0)", true},
		{"internal prelude", "cap/internal/x", "_ = x.Double(1)", true},
		{"os", "os", "_ = os.Getpid()", true},
		{"std off the list", "sort", "sort.Ints(nil)", true},
		{"module root", "cap", "", true},
		{"cgo", "C", "", true},
		// Controls: the same shape builds for listed packages.
		{"prelude package", "cap/kv", "_ = kv.Twice(1)", false},
		{"std on the list", "strings", "_ = strings.ToUpper(\"a\")", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := fmt.Sprintf("package main\n\nimport %q\n\nfunc main() { %s }\n", tt.imp, tt.use)
			if tt.use == "" {
				src = fmt.Sprintf("package main\n\nimport _ %q\n\nfunc main() {}\n", tt.imp)
			}
			_, err := b.Build(context.Background(), program(src))
			var be *BuildError
			switch {
			case !tt.refused && err != nil:
				t.Fatalf("a listed package was refused: %v", err)
			case tt.refused && !errors.As(err, &be):
				t.Fatalf("importing %s: error %v, want a *BuildError", tt.imp, err)
			case tt.refused && !strings.Contains(be.Diagnostics, "could not import "+tt.imp):
				t.Fatalf("importing %s: diagnostics %q", tt.imp, be.Diagnostics)
			}
		})
	}
}

func TestBuildBinaryIsStatic(t *testing.T) {
	t.Parallel()
	b := shared(t)
	bin, err := b.Build(context.Background(), program(helloSource+"// TestBuildBinaryIsStatic\n"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("the built binary has %s", p.Type)
		}
	}
	if f.Type != elf.ET_EXEC {
		t.Fatalf("ELF type %s", f.Type)
	}
	if reason := checkStatic(bin.Path); reason != "" {
		t.Fatalf("checkStatic refused the built binary: %s", reason)
	}
}

// TestCheckStaticRefuses: the checker a binary passes before it is kept
// refuses a dynamic executable, a link and a non-ELF file.
func TestCheckStaticRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dynamic := dynamicExecutable(t)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dynamic, link); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "text")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct{ path, want string }{
		"dynamic":     {dynamic, "PT_INTERP"},
		"symlink":     {link, "no linked program"},
		"not ELF":     {text, "not an ELF file"},
		"missing":     {filepath.Join(dir, "none"), "no linked program"},
		"a directory": {dir, "not a regular file"},
	} {
		if got := checkStatic(tt.path); !strings.Contains(got, tt.want) {
			t.Errorf("%s: checkStatic(%s) = %q, want it to say %q", name, tt.path, got, tt.want)
		}
	}
}

// dynamicExecutable returns a dynamically linked executable of this
// host (the shell, checked to have an interpreter).
func dynamicExecutable(t *testing.T) string {
	t.Helper()
	p, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return p
		}
	}
	t.Fatalf("%s is static on this host; the control needs a dynamic executable", p)
	return ""
}

func TestBuildRemovesItsRoot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		src    string
		cancel bool
		check  func(error) bool
	}{
		{"success", helloSource + "// root success\n", false, func(err error) bool { return err == nil }},
		{"failure", "package main\n\nfunc main() { undefined() }\n", false, func(err error) bool {
			return errors.As(err, new(*BuildError))
		}},
		{"cancelled", helloSource + "// root cancelled\n", true, func(err error) bool {
			return errors.Is(err, context.Canceled) || tool.CodeOf(err) == tool.Code(sandbox.DenialStepAborted)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var roots []string
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b := sibling(t, BuilderOptions{})
			b.onRoot = func(dir string) {
				if _, err := os.Stat(dir); err != nil {
					t.Errorf("the build root %s does not exist while building: %v", dir, err)
				}
				roots = append(roots, dir)
				if tt.cancel {
					cancel()
				}
			}
			_, err := b.Build(ctx, program(tt.src))
			if !tt.check(err) {
				t.Fatalf("Build: %v", err)
			}
			if len(roots) != 1 {
				t.Fatalf("%d build roots, want 1", len(roots))
			}
			for _, p := range []string{roots[0], roots[0] + scratchLockExt} {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s left behind (%v)", p, err)
				}
			}
		})
	}
}

func TestBuildWithoutBrokerIsRefused(t *testing.T) {
	t.Parallel()
	_, err := newBuilder(BuilderOptions{CacheDir: t.TempDir()})
	var be *BuilderError
	if !errors.As(err, &be) || be.Code != CodeBuildUnavailable {
		t.Fatalf("error %v, want a BuilderError with code %s", err, CodeBuildUnavailable)
	}
}

// TestBuildEvictsOldBinaries: keeping a binary past MaxCacheBytes evicts
// the least recently used kept binary, never the one just built.
func TestBuildEvictsOldBinaries(t *testing.T) {
	t.Parallel()
	b := sibling(t, BuilderOptions{MaxCacheBytes: 1})
	old := fakeKept(t, b.cache, "0000-evict-me", 1<<10, 2*evictionGrace)
	bin, err := b.Build(context.Background(), program(helloSource+"// TestBuildEvictsOldBinaries\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old kept binary survived eviction (%v)", err)
	}
	if _, err := os.Stat(bin.Path); err != nil {
		t.Fatalf("the binary just built was evicted: %v", err)
	}
}

// TestRepairedBuilds: a program whose only errors are unused imports,
// variables or labels is repaired, built and runs; the edits are listed
// and come back with the kept binary.
func TestRepairedBuilds(t *testing.T) {
	t.Parallel()
	b := shared(t)
	tests := []struct {
		name  string
		src   string
		edits []Repair
	}{
		{"unused import", "package main\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\nfunc main() { fmt.Println(\"ok\") }\n",
			[]Repair{{5, repairDropImport, "strings"}}},
		{"single unused import", "package main\n\nimport \"fmt\"\nimport \"strings\"\n\nfunc main() { fmt.Println(\"ok\") }\n",
			[]Repair{{4, repairDropImport, "strings"}}},
		{"aliased and dot imports", "package main\n\nimport (\n\t\"fmt\"\n\tst \"strings\"\n\t. \"errors\"\n)\n\nfunc main() { fmt.Println(\"ok\") }\n",
			[]Repair{{5, repairDropImport, "strings"}, {6, repairDropImport, "errors"}}},
		{"declared variables", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tx := 1\n\tvar y, z int\n\tfmt.Println(\"ok\")\n}\n",
			[]Repair{{6, repairBlankUse, "x"}, {7, repairBlankUse, "y"}, {7, repairBlankUse, "z"}}},
		{"if, for and range scopes", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tif a := 1; true {\n\t}\n\tfor i := 0; false; {\n\t}\n\tfor k, v := range []int{1} {\n\t\t_ = k\n\t}\n\tfmt.Println(\"ok\")\n}\n",
			[]Repair{{6, repairBlankUse, "a"}, {8, repairBlankUse, "i"}, {10, repairBlankUse, "v"}}},
		{"type switch and select", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tvar e any = 1\n\tswitch q := e.(type) {\n\tcase int:\n\tdefault:\n\t}\n\tch := make(chan int, 1)\n\tch <- 1\n\tselect {\n\tcase r := <-ch:\n\t}\n\tfmt.Println(\"ok\")\n}\n",
			[]Repair{{7, repairBlankUse, "q"}, {14, repairBlankUse, "r"}}},
		{"closure", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tf := func() {\n\t\tw := 2\n\t}\n\tf()\n\tfmt.Println(\"ok\")\n}\n",
			[]Repair{{7, repairBlankUse, "w"}}},
		{"unused label", "package main\n\nimport \"fmt\"\n\nfunc main() {\nL:\n\tfor {\n\t\tbreak\n\t}\n\tfmt.Println(\"ok\")\n}\n",
			[]Repair{{6, repairDropLabel, "L"}}},
		{"every kind at once", "package main\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\nfunc main() {\n\tn := 3\nOuter:\n\tfor {\n\t\tbreak\n\t}\n\tfmt.Println(\"ok\")\n}\n",
			[]Repair{{5, repairDropImport, "strings"}, {9, repairBlankUse, "n"}, {10, repairDropLabel, "Outer"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bin, err := b.Build(context.Background(), program(tt.src))
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if diff := cmp.Diff(tt.edits, bin.Edits); diff != "" {
				t.Fatalf("edits (-want +got):\n%s", diff)
			}
			if got := run(t, bin.Path); got != "ok\n" {
				t.Fatalf("output %q", got)
			}
			again, err := b.Build(context.Background(), program(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if !again.Cached || !cmp.Equal(again.Edits, tt.edits) {
				t.Fatalf("resubmitted: cached %v, edits %v", again.Cached, again.Edits)
			}
		})
	}
}

// TestRepairNotAttempted: one error that is not an unused entity means no
// repair at all (all or nothing), and the diagnostics are the original.
func TestRepairNotAttempted(t *testing.T) {
	t.Parallel()
	b := shared(t)
	src := "package main\n\nimport \"strings\"\n\nfunc main() {\n\tx := 1\n\tundefined()\n}\n"
	_, err := b.Build(context.Background(), program(src))
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("error %v, want a *BuildError", err)
	}
	for _, want := range []string{`"strings" imported and not used`, "declared and not used: x", "undefined: undefined"} {
		if !strings.Contains(be.Diagnostics, want) {
			t.Fatalf("diagnostics lack %q:\n%s", want, be.Diagnostics)
		}
	}
}

// TestRepairFailedRebuildShowsOriginalErrors: the type checker stops
// before the back end, so dropping the unused import reveals a back-end
// error; the model sees the errors of the program it sent.
func TestRepairFailedRebuildShowsOriginalErrors(t *testing.T) {
	t.Parallel()
	b := shared(t)
	src := "package main\n\nimport \"strings\"\n\nvar g [1 << 40]byte\n\nfunc main() { g[0] = 1 }\n"
	_, err := b.Build(context.Background(), program(src))
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("error %v, want a *BuildError", err)
	}
	if want := "main.go:3:8: \"strings\" imported and not used\n"; be.Diagnostics != want {
		t.Fatalf("diagnostics %q, want the original %q", be.Diagnostics, want)
	}
	// Control: the repaired source does fail on its own, with another
	// error.
	fixed, _, ok := repairUnused([]byte(src), be.Diagnostics)
	if !ok {
		t.Fatal("the diagnostics were not repairable")
	}
	_, err = b.Build(context.Background(), program(string(fixed)))
	if !errors.As(err, &be) || !strings.Contains(be.Diagnostics, "symbol too large") {
		t.Fatalf("the repaired source: %v", err)
	}
}

// TestBuildWaitsForTheWarmUp: a build on a builder whose warm-up is
// still running waits for it and says so.
func TestBuildWaitsForTheWarmUp(t *testing.T) {
	t.Parallel()
	var progress bytes.Buffer
	b := sibling(t, BuilderOptions{Progress: func(s string) { progress.WriteString(s + "\n") }})
	bin, err := b.Build(context.Background(), program(helloSource+"// TestBuildWaitsForTheWarmUp\n"))
	if err != nil {
		t.Fatal(err)
	}
	if bin.Waited <= 0 {
		t.Fatalf("a build that started the warm-up reports no wait")
	}
	next, err := b.Build(context.Background(), program(helloSource+"// TestBuildWaitsForTheWarmUp 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if next.Waited != 0 {
		t.Fatalf("a build after the warm-up reports a wait of %s", next.Waited)
	}
}

// TestBuildersSharingABrokerBuildConcurrently: every builder admits its
// builds in a ledger step of its own, so builders sharing a broker at
// full concurrency are never refused by each other.
func TestBuildersSharingABrokerBuildConcurrently(t *testing.T) {
	t.Parallel()
	builders := []*builder{sibling(t, BuilderOptions{}), sibling(t, BuilderOptions{})}
	const perBuilder = maxConcurrentBuilds + 1
	errs := make(chan error, len(builders)*perBuilder)
	for i, b := range builders {
		for j := range perBuilder {
			go func() {
				_, err := b.Build(context.Background(), program(fmt.Sprintf("%s// concurrent %d %d\n", helloSource, i, j)))
				errs <- err
			}()
		}
	}
	for range len(builders) * perBuilder {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
