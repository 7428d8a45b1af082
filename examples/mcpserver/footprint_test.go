package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/mcpclient"
	"github.com/agentloom/loom/plane"
)

// footprint is what a model is sent and writes for MCP servers' tools,
// in bytes (a token is about 4 of them in English text and JSON).
type footprint struct {
	// tools counts the tools offered, and declared is the bytes of their
	// declarations, summed: each one's name, description and input schema
	// as the model is sent them with every request.
	tools, declared int
	// calls counts the task's calls; sent is the bytes the model writes
	// to make them (each tool's name and its arguments' JSON) and
	// received the bytes it reads back (each result's text, and its
	// images as base64, of which images counts).
	calls, sent, received, images int
}

// taskCall is one call of a scripted task: a tool of a configured server
// and its arguments.
type taskCall struct {
	server, tool string
	args         map[string]any
}

// directFootprint is the direct-tools side of the comparison with code
// mode: the declarations of the named servers' tools as Register put them
// in p's registry (mcp__<server>__<tool>), and the task made as direct
// tool calls, one model tool call per taskCall, dispatched through p. It
// fails when a call fails, so the figures are those of a task that ran.
//
// The code-mode side, once code_mode reaches the servers through
// cap/mcp/<server>, is one program making the same calls: its declared
// bytes code_mode's declaration and what the model reads of
// cap/mcp/<server>, its sent bytes the program's, its received bytes the
// program's output. Add it as codeModeFootprint(ctx, p, servers, task)
// returning a footprint, and its rows beside these in TestMCPFootprint.
func directFootprint(ctx context.Context, p *plane.Plane, servers []string, task []taskCall) (footprint, error) {
	var f footprint
	for _, t := range p.Registry.Registered() {
		for _, s := range servers {
			if strings.HasPrefix(t.Name, mcpclient.ToolName(s, "")) {
				f.tools++
				f.declared += len(t.Name) + len(t.Description) + len(t.Schema)
			}
		}
	}
	if len(task) == 0 {
		return f, nil
	}
	calls := make([]plane.ToolCall, len(task))
	for i, tc := range task {
		args, err := json.Marshal(tc.args)
		if err != nil {
			return f, err
		}
		calls[i] = plane.ToolCall{ID: fmt.Sprintf("toolu_%d", i), Name: mcpclient.ToolName(tc.server, tc.tool), Args: args}
		f.sent += len(calls[i].Name) + len(args)
	}
	for _, r := range p.Dispatcher().Dispatch(ctx, p.Call, "op-footprint", "step-1", calls) {
		if r.Outcome.IsError {
			return f, fmt.Errorf("%s: %s", r.Name, r.Outcome.Text)
		}
		f.calls++
		f.received += len(r.Outcome.Text)
		for _, im := range r.Outcome.Images {
			n := base64.StdEncoding.EncodedLen(len(im.Data))
			f.received += n
			f.images += n
		}
	}
	return f, nil
}

// codeModeFootprint is the code-mode side of the comparison: the model
// is sent code_mode's declaration and reads the cap/mcp/<server> pages
// of the named servers once (fs_read cap://mcp/<server>), then writes one
// program that makes footprintTask's ten calls and prints what it needs
// of their answers. It fails when the program fails.
func codeModeFootprint(ctx context.Context, p *plane.Plane, servers []string, ws string) (footprint, error) {
	var f footprint
	for _, t := range p.Registry.Registered() {
		if t.Name == "code_mode" {
			f.declared += len(t.Name) + len(t.Description) + len(t.Schema)
		}
	}
	for _, s := range servers {
		f.tools++
		o := p.Registry.Dispatch(ctx, p.Call, "fs_read", []byte(`{"path":"cap://mcp/`+s+`"}`))
		if o.IsError {
			return f, fmt.Errorf("cap://mcp/%s: %s", s, o.Text)
		}
		f.declared += len(o.Text)
	}
	args, err := json.Marshal(map[string]any{"program": footprintProgram(ws), "within_ms": 300000})
	if err != nil {
		return f, err
	}
	f.sent = len("code_mode") + len(args)
	o := p.Registry.Dispatch(ctx, p.Call.At("op-footprint", "step-2", 0), "code_mode", args)
	if o.IsError {
		return f, fmt.Errorf("code_mode: %s: %s", o.Code, o.Text)
	}
	// The answer's call record counts the program's capability calls.
	if m := regexp.MustCompile(`calls: (\d+) \((\d+) ok\)`).FindStringSubmatch(o.Text); m != nil && m[1] == m[2] {
		f.calls, _ = strconv.Atoi(m[1])
	}
	f.received = len(o.Text)
	return f, nil
}

// footprintProgram makes footprintTask's ten calls from one program and
// prints a line of each answer, as a model would write it.
func footprintProgram(ws string) string {
	return `package main

import (
	"context"
	"fmt"
	"strings"

	"cap/mcp/everything"
	"cap/mcp/files"
)

func main() {
	ctx := context.Background()
	ws := ` + fmt.Sprintf("%q", ws) + `
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	dirs, err := files.ListAllowedDirectories(ctx, files.ListAllowedDirectoriesInput{})
	must(err)
	tree, err := files.DirectoryTree(ctx, files.DirectoryTreeInput{Path: ws})
	must(err)
	found, err := files.SearchFiles(ctx, files.SearchFilesInput{Path: ws, Pattern: "**/*.go"})
	must(err)
	main, err := files.ReadTextFile(ctx, files.ReadTextFileInput{Path: ws + "/main.go"})
	must(err)
	both, err := files.ReadMultipleFiles(ctx, files.ReadMultipleFilesInput{Paths: []string{ws + "/go.mod", ws + "/README.md"}})
	must(err)
	info, err := files.GetFileInfo(ctx, files.GetFileInfoInput{Path: ws + "/main.go"})
	must(err)
	echo, err := everything.Echo(ctx, everything.EchoInput{Message: "build passed"})
	must(err)
	sum, err := everything.GetSum(ctx, everything.GetSumInput{A: 1234, B: 5678})
	must(err)
	weather, err := everything.GetStructuredContent(ctx, everything.GetStructuredContentInput{Location: everything.GetStructuredContentInputLocationChicago})
	must(err)
	img, err := everything.GetTinyImage(ctx, everything.GetTinyImageInput{})
	must(err)
	fmt.Println("allowed:", strings.TrimSpace(dirs.Content))
	fmt.Println("tree bytes:", len(tree.Content), "go files:", strings.Count(found.Content, ".go"))
	fmt.Println("main.go lines:", strings.Count(main.Content, "\n"))
	fmt.Println("module:", strings.Contains(both.Content, "module example.com/hello"))
	fmt.Println("main.go info lines:", strings.Count(info.Content, "\n")+1)
	fmt.Println(echo.Text, "|", sum.Text, "|", fmt.Sprint(weather), "| image text bytes:", len(img.Text))
}
`
}

// footprintTask is ten calls a model might make over a small Go module:
// six of server-filesystem's tools and four of server-everything's.
func footprintTask(ws string) []taskCall {
	return []taskCall{
		{"files", "list_allowed_directories", map[string]any{}},
		{"files", "directory_tree", map[string]any{"path": ws}},
		{"files", "search_files", map[string]any{"path": ws, "pattern": "**/*.go"}},
		{"files", "read_text_file", map[string]any{"path": filepath.Join(ws, "main.go")}},
		{"files", "read_multiple_files", map[string]any{"paths": []string{filepath.Join(ws, "go.mod"), filepath.Join(ws, "README.md")}}},
		{"files", "get_file_info", map[string]any{"path": filepath.Join(ws, "main.go")}},
		{"everything", "echo", map[string]any{"message": "build passed"}},
		{"everything", "get-sum", map[string]any{"a": 1234, "b": 5678}},
		{"everything", "get-structured-content", map[string]any{"location": "Chicago"}},
		{"everything", "get-tiny-image", map[string]any{}},
	}
}

// footprintModule is the small Go module footprintTask works over.
var footprintModule = map[string]string{
	"go.mod":         "module example.com/hello\n\ngo 1.26\n",
	"README.md":      "# hello\n\nPrints a greeting.\n",
	"main.go":        "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/hello/greet\"\n)\n\nfunc main() {\n\tfmt.Println(greet.Hello(\"world\"))\n}\n",
	"greet/greet.go": "// Package greet makes greetings.\npackage greet\n\n// Hello greets name.\nfunc Hello(name string) string { return \"hello, \" + name }\n",
}

// TestMCPFootprint reports, scripted and with no model, what
// server-everything and server-filesystem cost a model as direct tools:
// their declarations, each server alone and both, and footprintTask's ten
// calls both ways; and each server's API page beside its declarations,
// failing when the page is the larger.
//
//	go test -run TestMCPFootprint -v ./examples/mcpserver/
func TestMCPFootprint(t *testing.T) {
	node, modules, everything, filesystem := npmEntries(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ws, _ := dirs(t)
	for name, body := range footprintModule {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := writeConfig(t, map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{everything, "stdio"}},
		"files":      map[string]any{"command": node, "args": []string{filesystem, ws}},
	}})
	p, err := newPlane(config{workspace: ws, mcpConfig: cfg, mcpRead: []string{modules}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if len(p.MCPRefused) > 0 {
		t.Fatalf("refused: %v", p.MCPRefused)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var rows []string
	row := func(what string, f footprint) {
		rows = append(rows, fmt.Sprintf("| %s | %d | %d (≈%d tok) | %d | %d (≈%d tok) | %d (≈%d tok), %d of it an image's base64 |",
			what, f.tools, f.declared, f.declared/4, f.calls, f.sent, f.sent/4, f.received, f.received/4, f.images))
	}
	for _, servers := range [][]string{{"everything"}, {"files"}, {"everything", "files"}} {
		f, err := directFootprint(ctx, p, servers, nil)
		if err != nil || f.tools == 0 || f.declared == 0 {
			t.Fatalf("%v: %+v, %v", servers, f, err)
		}
		row("direct tools: "+strings.Join(servers, " + ")+", declarations", f)
	}
	f, err := directFootprint(ctx, p, []string{"everything", "files"}, footprintTask(ws))
	if err != nil {
		t.Fatal(err)
	}
	if f.calls != 10 || f.sent == 0 || f.received == 0 {
		t.Fatalf("the task: %+v", f)
	}
	row("direct tools: both, the 10-call task", f)
	// Each server's API page against its own tools' declarations: the
	// page (signatures, fields, docs, and the output types a declaration
	// does not even carry) is no larger.
	var pages []string
	for _, s := range []string{"everything", "files"} {
		d, err := directFootprint(ctx, p, []string{s}, nil)
		if err != nil {
			t.Fatal(err)
		}
		o := p.Registry.Dispatch(ctx, p.Call, "fs_read", []byte(`{"path":"cap://mcp/`+s+`"}`))
		if o.IsError {
			t.Fatalf("cap://mcp/%s: %s", s, o.Text)
		}
		pages = append(pages, fmt.Sprintf("| %s | %d | %d (≈%d tok) | %d (≈%d tok) |", s, d.tools, d.declared, d.declared/4, len(o.Text), len(o.Text)/4))
		if len(o.Text) > d.declared {
			t.Errorf("cap://mcp/%s is %d bytes, larger than the %d of its tools' declarations:\n%s", s, len(o.Text), d.declared, o.Text)
		}
	}
	cm, err := codeModeFootprint(ctx, p, []string{"everything", "files"}, ws)
	if err != nil {
		t.Fatal(err)
	}
	if cm.calls < 10 {
		t.Fatalf("the program made %d calls, all ok, want 10: %+v", cm.calls, cm)
	}
	row("code mode: both packages' API pages read once, one program making the 10 calls", cm)
	t.Logf("bytes a model is sent and writes (≈tok: bytes/4)\n| | tools | declared | calls | sent by the model | received by the model |\n|---|---|---|---|---|---|\n%s",
		strings.Join(rows, "\n"))
	t.Logf("each server's API page against its tools' declarations\n| server | tools | declarations | fs_read cap://mcp/<server> |\n|---|---|---|---|\n%s",
		strings.Join(pages, "\n"))
}
