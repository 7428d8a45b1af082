package mcpgen

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
)

func TestExportedIdent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"create_issue", "CreateIssue"},
		{"createIssue", "CreateIssue"},
		{"user_id", "UserID"},
		{"userId", "UserID"},
		{"HTTPServer", "HTTPServer"},
		{"get-url", "GetURL"},
		{"api.v2.list", "APIV2List"},
		{"2fa_code", "X2faCode"},
		{"type", "Type"},
		{"func", "Func"},
		{"nil", "Nil"},
		{"日本語", "F"},
		{"café_menu", "CafMenu"},
		{"", "F"},
		{"__", "F"},
		{"a" + strings.Repeat("_bcdefgh", 20), "A" + strings.Repeat("Bcdefgh", 9)},
	} {
		if got := exportedIdent(c.in, "F"); got != c.want {
			t.Errorf("exportedIdent(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := exportedIdent(c.in, "F"); len(got) > maxIdentBytes+1 {
			t.Errorf("exportedIdent(%q) is %d bytes", c.in, len(got))
		}
	}
}

func TestSnake(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"CreateIssue": "create_issue", "UserID": "user_id", "HTTPServer": "http_server",
		"Read": "read", "Foo2": "foo2", "X2faCode": "x2fa_code", "DocumentSymbols": "document_symbols",
	} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPackageName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"github", "github"},
		{"GitHub", "github"},
		{"my-server", "myserver"},
		{"my_server.v2", "myserverv2"},
		{"2fa", "mcp2fa"},
		{"func", "funcmcp"},
		{"type", "typemcp"},
		{"main", "mainmcp"},
		{"internal", "internalmcp"},
		{"string", "stringmcp"},
		{"nil", "nilmcp"},
		{"Ünïcode", "ncode"},
	} {
		got, err := PackageName(c.in)
		if err != nil || got != c.want {
			t.Errorf("PackageName(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "日本", "---", strings.Repeat("a", MaxServerNameBytes+1), "a\xff"} {
		_, err := PackageName(in)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeServerNameInvalid || tool.CodeOf(err) != CodeServerNameInvalid {
			t.Errorf("PackageName(%q) = %v, want %s", in, err, CodeServerNameInvalid)
		}
	}
}

func TestCommentLines(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"plain", []string{"plain"}},
		{"a\r\nb\rc\nd", []string{"a", "b", "c", "d"}},
		{"\n\n a \n\n\n\nb\n\n", []string{" a", "", "b"}},
		{"go:linkname x y", []string{"go:linkname x y"}},
		{"x\n//go:embed y", []string{"x", "//go:embed y"}},
		{"end */ start /* x", []string{"end * / start / * x"}},
		{"+build linux\n  +build x", []string{"+ build linux", "  + build x"}},
		{"a\u202eb\u200bc\x00d\x1be", []string{"abcde"}},
		{"tab\there", []string{"tab    here"}},
		{"line1\u2028line2", []string{"line1", "line2"}},
		{"bad\xffutf8", []string{"bad\uFFFDutf8"}},
	} {
		got := commentLines(c.in, MaxDocBytes)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("commentLines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := commentLines(strings.Repeat("é", MaxDocBytes), MaxDocBytes)
	if len(long) != 1 || len(long[0]) > MaxDocBytes+len("…") || !strings.HasSuffix(long[0], "…") {
		t.Errorf("a long description is %d bytes: %q…", len(long[0]), long[0][:20])
	}
	for _, l := range commentLines(strings.Repeat("é", MaxDocBytes), MaxDocBytes) {
		if !strings.HasSuffix(l, "é…") {
			t.Errorf("the cut split a rune: %q", l[len(l)-8:])
		}
	}
}

// TestNamesCollisionFree: clashes between tools, between a tool's
// function and another tool's types, and between fields, get suffixes,
// and every capability name is distinct.
func TestNamesCollisionFree(t *testing.T) {
	t.Parallel()
	obj := func(props string) []byte { return []byte(`{"type":"object","properties":{` + props + `}}`) }
	p := mustGenerate(t, "srv", []Tool{
		{Name: "get-user", InputSchema: obj(`"a_b":{"type":"string"},"a-b":{"type":"integer"},"aB":{"type":"boolean"}`)},
		{Name: "get_user"},
		{Name: "GetUser"},
		{Name: "foo"},
		{Name: "foo_input"},
		{Name: "error"},
		{Name: "result"},
		{Name: "日本"},
		{Name: "中国"},
		{Name: "id"},
		{Name: "i.d"},
	})
	want := map[string]string{
		"get-user": "GetUser2", "get_user": "GetUser3", "GetUser": "GetUser", "foo": "Foo", "foo_input": "FooInput",
		"error": "Error2", "result": "Result2", "日本": "Tool2", "中国": "Tool", "id": "ID2", "i.d": "ID",
	}
	seen := map[string]bool{}
	for _, c := range p.Capabilities {
		if want[c.Tool] != c.Func {
			t.Errorf("tool %q is func %s, want %s", c.Tool, c.Func, want[c.Tool])
		}
		if seen[c.Name] || c.Name != "mcp.srv."+snake(c.Func) {
			t.Errorf("capability %q (func %s) repeated or misnamed", c.Name, c.Func)
		}
		seen[c.Name] = true
	}
	if len(p.Capabilities) != len(want) {
		t.Errorf("%d capabilities, want %d", len(p.Capabilities), len(want))
	}
	src := string(p.Source)
	for _, s := range []string{"type FooInput2 struct{}", "func FooInput(ctx context.Context, in FooInputInput)",
		"AB  *int64  `json:\"a-b,omitempty\"`", "AB2 *bool   `json:\"aB,omitempty\"`", "AB3 *string `json:\"a_b,omitempty\"`"} {
		if !strings.Contains(src, s) {
			t.Errorf("the source lacks %q", s)
		}
	}
}
