package codemode

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// bypassCase is one construct Vet must refuse, with exactly the rules the
// refusal names (sorted, duplicates kept: one per violation).
type bypassCase struct {
	name  string
	src   string
	rules []string
}

// prog wraps body (top-level declarations) in a package main with a valid
// func main and the given import lines.
func prog(imports, body string) string {
	return "package main\n\n" + imports + "\n\nfunc main() {}\n\n" + body + "\n"
}

// bypassCases are the constructs the issue names, and the ones found
// while writing the vetter.
var bypassCases = []bypassCase{
	// Directives the compiler honours.
	{"go_linkname", prog(`import "fmt"`, "//go:linkname f runtime.nanotime\nfunc f() int64\n\nvar _ = fmt.Sprint"),
		[]string{ruleDirectiveComment, ruleFuncWithoutBody}},
	{"go_linkname_pull_with_body", prog("", "//go:linkname g os.Getenv\nfunc g(string) string { return \"\" }"),
		[]string{ruleDirectiveComment}},
	{"cgo_import_dynamic_no_imports", "package main\n\n//go:cgo_import_dynamic _ _ \"/x.so\"\n\nfunc main() {}\n",
		[]string{ruleDirectiveComment}},
	{"cgo_ldflag", "//go:cgo_ldflag \"-L/tmp\"\npackage main\n\nfunc main() {}\n", []string{ruleDirectiveComment}},
	{"go_embed", prog("", "//go:embed secret.txt\nvar s string"), []string{ruleDirectiveComment}},
	{"go_noescape", prog("", "//go:noescape\nfunc f(p *int)"), []string{ruleDirectiveComment, ruleFuncWithoutBody}},
	{"go_nosplit", prog("", "//go:nosplit\nfunc f() {}"), []string{ruleDirectiveComment}},
	{"go_generate", prog("", "//go:generate sh -c evil"), []string{ruleDirectiveComment}},
	{"go_directive_block_comment", prog("", "/*go:linkname f runtime.f*/"), []string{ruleDirectiveComment}},
	{"go_directive_trailing", prog("", "var x = 1 //go:noinline"), []string{ruleDirectiveComment}},
	{"go_directive_in_import_block", "package main\n\nimport (\n\t\"fmt\" //go:linkname x y\n)\n\nfunc main() { fmt.Println() }\n",
		[]string{ruleDirectiveComment}},
	{"go_directive_after_bom", "\uFEFF//go:linkname x y\npackage main\n\nfunc main() {}\n", []string{ruleDirectiveComment}},
	{"go_directive_crlf", "package main\r\n\r\n//go:noinline\r\nfunc main() {}\r\n", []string{ruleDirectiveComment}},
	// Position directives.
	{"line_directive", prog("", "//line other.go:10\nvar x = 1"), []string{ruleLineDirective}},
	{"line_directive_mid_line", prog("", "var x = 1 //line other.go:1"), []string{ruleLineDirective}},
	{"line_block_comment", "package main\n\nfunc main() { /*line x:1*/ }\n", []string{ruleLineDirective}},
	{"line_block_comment_column", "package main\n\nfunc main() { /*line x.go:1:5*/ }\n", []string{ruleLineDirective}},
	// Build constraints.
	{"go_build", "//go:build linux\n\npackage main\n\nfunc main() {}\n", []string{ruleBuildConstraint}},
	{"plus_build", "// +build linux\n\npackage main\n\nfunc main() {}\n", []string{ruleBuildConstraint}},
	{"plus_build_no_space", "//+build linux\n\npackage main\n\nfunc main() {}\n", []string{ruleBuildConstraint}},
	{"plus_build_word", "// +builder\n\npackage main\n\nfunc main() {}\n", []string{ruleBuildConstraint}},
	{"plus_build_unicode_space", "//\u00a0+build linux\n\npackage main\n\nfunc main() {}\n", []string{ruleBuildConstraint}},
	{"plus_build_vertical_tab", "//\v+build linux\n\npackage main\n\nfunc main() {}\n", []string{ruleBuildConstraint}},
	{"go_build_late", prog("", "//go:build ignore"), []string{ruleBuildConstraint}},
	// Bodies from elsewhere.
	{"func_without_body", prog("", "func f() int"), []string{ruleFuncWithoutBody}},
	{"method_without_body", prog("", "type T int\n\nfunc (T) m()"), []string{ruleFuncWithoutBody}},
	{"init_without_body", prog("", "func init()"), []string{ruleFuncWithoutBody}},
	// Imports.
	{"import_unsafe", prog(`import "unsafe"`, "var _ = unsafe.Sizeof(0)"), []string{ruleImportNotAllowed}},
	{"import_blank_unsafe", prog(`import _ "unsafe"`, ""), []string{ruleImportNotAllowed}},
	{"import_C", prog("/*\n#include <stdio.h>\n*/\nimport \"C\"", ""), []string{ruleCgoImport}},
	{"import_trailing_space", prog(`import "fmt "`, ""), []string{ruleImportNotAllowed}},
	{"import_leading_space", prog(`import " fmt"`, ""), []string{ruleImportNotAllowed}},
	{"import_trailing_slash", prog(`import "fmt/"`, ""), []string{ruleImportNotAllowed}},
	{"import_relative", prog(`import "./x"`, ""), []string{ruleImportNotAllowed}},
	{"import_dotdot", prog(`import "cap/fs/../fs"`, ""), []string{ruleImportNotAllowed}},
	{"import_absolute", prog(`import "/fmt"`, ""), []string{ruleImportNotAllowed}},
	{"import_case", prog(`import "FMT"`, ""), []string{ruleImportNotAllowed}},
	{"import_cap_internal", prog(`import "cap/internal/wire"`, ""), []string{ruleImportNotAllowed}},
	{"import_std_internal", prog(`import "internal/abi"`, ""), []string{ruleImportNotAllowed}},
	{"import_vendor", prog(`import "vendor/golang.org/x/crypto/chacha20"`, ""), []string{ruleImportNotAllowed}},
	{"import_reflect", prog(`import "reflect"`, ""), []string{ruleImportNotAllowed}},
	{"import_os", prog(`import "os"`, ""), []string{ruleImportNotAllowed}},
	{"import_os_exec", prog(`import "os/exec"`, ""), []string{ruleImportNotAllowed}},
	{"import_syscall", prog(`import "syscall"`, ""), []string{ruleImportNotAllowed}},
	{"import_net", prog(`import "net"`, ""), []string{ruleImportNotAllowed}},
	{"import_net_http", prog(`import "net/http"`, ""), []string{ruleImportNotAllowed}},
	{"import_runtime", prog(`import "runtime"`, ""), []string{ruleImportNotAllowed}},
	{"import_runtime_debug", prog(`import "runtime/debug"`, ""), []string{ruleImportNotAllowed}},
	{"import_embed", prog(`import _ "embed"`, ""), []string{ruleImportNotAllowed}},
	{"import_plugin", prog(`import "plugin"`, ""), []string{ruleImportNotAllowed}},
	{"import_path_filepath", prog(`import "path/filepath"`, ""), []string{ruleImportNotAllowed}},
	{"import_text_template", prog(`import "text/template"`, ""), []string{ruleImportNotAllowed}},
	{"import_io_ioutil", prog(`import "io/ioutil"`, ""), []string{ruleImportNotAllowed}},
	{"import_log", prog(`import "log"`, ""), []string{ruleImportNotAllowed}},
	{"import_testing", prog(`import "testing"`, ""), []string{ruleImportNotAllowed}},
	{"import_third_party", prog(`import "github.com/x/y"`, ""), []string{ruleImportNotAllowed}},
	{"import_cap_unknown", prog(`import "cap/strand"`, ""), []string{ruleImportNotAllowed}},
	{"import_cap_root", prog(`import "cap"`, ""), []string{ruleImportNotAllowed}},
	{"import_escaped", prog(`import "\x66mt"`, ""), []string{ruleImportNotPlain}},
	{"import_escaped_unicode", prog(`import "\u0066mt"`, ""), []string{ruleImportNotPlain}},
	{"import_escaped_denied", prog(`import "\x6fs"`, ""), []string{ruleImportNotAllowed}},
	{"import_cyrillic_dze", prog("import \"\u0455trings\"", ""), []string{ruleImportNotAllowed}},
	{"import_fullwidth", prog("import \"\uff46\uff4d\uff54\"", ""), []string{ruleImportNotAllowed}},
	{"import_zero_width", prog("import \"fmt\u200b\"", ""), []string{ruleImportNotAllowed}},
	{"import_escaped_nul", prog(`import "fmt\x00"`, ""), []string{ruleImportNotAllowed}},
	// Shape of the file.
	{"second_package_clause", "package main\n\npackage main\n\nfunc main() {}\n", []string{ruleParseError}},
	{"package_notmain", "package notmain\n\nfunc main() {}\n", []string{rulePackageNotMain}},
	{"main_missing", "package main\n\nfunc helper() {}\n", []string{ruleMainMissing}},
	{"main_method_only", "package main\n\ntype T int\n\nfunc (T) main() {}\n", []string{ruleMainMissing}},
	{"main_var", "package main\n\nvar main = func() {}\n", []string{ruleMainMissing}},
	{"main_params", "package main\n\nfunc main(x int) {}\n", []string{ruleMainSignature}},
	{"main_results", "package main\n\nfunc main() int { return 0 }\n", []string{ruleMainSignature}},
	{"main_generic", "package main\n\nfunc main[T any]() {}\n", []string{ruleMainSignature}},
	{"main_without_body", "package main\n\nfunc main()\n", []string{ruleFuncWithoutBody}},
	{"empty_source", "", []string{ruleParseError}},
	{"not_go", "#!/bin/sh\nrm -rf /\n", []string{ruleParseError}},
	// Bytes.
	{"nul_in_comment", "package main\n\n// a\x00b\nfunc main() {}\n", []string{ruleSourceNUL}},
	{"nul_in_string", "package main\n\nvar s = \"a\x00\"\n\nfunc main() {}\n", []string{ruleSourceNUL}},
	{"invalid_utf8_comment", "package main\n\n// \xff\nfunc main() {}\n", []string{ruleSourceNotUTF8}},
	{"invalid_utf8_import", "package main\n\nimport \"fm\xc3t\"\n\nfunc main() {}\n", []string{ruleSourceNotUTF8}},
	{"nul_and_invalid_utf8", "package main\n\x00\xfe\nfunc main() {}\n", []string{ruleSourceNUL, ruleSourceNotUTF8}},
	{"too_large", "package main\n\nfunc main() {}\n" + "//" + strings.Repeat("x", maxSourceBytes), []string{ruleSourceTooLarge}},
}

// rulesOf is every rule err names, sorted; it fails t if err is not a
// *VetError.
func rulesOf(t *testing.T, err error) []string {
	t.Helper()
	var ve *VetError
	if !errors.As(err, &ve) {
		t.Fatalf("Vet error %v (%T) is not a *VetError", err, err)
	}
	var rules []string
	for _, v := range ve.Violations {
		rules = append(rules, v.Rule)
	}
	slices.Sort(rules)
	return rules
}

// TestVetBypass refuses every construct with exactly the expected rules.
func TestVetBypass(t *testing.T) {
	t.Parallel()
	for _, c := range bypassCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := vet([]byte(c.src), WorkspaceSeam())
			if err == nil {
				t.Fatalf("Vet accepted %q (imports %v)", c.src, p.Imports)
			}
			want := slices.Sorted(slices.Values(c.rules))
			if got := rulesOf(t, err); !slices.Equal(got, want) {
				t.Fatalf("rules %v, want %v\n%v", got, want, err)
			}
		})
	}
}

// TestVetBypassControls: the harmless neighbours of the refused
// constructs pass, so each refusal above is about the construct.
func TestVetBypassControls(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"space_before_go":      prog("", "// go:linkname is only a comment with a space"),
		"space_before_line":    prog("", "// line 3 is where it starts"),
		"line_without_space":   prog("", "//line\nvar x = 1"),
		"lines_word":           prog("", "//lines of code"),
		"block_space_line":     prog("", "/* line x:1 */"),
		"go_without_colon":     prog("", "//go build"),
		"plus_mid_comment":     prog("", "// a +build in the middle"),
		"directive_in_string":  prog("", "var s = \"//go:linkname f g\"\nvar r = `/*line x:1*/`"),
		"export_comment":       prog("", "//export f\nfunc f() {}"),
		"init_function":        prog("", "func init() {}\n\nfunc init() {}"),
		"method_main_and_main": prog("", "type T int\n\nfunc (T) main() {}"),
		"generic_helper":       prog("", "func id[T any](x T) T { return x }"),
		"import_blank_tzdata":  prog(`import _ "time/tzdata"`, ""),
		"import_named":         prog(`import str "strings"`, "var _ = str.ToUpper"),
		"import_dot":           prog(`import . "strings"`, "var _ = ToUpper"),
		"import_raw_string":    prog("import `fmt`", "var _ = fmt.Sprint"),
		"import_net_url":       prog(`import ("net/url"; "net/netip")`, "var _ = url.Parse\nvar _ = netip.ParseAddr"),
		"import_caps":          prog("import (\n\t\"cap/fs\"\n\t\"cap/search\"\n\t\"cap/proc\"\n\t\"cap/kv\"\n\t\"cap/report\"\n\t\"cap/job\"\n)", ""),
		"bom":                  "\uFEFFpackage main\n\nfunc main() {}\n",
		"at_limit":             atLimit(maxSourceBytes),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := vet([]byte(src), WorkspaceSeam()); err != nil {
				t.Fatalf("Vet refused %q:\n%v", src, err)
			}
		})
	}
}

// atLimit is a valid program of exactly n bytes.
func atLimit(n int) string {
	base := "package main\n\nfunc main() {}\n//"
	return base + strings.Repeat("x", n-len(base))
}

// TestVetSizeBoundary: exactly maxSourceBytes passes, one more is
// refused with source_too_large alone, before the bytes are looked at.
func TestVetSizeBoundary(t *testing.T) {
	t.Parallel()
	ok := atLimit(maxSourceBytes)
	if len(ok) != maxSourceBytes {
		t.Fatalf("fixture is %d bytes", len(ok))
	}
	if _, err := vet([]byte(ok), WorkspaceSeam()); err != nil {
		t.Fatalf("a source of exactly maxSourceBytes was refused: %v", err)
	}
	over := []byte(ok + "\x00")
	_, err := vet(over, WorkspaceSeam())
	if got := rulesOf(t, err); !slices.Equal(got, []string{ruleSourceTooLarge}) {
		t.Fatalf("one byte over: rules %v, want only %s", got, ruleSourceTooLarge)
	}
}

// TestVetSeamCannotAdmitDenied: a seam listing a denied package still
// has it refused; a seam without cap/fs refuses cap/fs.
func TestVetSeamCannotAdmitDenied(t *testing.T) {
	t.Parallel()
	bad := Seam{Name: "bad", Packages: []string{"os", "cap/internal/wire", "unsafe", "cap/fs"}}
	for _, imp := range []string{"os", "cap/internal/wire", "unsafe"} {
		_, err := vet([]byte(prog(`import _ "`+imp+`"`, "")), bad)
		if got := rulesOf(t, err); !slices.Equal(got, []string{ruleImportNotAllowed}) {
			t.Errorf("%s under a seam listing it: rules %v", imp, got)
		}
	}
	if _, err := vet([]byte(prog(`import _ "cap/fs"`, "")), bad); err != nil {
		t.Errorf("cap/fs under a seam listing it: %v", err)
	}
	none := Seam{Name: "none"}
	_, err := vet([]byte(prog(`import _ "cap/fs"`, "")), none)
	if got := rulesOf(t, err); !slices.Equal(got, []string{ruleImportNotAllowed}) {
		t.Errorf("cap/fs under a seam without it: rules %v", got)
	}
}
