package codemode

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/sandbox"
)

// buildWithPrelude lays the embedded prelude out as the module "cap" in
// a fresh temporary directory (the go.mod written there, never in the
// repository), adds src as the command cap/cmd/probe, builds it with the
// host's go command in an environment of its own and returns the
// binary's path.
func buildWithPrelude(t testing.TB, src string) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(embeddedPrelude(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(embeddedPrelude(), p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module cap\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "cmd", "probe"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cmd", "probe", "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := filepath.Join(dir, "probe")
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", bin, "./cmd/probe")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building a program on the prelude: %v\n%s", err, out)
	}
	return bin
}

// TestPreludeHasNoGoMod: the tree holds no module file anywhere, on disk
// or embedded (embed refuses a nested module; a go.mod would also make
// the go tool treat the tree as a module of its own).
func TestPreludeHasNoGoMod(t *testing.T) {
	t.Parallel()
	for name, tree := range map[string]fs.FS{"embedded": embeddedPrelude(), "on disk": os.DirFS(preludeRoot)} {
		n := 0
		fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			n++
			switch path.Base(p) {
			case "go.mod", "go.sum", "go.work":
				t.Errorf("%s prelude holds %s", name, p)
			}
			return nil
		})
		if n < 10 {
			t.Fatalf("%s prelude walk saw %d entries: the walk is broken", name, n)
		}
	}
}

// TestPreludePackages: exactly the cap packages, sorted, internal ones
// included, and a fresh slice each call.
func TestPreludePackages(t *testing.T) {
	t.Parallel()
	want := []string{"cap/execution", "cap/fs", "cap/internal/client", "cap/internal/wire", "cap/job", "cap/kv", "cap/lsp", "cap/notes", "cap/proc", "cap/report", "cap/schedule", "cap/search", "cap/strand"}
	got := embeddedPreludePackages()
	if !slices.Equal(got, want) {
		t.Fatalf("embeddedPreludePackages() = %q, want %q", got, want)
	}
	got[0] = "mutated"
	if embeddedPreludePackages()[0] != want[0] {
		t.Fatal("embeddedPreludePackages returned its own slice: a caller's write changed it")
	}
}

// parsePreludeDir parses the Go files of the embedded prelude's dir.
func parsePreludeDir(t *testing.T, fset *token.FileSet, dir string, mode parser.Mode) []*ast.File {
	t.Helper()
	entries, err := fs.ReadDir(embeddedPrelude(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		src, err := fs.ReadFile(embeddedPrelude(), dir+"/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, dir+"/"+e.Name(), src, mode)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// TestPreludeDocumented: every package has a package doc comment, and
// every exported constant, variable, type, function and method of the
// program-facing packages has one (a model reads them).
func TestPreludeDocumented(t *testing.T) {
	t.Parallel()
	for _, imp := range embeddedPreludePackages() {
		dir := strings.TrimPrefix(imp, preludeModule+"/")
		fset := token.NewFileSet()
		files := parsePreludeDir(t, fset, dir, parser.ParseComments)
		p, err := doc.NewFromFiles(fset, files, imp)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s has no package doc comment", imp)
		}
		var undocumented []string
		check := func(name, d string) {
			if token.IsExported(name) && strings.TrimSpace(d) == "" {
				undocumented = append(undocumented, name)
			}
		}
		for _, v := range append(p.Consts, p.Vars...) {
			check(v.Names[0], v.Doc)
		}
		for _, f := range p.Funcs {
			check(f.Name, f.Doc)
		}
		for _, ty := range p.Types {
			check(ty.Name, ty.Doc)
			for _, f := range append(ty.Funcs, ty.Methods...) {
				check(ty.Name+"."+f.Name, f.Doc)
			}
			for _, v := range append(ty.Consts, ty.Vars...) {
				check(v.Names[0], v.Doc)
			}
		}
		if len(undocumented) > 0 {
			t.Errorf("%s: exported without a doc comment: %s", imp, strings.Join(undocumented, ", "))
		}
	}
}

// preludeUnsafeFile is the one prelude file allowed to import unsafe.
const preludeUnsafeFile = "internal/client/ring.go"

// TestPreludeImports: the prelude imports only the standard library and
// itself, never reflect, cgo or a third-party module (programs link it;
// it must build from the toolchain alone), and unsafe only in
// preludeUnsafeFile.
func TestPreludeImports(t *testing.T) {
	t.Parallel()
	n := 0
	fs.WalkDir(embeddedPrelude(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		src, _ := fs.ReadFile(embeddedPrelude(), p)
		f, err := parser.ParseFile(token.NewFileSet(), p, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			n++
			ip, _ := strconv.Unquote(im.Path.Value)
			first, _, _ := strings.Cut(ip, "/")
			switch {
			case ip == "unsafe" && p == preludeUnsafeFile:
				// The one use: atomic access to the shared ring's control
				// words, which live in memory the host mapped.
			case ip == "reflect" || ip == "unsafe" || ip == "C":
				t.Errorf("%s imports %s", p, ip)
			case first == preludeModule:
			case strings.Contains(first, "."):
				t.Errorf("%s imports the third-party %s", p, ip)
			}
		}
		return nil
	})
	if n < 10 {
		t.Fatalf("saw %d imports: the scan is broken", n)
	}
}

// TestPreludeDigest: stable across calls, equal to the digest of the
// tree on disk, and changed by any change to a file's path or content.
func TestPreludeDigest(t *testing.T) {
	t.Parallel()
	_, d := preludeIndex()
	if _, again := preludeIndex(); len(d) != 64 || d != again {
		t.Fatalf("the prelude's digest is %q, then %q", d, again)
	}
	if _, disk := indexTree(os.DirFS(preludeRoot)); disk != d {
		t.Fatalf("digest of the tree on disk %s != embedded %s", disk, d)
	}
	base := fstest.MapFS{"fs/fs.go": {Data: []byte("package fs\n")}, "kv/kv.go": {Data: []byte("package kv\n")}}
	_, want := indexTree(base)
	variants := map[string]fstest.MapFS{
		"content": {"fs/fs.go": {Data: []byte("package fs \n")}, "kv/kv.go": {Data: []byte("package kv\n")}},
		"path":    {"fs/fs2.go": {Data: []byte("package fs\n")}, "kv/kv.go": {Data: []byte("package kv\n")}},
		"added":   {"fs/fs.go": {Data: []byte("package fs\n")}, "kv/kv.go": {Data: []byte("package kv\n")}, "x.txt": {}},
		"shifted": {"fs/fs.go": {Data: []byte("package fs\n" + "package kv\n")}, "kv/kv.go": {Data: []byte("")}},
	}
	for name, v := range variants {
		if _, got := indexTree(v); got == want {
			t.Errorf("%s change left the digest %s", name, got)
		}
	}
	if _, again := indexTree(base); again != want {
		t.Fatal("indexTree is not deterministic")
	}
}

// preludeConst returns the literal the prelude's file gives the
// constant name, "" when it has none.
func preludeConst(t *testing.T, file, name string) string {
	t.Helper()
	src, err := fs.ReadFile(embeddedPrelude(), file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := ""
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == name && len(vs.Values) == 1 {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
				found = lit.Value
			}
		}
		return true
	})
	return found
}

// TestChannelFD: the prelude's client opens the fd codemode hands the
// program: cap/internal/client.ChannelFD must be sandbox.ExtraFileFD.
func TestChannelFD(t *testing.T) {
	t.Parallel()
	if found := preludeConst(t, "internal/client/client.go", "ChannelFD"); found != strconv.Itoa(sandbox.ExtraFileFD) {
		t.Fatalf("cap/internal/client.ChannelFD = %q, want broker.ExtraFileFD (%d)", found, sandbox.ExtraFileFD)
	}
}

// TestPreludeRingLayout: the prelude's client finds each control word of
// the shared ring where the host keeps it, and rings with the host's
// doorbell byte.
func TestPreludeRingLayout(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]int{
		"upHead": transport.RingUpHead, "upTail": transport.RingUpTail, "hostAsleep": transport.RingHostAsleep,
		"downHead": transport.RingDownHead, "downTail": transport.RingDownTail, "progAsleep": transport.RingProgAsleep,
		"doorbell": transport.RingDoorbell, "spinPollsPerYield": transport.SpinPollsPerYield,
	} {
		if got := preludeConst(t, "internal/client/ring.go", name); got != strconv.Itoa(want) {
			t.Errorf("cap/internal/client.%s = %q, want %d", name, got, want)
		}
	}
}

// TestRecipesBuild: every recipe program in testdata/programs says what
// it does on its first line and builds against the prelude as it is, so
// the recipes cannot drift from the API they show.
func TestRecipesBuild(t *testing.T) {
	t.Parallel()
	recipes, err := filepath.Glob("testdata/programs/*.go")
	if err != nil || len(recipes) < 3 {
		t.Fatalf("recipes %v, %v: want at least three", recipes, err)
	}
	for _, r := range recipes {
		src, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(string(src), "\n"); !strings.HasPrefix(first, "// ") || len(first) < 20 {
			t.Errorf("%s: first line %q does not say what the program does", r, first)
		}
		buildWithPrelude(t, string(src))
	}
}
