package codemode

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The audit rule, enforced against the host toolchain (the one that runs
// these tests, found on PATH):
//
//  1. Closure: nothing an admitted package transitively imports is one of
//     closureForbidden (packages that exec, dial, load code, or read
//     paths a caller names).
//  2. Public closure: every non-internal package in that closure is
//     admitted, or is one of implementationOnly (reached only through an
//     admitted package's own code, which rule 3 checks).
//  3. OS references: no package in the closure outside the OS layer
//     names anything of the OS layer (os, syscall, internal/poll,
//     internal/syscall/...) except the standard streams and the
//     per-package fixed reads in osExceptions, each with its reason. So
//     no admitted package exports, or calls on a program's behalf, an
//     os.Open-like function taking a path the program picks.

// closureForbidden are packages no admitted package may reach at all.
var closureForbidden = []string{
	"os/exec", "os/signal", "os/user", "net", "net/http", "plugin", "crypto/tls",
	"crypto/x509", "io/ioutil", "path/filepath", "runtime/cgo", "log/syslog",
	"go/build", "go/importer", "debug/elf", "embed", "testing",
}

// implementationOnly are public packages an admitted package may import
// although a program may not.
var implementationOnly = []string{"unsafe", "runtime", "reflect", "syscall", "os", "crypto/fips140"}

// stdStreams are the OS-layer names any package may use: the streams a
// program already holds.
var stdStreams = []string{"os.Stdin", "os.Stdout", "os.Stderr"}

// osExceptions are the audited fixed-resource uses of the OS layer,
// package by package.
var osExceptions = map[string]struct {
	refs   []string
	reason string
}{
	"time": {
		refs: []string{"syscall.Open", "syscall.Read", "syscall.Seek", "syscall.Close", "syscall.O_RDONLY",
			"syscall.ENOENT", "syscall.Getenv", "syscall.Getpid", "syscall.Kill", "syscall.SIGCHLD"},
		reason: "zoneinfo files under fixed directories for a name LoadLocation validated (no .., not absolute), " +
			"TZ/ZONEINFO from the empty run-jail environment (zoneinfo.zip under runtime.GOROOT, empty with -trimpath); Kill(Getpid) only in an unexported test hook",
	},
	"time/tzdata":                 {refs: []string{"syscall.ENOENT"}, reason: "an error value"},
	"crypto/internal/sysrand":     {refs: []string{"os.File", "os.Open", "internal/syscall/unix.GetRandom", "syscall.EINTR", "syscall.ENOSYS"}, reason: "getrandom, falling back to the fixed path /dev/urandom"},
	"vendor/golang.org/x/sys/cpu": {refs: []string{"os.Getenv", "os.ReadFile"}, reason: "GODEBUG and the fixed path /proc/self/auxv for CPU features"},
}

// auditedPackage is what `go list -json` says of one package.
type auditedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

// goList runs the host's go list and decodes its JSON stream.
func goList(t *testing.T, args ...string) []auditedPackage {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the audit needs the go command on PATH: %v", err)
	}
	cmd := exec.Command(goTool, append([]string{"list", "-json=ImportPath,Dir,GoFiles,Imports"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []auditedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p auditedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
}

// isOSLayer reports whether path is the OS layer: the packages that
// make system calls on a caller's behalf.
func isOSLayer(path string) bool {
	return path == "os" || path == "syscall" || path == "internal/poll" || strings.HasPrefix(path, "internal/syscall/")
}

// isBelowAudit reports whether path is the OS layer or the runtime, whose
// own references to the OS layer are its implementation.
func isBelowAudit(path string) bool {
	return isOSLayer(path) || path == "runtime" || strings.HasPrefix(path, "internal/runtime/")
}

// auditIsInternal reports whether path is importable only inside the std tree.
func auditIsInternal(path string) bool {
	return strings.HasPrefix(path, "vendor/") || path == "internal" || strings.HasPrefix(path, "internal/") ||
		strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}

// auditFindings applies the audit rule to the closure of roots and
// returns every finding, empty when the roots pass.
func auditFindings(t *testing.T, roots []string) []string {
	t.Helper()
	admitted := StdPackages()
	var findings []string
	for _, p := range goList(t, append([]string{"-deps"}, roots...)...) {
		if slices.Contains(closureForbidden, p.ImportPath) {
			findings = append(findings, "closure reaches "+p.ImportPath)
		}
		if !auditIsInternal(p.ImportPath) && !slices.Contains(admitted, p.ImportPath) && !slices.Contains(implementationOnly, p.ImportPath) && !slices.Contains(roots, p.ImportPath) {
			findings = append(findings, "closure reaches unaudited public package "+p.ImportPath)
		}
		if isBelowAudit(p.ImportPath) || !slices.ContainsFunc(p.Imports, isOSLayer) {
			continue
		}
		allowed := append(slices.Clone(stdStreams), osExceptions[p.ImportPath].refs...)
		for _, ref := range osReferences(t, p) {
			if !slices.Contains(allowed, ref) {
				findings = append(findings, p.ImportPath+" names "+ref)
			}
		}
	}
	return findings
}

// osReferences lists every OS-layer name p's Go files select, as
// "importpath.Name", resolved through each file's import names.
func osReferences(t *testing.T, p auditedPackage) []string {
	t.Helper()
	refs := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		local := map[string]string{}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if !isOSLayer(path) {
				continue
			}
			n := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				n = im.Name.Name
			}
			local[n] = path
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := s.X.(*ast.Ident); ok {
					if path, ok := local[id.Name]; ok {
						refs[path+"."+s.Sel.Name] = true
					}
				}
			}
			return true
		})
	}
	out := make([]string, 0, len(refs))
	for r := range refs {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// TestStdPackagesPassAudit holds every admitted package to the audit rule.
func TestStdPackagesPassAudit(t *testing.T) {
	t.Parallel()
	for _, p := range StdPackages() {
		if slices.Contains(implementationOnly, p) || isBelowAudit(p) {
			t.Errorf("admitted %s is below the audit: its own references are not checked", p)
		}
	}
	if f := auditFindings(t, StdPackages()); len(f) > 0 {
		t.Fatalf("the allowlist fails the audit:\n%s", strings.Join(f, "\n"))
	}
}

// TestAuditCatchesEffectfulPackages is the control: the same audit, run
// on packages the issue measured as effectful, finds something in each.
func TestAuditCatchesEffectfulPackages(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"io/ioutil", "path/filepath", "text/template", "html/template", "os/user", "os/signal", "os/exec",
		"net", "mime", "crypto/x509", "crypto/tls", "debug/elf", "archive/zip", "go/build", "go/parser", "log", "plugin", "flag"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			if f := auditFindings(t, []string{p}); len(f) == 0 {
				t.Fatalf("the audit finds nothing in %s", p)
			}
		})
	}
}

// TestStdClassification holds that every package of the host's standard
// library is admitted or denied, never both, and that every admitted
// package exists: a new toolchain's new package fails here until someone
// audits it.
func TestStdClassification(t *testing.T) {
	t.Parallel()
	std := map[string]bool{}
	for _, p := range goList(t, "std") {
		std[p.ImportPath] = true
	}
	admitted := StdPackages()
	for _, a := range admitted {
		if !std[a] {
			t.Errorf("admitted %s is not a standard package of the host toolchain", a)
		}
		if reason, ok := denialOf(a); ok {
			t.Errorf("admitted %s is also denied (%s)", a, reason)
		}
	}
	for p := range std {
		_, denied := denialOf(p)
		if !denied && !slices.Contains(admitted, p) {
			t.Errorf("standard package %s is neither admitted nor denied: audit it", p)
		}
	}
}

// TestBindingDenials holds the deny list: each named package, and
// for a family every standard package in it, is denied and not admitted;
// net/url, net/netip and time/tzdata are admitted.
func TestBindingDenials(t *testing.T) {
	t.Parallel()
	exact := []string{"io/ioutil", "path/filepath", "text/template", "html/template", "mime", "crypto/x509",
		"log", "embed", "unsafe", "C", "reflect", "syscall", "net", "plugin", "testing", "os",
		"cap/internal/wire", "cap/internal/x/y"}
	families := []string{"debug/", "archive/", "go/", "os/", "runtime/", "log/", "testing/", "net/", "mime/"}
	spared := []string{"net/url", "net/netip", "mime/quotedprintable"}
	admitted := StdPackages()
	check := func(p string) {
		if _, ok := denialOf(p); !ok {
			t.Errorf("%s is not denied", p)
		}
		if slices.Contains(admitted, p) {
			t.Errorf("%s is admitted", p)
		}
	}
	for _, p := range exact {
		check(p)
	}
	families = append(families, "runtime", "go/")
	for _, p := range goList(t, "std") {
		for _, fam := range families {
			if strings.HasPrefix(p.ImportPath, fam) && !slices.Contains(spared, p.ImportPath) {
				check(p.ImportPath)
			}
		}
	}
	for _, p := range append(spared, "time/tzdata", "time") {
		if !slices.Contains(admitted, p) {
			t.Errorf("%s is not admitted", p)
		}
	}
}

// TestStdPackagesShape: sorted, unique, every entry with a reason, and a
// fresh slice per call.
func TestStdPackagesShape(t *testing.T) {
	t.Parallel()
	got := StdPackages()
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatalf("StdPackages is not sorted and unique: %v", got)
	}
	for _, a := range stdAudit() {
		if strings.TrimSpace(a.reason) == "" || strings.Contains(a.reason, "\n") {
			t.Errorf("%s has no one-line reason", a.path)
		}
	}
	for _, d := range denials() {
		if strings.TrimSpace(d.reason) == "" {
			t.Errorf("denial %s has no reason", d.pattern)
		}
	}
	got[0] = "os"
	if StdPackages()[0] == "os" {
		t.Fatal("StdPackages shares its backing array")
	}
}

// TestSeamAllowlist: std plus the seam's packages, sorted, deduplicated,
// fresh.
func TestSeamAllowlist(t *testing.T) {
	t.Parallel()
	ws := WorkspaceSeam()
	if ws.Name != "workspace" {
		t.Fatalf("WorkspaceSeam().Name = %q", ws.Name)
	}
	wantCaps := []string{"cap/execution", "cap/fs", "cap/job", "cap/kv", "cap/lsp", "cap/notes", "cap/proc", "cap/report", "cap/schedule", "cap/search"}
	if got := slices.Sorted(slices.Values(ws.Packages)); !slices.Equal(got, wantCaps) {
		t.Fatalf("WorkspaceSeam().Packages = %v, want %v", got, wantCaps)
	}
	orch := OrchestrationSeam()
	if got := slices.Sorted(slices.Values(orch.Packages)); orch.Name != "orchestration" || !slices.Equal(got, []string{"cap/execution", "cap/notes", "cap/report", "cap/strand"}) {
		t.Fatalf("OrchestrationSeam() = %v", orch)
	}
	al := Seam{Name: "x", Packages: []string{"cap/fs", "cap/fs", "bytes"}}.Allowlist()
	if !slices.IsSorted(al) || len(al) != len(StdPackages())+1 || !slices.Contains(al, "cap/fs") {
		t.Fatalf("Allowlist = %v", al)
	}
	ws.Packages[0] = "os"
	if WorkspaceSeam().Packages[0] == "os" {
		t.Fatal("WorkspaceSeam shares its backing array")
	}
	for _, p := range WorkspaceSeam().Packages {
		if _, denied := denialOf(p); denied {
			t.Errorf("the workspace seam offers denied %s", p)
		}
	}
}
