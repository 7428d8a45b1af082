package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/mcpclient"
	"github.com/agentloom/loom/tool"
)

// mcpStd is e2eStd and what a generated package imports.
var mcpStd = append([]string{"encoding/json"}, e2eStd...)

// fakeMCP is an in-process MCPServer: its tools, each answering its
// arguments back as text (or failing, or hanging, by name).
type fakeMCP struct {
	name  string
	tools []MCPTool
	calls sync.Map // tool name → number of calls
}

func (f *fakeMCP) Name() string                             { return f.name }
func (f *fakeMCP) Tools(context.Context) ([]MCPTool, error) { return f.tools, nil }
func (f *fakeMCP) Call(ctx context.Context, name string, args json.RawMessage) (MCPResult, error) {
	n, _ := f.calls.LoadOrStore(name, new(int))
	*n.(*int)++
	switch name {
	case "hang":
		<-ctx.Done()
		return MCPResult{}, ctx.Err()
	case "fail":
		return MCPResult{Text: "it failed", IsError: true}, nil
	}
	return MCPResult{Text: name + " " + string(args), Structured: json.RawMessage(`{"n":7}`)}, nil
}

// fakeTool is a tool of server taking {text?: string}.
func fakeTool(server, name, desc string) MCPTool {
	return MCPTool{Name: name, Description: desc, ModelTool: "mcp__" + server + "__" + name,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
}

// registerModelTools registers a stand-in model tool for each of the
// servers' tools, as mcpclient.Register would.
func registerModelTools(t testing.TB, reg *tool.Registry, servers ...*fakeMCP) {
	t.Helper()
	for _, s := range servers {
		for _, mt := range s.tools {
			if _, ok := reg.Lookup(mt.ModelTool); ok {
				continue
			}
			err := reg.Register(tool.Tool{Name: mt.ModelTool, Description: "x", Schema: json.RawMessage(`{"type":"object"}`),
				Run: func(context.Context, *tool.Call, json.RawMessage) tool.Outcome { return tool.Success("") }})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// withMCP gives s an Engine over servers, building with mcpStd.
func (s *session) withMCP(t testing.TB, servers ...MCPServer) {
	t.Helper()
	dir, b := e2eShared(t)
	eng, err := New(Options{Registry: s.reg, Broker: b, Jobs: s.jobs, Builder: BuilderOptions{CacheDir: dir, StdPackages: mcpStd}, MCPServers: servers})
	if err != nil {
		t.Fatal(err)
	}
	s.eng = eng
}

// TestMCPProgramCallsAnInProcessServer: a program imports cap/mcp/<name>
// and calls a tool; the answer comes back typed, the call is recorded
// with the server and tool, a failing tool is a *Error coded
// mcp_tool_error, and a strand not holding a tool's model tool is refused
// tool_not_held without the server being called.
func TestMCPProgramCallsAnInProcessServer(t *testing.T) {
	t.Parallel()
	f := &fakeMCP{name: "fake", tools: []MCPTool{fakeTool("fake", "echo", "echoes"), fakeTool("fake", "fail", "fails"), fakeTool("fake", "secret", "not for you")}}
	s := newSession(t, nil)
	registerModelTools(t, s.reg, f)
	s.withMCP(t, f)
	s.reg.SetHolds(func(_ context.Context, _, name string) bool { return name != "mcp__fake__secret" })
	src := mainWith([]string{"context", "errors", "fmt", "cap/mcp/fake"}, `ctx := context.Background()
	hi := "hi"
	r, err := fake.Echo(ctx, fake.EchoInput{Text: &hi})
	fmt.Printf("%q %v %v\n", r.Text, r.Structured["n"], err)
	code := func(err error) string {
		var e *fake.Error
		if errors.As(err, &e) {
			return e.Code + ": " + e.Message
		}
		return fmt.Sprint(err)
	}
	_, err = fake.Fail(ctx, fake.FailInput{})
	fmt.Println(code(err))
	_, err = fake.Secret(ctx, fake.SecretInput{})
	fmt.Println(code(err))`)
	res := s.mustRun(t, src)
	lines := strings.Split(res.Stdout, "\n")
	if lines[0] != `"echo {\"text\":\"hi\"}" 7 <nil>` {
		t.Errorf("echo answered %s", lines[0])
	}
	if lines[1] != "mcp_tool_error: it failed" {
		t.Errorf("fail answered %s", lines[1])
	}
	if !strings.HasPrefix(lines[2], string(tool.CodeToolNotHeld)+": mcp.fake.secret is authorized by the tool mcp__fake__secret") {
		t.Errorf("secret answered %s", lines[2])
	}
	if _, called := f.calls.Load("secret"); called {
		t.Error("the server was called for a tool the strand does not hold")
	}
	if len(res.Record.Calls) != 3 || res.Record.Calls[0].Cap != "mcp.fake.echo" || res.Record.Calls[0].Summary != `server="fake" tool="echo"` {
		t.Errorf("call record: %+v", res.Record.Calls)
	}
	// The compiled package is kept for the next program importing it.
	b, err := s.eng.buildStage()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.generatedArchive(s.eng.mcp.imported([]string{"cap/mcp/fake"})[0])); err != nil {
		t.Errorf("the compiled package was not kept: %v", err)
	}
	if res := s.mustRun(t, mainWith([]string{"context", "fmt", "cap/mcp/fake"}, `fmt.Println(fake.Echo(context.Background(), fake.EchoInput{}))`)); !strings.Contains(res.Stdout, "echo {}") {
		t.Errorf("a program built on the kept package: %q", res.Stdout)
	}
}

// TestMCPCallIsBoundedPerCall: a tool that does not answer is cut at the
// per-call bound with call_timeout, and the program goes on.
func TestMCPCallIsBoundedPerCall(t *testing.T) {
	t.Parallel()
	f := &fakeMCP{name: "slow", tools: []MCPTool{fakeTool("slow", "hang", "never answers")}}
	s := newSession(t, nil)
	registerModelTools(t, s.reg, f)
	s.withMCP(t, f)
	s.eng.mcp.callTimeout = 200 * time.Millisecond
	res := s.mustRun(t, mainWith([]string{"context", "errors", "fmt", "cap/mcp/slow"}, `_, err := slow.Hang(context.Background(), slow.HangInput{})
	var e *slow.Error
	errors.As(err, &e)
	fmt.Println(e.Code)`))
	if res.Stdout != "call_timeout\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
}

// TestMCPHostileToolListBuilds: tool names that clash once made Go
// identifiers, Go keywords, predeclared names and the package's own
// names still give a package that builds, and each tool is reached by
// its own name.
func TestMCPHostileToolListBuilds(t *testing.T) {
	t.Parallel()
	var tools []MCPTool
	for _, n := range []string{"func", "type", "go", "a.b", "a-b", "a_b", "A B", "Error", "Result", "call", "decode", "init", "main", "string", "ÿ", "x"} {
		tools = append(tools, fakeTool("h", n, "the tool "+n))
	}
	f := &fakeMCP{name: "h", tools: tools}
	s := newSession(t, nil)
	registerModelTools(t, s.reg, f)
	s.withMCP(t, f)
	if len(s.eng.mcp.pkgs) != 1 {
		t.Fatalf("the server was left out: %+v", s.eng.mcp.refused)
	}
	p := s.eng.mcp.pkgs[0]
	var body strings.Builder
	body.WriteString("ctx := context.Background()\n")
	for _, c := range p.gen.Capabilities {
		fmt.Fprintf(&body, "\tif r, err := h.%s(ctx, h.%sInput{}); err != nil { panic(err) } else { fmt.Println(r.Text) }\n", c.Func, c.Func)
	}
	res := s.mustRun(t, mainWith([]string{"context", "fmt", "cap/mcp/h"}, body.String()))
	for _, c := range p.gen.Capabilities {
		if !strings.Contains(res.Stdout, c.Tool+" {}\n") {
			t.Errorf("the tool %q was not reached by %s:\n%s", c.Tool, c.Func, res.Stdout)
		}
	}
}

// TestMCPVettingRefusesAnUnknownOrClashingPackage: an import of an MCP
// package no server is, or of a server left out because its package name
// clashes with another's, is refused at vetting saying why.
func TestMCPVettingRefusesAnUnknownOrClashingPackage(t *testing.T) {
	t.Parallel()
	a := &fakeMCP{name: "my-server", tools: []MCPTool{fakeTool("my-server", "x", "")}}
	b := &fakeMCP{name: "MyServer", tools: []MCPTool{fakeTool("MyServer", "x", "")}}
	s := newSession(t, nil)
	registerModelTools(t, s.reg, a, b)
	s.withMCP(t, a, b)
	if got := s.eng.mcp.paths(); len(got) != 1 || got[0] != "cap/mcp/myserver" {
		t.Fatalf("packages %v", got)
	}
	if len(s.eng.mcp.refused) != 1 || s.eng.mcp.refused[0].code != codeMCPPackageClash {
		t.Fatalf("refused %+v", s.eng.mcp.refused)
	}
	if _, err := s.eng.Vet([]byte(mainWith([]string{"cap/mcp/myserver"}, "_ = myserver.X"))); err != nil {
		t.Fatalf("the first server's package is refused: %v", err)
	}
	_, err := s.eng.Vet([]byte(mainWith([]string{"cap/mcp/nope"}, "_ = nope.X")))
	var ve *VetError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), `import "cap/mcp/nope" (not offered: no configured MCP server is the package cap/mcp/nope; this host's MCP packages are cap/mcp/myserver`) {
		t.Fatalf("vetting answered %v", err)
	}
	// A server left out says why.
	c := &fakeMCP{name: "c", tools: []MCPTool{fakeTool("c", "x", "")}} // no model tool registered
	s.withMCP(t, c)
	_, err = s.eng.Vet([]byte(mainWith([]string{"cap/mcp/c"}, "_ = c.X")))
	if err == nil || !strings.Contains(err.Error(), `the MCP server "c" is left out (mcp_tool_unauthorized`) {
		t.Fatalf("vetting answered %v", err)
	}
}

// TestMCPDescriptionStaysSmall: a server of 500 tools adds one line to
// the code_mode description (its package and tool count), not its tools;
// its API is read with fs_read cap://mcp/<name>, and cap://mcp?q= finds
// a tool by words.
func TestMCPDescriptionStaysSmall(t *testing.T) {
	t.Parallel()
	var tools []MCPTool
	for i := range 500 {
		tools = append(tools, fakeTool("big", fmt.Sprintf("tool_%03d", i), fmt.Sprintf("does thing number %d of the big server", i)))
	}
	tools = append(tools, fakeTool("big", "create_issue", "Create an issue in a repository"))
	f := &fakeMCP{name: "big", tools: tools}
	s := newSession(t, nil)
	base := productionEngine(t, s, nil).description()
	registerModelTools(t, s.reg, f)
	s.withMCP(t, f)
	desc := s.eng.description()
	if grew := len(desc) - len(base); grew > 600 {
		t.Errorf("the description grew by %d bytes for one server", grew)
	}
	if !strings.Contains(desc, `import "cap/mcp/big" ("big", 501 tools)`) || strings.Contains(desc, "tool_007") {
		t.Errorf("the description's MCP part:\n%s", desc[len(base)/2:])
	}
	out, ok := s.eng.ReadMCP("cap://mcp/big")
	if !ok || out.IsError || !strings.Contains(out.Text, "func CreateIssue(ctx context.Context, in CreateIssueInput) (Result, error)") {
		t.Errorf("cap://mcp/big: %v %s", ok, trunc(out.Text))
	}
	out, _ = s.eng.ReadMCP("cap://mcp?q=issue+create")
	if !strings.Contains(out.Text, "1 tools match") || !strings.Contains(out.Text, "cap/mcp/big.CreateIssue") {
		t.Errorf("search: %s", out.Text)
	}
	out, _ = s.eng.ReadMCP("cap://mcp")
	if !strings.Contains(out.Text, "cap/mcp/big  the MCP server \"big\", 501 tools") {
		t.Errorf("index: %s", out.Text)
	}
	if _, ok := s.eng.ReadMCP("cap://fs"); ok {
		t.Error("ReadMCP answered cap://fs")
	}
	if out, _ := s.eng.ReadMCP("cap://mcp/nope"); out.Code != CodeUnknownCapPackage {
		t.Errorf("cap://mcp/nope: %s %s", out.Code, out.Text)
	}
}

func trunc(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// fakeServerBinary builds mcpclient's hostile test server once, under
// /var/tmp (a jail's /tmp is its own).
var fakeServerBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("/var/tmp", "loom-codemode-mcp-")
	if err != nil {
		return "", err
	}
	os.Chmod(dir, 0o755)
	testCleanups = append(testCleanups, func() { os.RemoveAll(dir) })
	_, here, _, _ := runtime.Caller(0)
	bin := filepath.Join(dir, "fakeserver")
	cmd := osexec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildvcs=false", "-o", bin, "./mcpclient/internal/fakeserver")
	cmd.Dir = filepath.Join(filepath.Dir(here), "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the fake server: %v\n%s", err, out)
	}
	return bin, nil
})

// clientServer is a *mcpclient.Client as an MCPServer, as package plane
// adapts it.
type clientServer struct{ c *mcpclient.Client }

func (s clientServer) Name() string { return s.c.Name() }
func (s clientServer) Tools(ctx context.Context) ([]MCPTool, error) {
	tools, _, err := s.c.Tools(ctx)
	var out []MCPTool
	for _, t := range tools {
		out = append(out, MCPTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, ModelTool: mcpclient.ToolName(s.c.Name(), t.Name)})
	}
	return out, err
}
func (s clientServer) Call(ctx context.Context, name string, args json.RawMessage) (MCPResult, error) {
	r, err := s.c.Call(ctx, name, args)
	if err != nil {
		return MCPResult{}, err
	}
	return MCPResult{Structured: r.Structured, Text: r.Text, IsError: r.IsError}, nil
}

// jailedMCPSession is a session whose Engine serves the fake server,
// jailed by mcpclient, its tools registered as model tools.
func jailedMCPSession(t testing.TB) (*session, *mcpclient.Client) {
	t.Helper()
	bin, err := fakeServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, nil)
	_, b := e2eShared(t)
	c, err := mcpclient.New(mcpclient.Server{Name: "fake", Command: bin}, mcpclient.Options{Workspace: s.ws, Broker: b, Base: s.call.Base, Env: s.call.Env, TempDir: s.call.TempDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := mcpclient.Register(ctx, s.reg, c); err != nil {
		t.Fatal(err)
	}
	s.withMCP(t, clientServer{c})
	return s, c
}

// TestMCPProgramCallsAJailedServer: end to end over mcpclient's own test
// server, run jailed on stdio: a program calls its echo and its tool
// with an output schema through cap/mcp/fake.
func TestMCPProgramCallsAJailedServer(t *testing.T) {
	t.Parallel()
	s, _ := jailedMCPSession(t)
	res := s.mustRun(t, mainWith([]string{"context", "fmt", "cap/mcp/fake"}, `ctx := context.Background()
	text := "hello"
	r, err := fake.Echo(ctx, fake.EchoInput{Text: &text})
	fmt.Println(r.Text, err)
	o, err := fake.GoodOutput(ctx, fake.GoodOutputInput{})
	fmt.Println(o.N, err)`))
	if res.Stdout != "hello <nil>\n7 <nil>\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
}

// TestMCPPackageIsDeterministicAndVetted: the same tools in another
// order give the same source and digest (so the same binary key); a
// description holding directive-like lines still gives a package that
// passes vetGenerated, which refuses a real directive; an unknown mcp.*
// capability is refused naming the package.
func TestMCPPackageIsDeterministicAndVetted(t *testing.T) {
	t.Parallel()
	reg, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	tools := []MCPTool{fakeTool("d", "b", "//go:linkname x runtime.x\n//line evil.go:1\n+build ignore"), fakeTool("d", "a", "first"), fakeTool("d", "c", "*/ /*go:x */")}
	f1 := &fakeMCP{name: "d", tools: tools}
	f2 := &fakeMCP{name: "d", tools: []MCPTool{tools[2], tools[0], tools[1]}}
	registerModelTools(t, reg, f1)
	s1, s2 := newMCPSet([]MCPServer{f1}, reg, nil), newMCPSet([]MCPServer{f2}, reg, nil)
	if len(s1.pkgs) != 1 || len(s2.pkgs) != 1 {
		t.Fatalf("left out: %+v %+v", s1.refused, s2.refused)
	}
	g1, g2 := s1.imported([]string{"cap/mcp/d"}), s2.imported([]string{"cap/mcp/d"})
	if sourceDigest(g1) != sourceDigest(g2) || string(g1[0].src) != string(g2[0].src) {
		t.Error("the same tools in another order gave another package")
	}
	if r := vetGenerated("d", append(append([]byte(nil), g1[0].src...), "\n//go:linkname y runtime.y\n"...)); !strings.Contains(r, ruleDirectiveComment) {
		t.Errorf("vetGenerated let a directive through: %q", r)
	}
	h := &seamHost{seam: Seam{Name: "workspace", Packages: []string{"cap/mcp/d"}}, mcp: s1, reg: reg, call: &tool.Call{Strand: "main"}}
	_, err = h.route(t.Context(), "mcp.d.nope", map[string]any{})
	var ce *CapError
	if !errors.As(err, &ce) || ce.Code != codeUnknownCapability || !strings.Contains(ce.Message, "cap/mcp/d offers no such tool") {
		t.Errorf("mcp.d.nope: %v", err)
	}
	if _, err := h.route(t.Context(), "mcp.d.a", map[string]any{"arguments": []byte(`{"text":"x"}`)}); err != nil {
		t.Errorf("mcp.d.a: %v", err)
	}
}

// TestMCPAPIPageIsCompact: the API page fs_read cap://mcp/<name> shows
// is the generated package's compact API (its signature, its fields'
// JSON names where not the field's own lower-cased, "optional" on an
// optional field that is not a pointer, the tools' own words), without
// the source's struct tags or the generator's role lines, while the
// source programs build against keeps its tags.
func TestMCPAPIPageIsCompact(t *testing.T) {
	t.Parallel()
	f := &fakeMCP{name: "fake", tools: []MCPTool{{Name: "echo", Description: "Echoes back the input", ModelTool: "mcp__fake__echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"Message to echo"},"times":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"user_id":{"type":"string"}},"required":["message","user_id"]}`)}}}
	s := newSession(t, nil)
	registerModelTools(t, s.reg, f)
	s.withMCP(t, f)
	out, ok := s.eng.ReadMCP("cap://mcp/fake")
	if !ok || out.IsError {
		t.Fatalf("cap://mcp/fake: %v %s", ok, out.Text)
	}
	page := out.Text
	for _, gone := range []string{`json:"message"`, "is the input of", "func call("} {
		if strings.Contains(page, gone) {
			t.Errorf("the page still holds %q:\n%s", gone, page)
		}
	}
	for _, kept := range []string{"\tMessage string // Message to echo\n", "\tTimes *int64\n", "\tTags []string // optional\n", "\tUserID string // user_id\n", "Echoes back the input",
		"func Echo(ctx context.Context, in EchoInput) (Result, error)", "type Result struct", "type Error struct"} {
		if !strings.Contains(page, kept) {
			t.Errorf("the page lost %q:\n%s", kept, page)
		}
	}
	if src := string(s.eng.mcp.pkgs[0].gen.Source); !strings.Contains(src, `json:"message"`) {
		t.Error("the generated source lost its tags")
	}
}
