package codemode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentloom/loom/codemode/internal/mcpgen"
	"github.com/agentloom/loom/tool"
)

// mcpPathPrefix begins the import path of every MCP server's package:
// a program imports "cap/mcp/<name>" (mcpgen.PackageName of the server).
const mcpPathPrefix = preludeModule + "/mcp/"

// mcpCapPrefix begins the name of every capability of an MCP server's
// package: "mcp.<package>.<function>".
const mcpCapPrefix = "mcp."

// Bounds of the MCP packages.
const (
	// mcpCallTimeout bounds one call of an MCP server's tool from a
	// program, well within maxCallTimeout: a server slower than that is
	// cut and the call answered codeCallTimeout.
	mcpCallTimeout = 30 * time.Second
	// mcpListTimeout bounds listing one server's tools at New.
	mcpListTimeout = 30 * time.Second
	// maxMCPSearchResults bounds the tools one cap://mcp?q= search shows.
	maxMCPSearchResults = 20
)

// MCPServer is one Model Context Protocol server a program calls through
// the package cap/mcp/<name> (Options.MCPServers). A *mcpclient.Client
// is one through package plane's adapter; codemode itself speaks no MCP.
// Implementations must be safe for concurrent use.
type MCPServer interface {
	// Name is the server's configured name; its package's name is
	// derived from it (letters and digits, lower-cased).
	Name() string
	// Tools lists the tools the server offers and Loom can call.
	Tools(ctx context.Context) ([]MCPTool, error)
	// Call calls the tool with args, a JSON object. A tool that reports
	// failure is a Result with IsError, not an error; an error carries a
	// code (tool.CodeOf) when it has one.
	Call(ctx context.Context, tool string, args json.RawMessage) (MCPResult, error)
}

// MCPTool is one tool of an MCP server as tools/list gives it.
type MCPTool struct {
	Name        string
	Title       string
	Description string
	// InputSchema and OutputSchema are the tool's JSON Schemas (nil: no
	// arguments, no declared structured content).
	InputSchema, OutputSchema json.RawMessage
	// Annotations are the server's hints, as JSON; shown, never trusted.
	Annotations json.RawMessage
	// ModelTool is the model tool calling this tool directly
	// (mcpclient.ToolName: mcp__<server>__<tool>). It authorizes the
	// tool's capability: a program may call the tool only when its
	// strand holds ModelTool. A tool without one is left out.
	ModelTool string
}

// MCPResult is a tool's answer: its structuredContent (nil when none),
// its content as text, and whether the tool reported failure.
type MCPResult struct {
	Structured json.RawMessage
	Text       string
	IsError    bool
}

// mcpPackage is the generated package of one server.
type mcpPackage struct {
	server MCPServer
	gen    *mcpgen.Package
	tools  []MCPTool              // offered, in the server's order
	rows   map[string]*capability // by capability name
}

// mcpRefusal is a server, or one of its tools, left out, and why.
type mcpRefusal struct {
	server, tool, path string // path: its package's import path, "" when none
	code               tool.Code
	reason             string
}

// mcpSet is an Engine's MCP packages.
type mcpSet struct {
	pkgs        []*mcpPackage // in Options.MCPServers order
	byPath      map[string]*mcpPackage
	refused     []mcpRefusal
	callTimeout time.Duration
}

// generatedSource is one package the builder compiles with a program
// that imports it: its import path and source.
type generatedSource struct {
	path string
	src  []byte
}

// newMCPSet lists each server's tools (each within mcpListTimeout) and
// generates its package. A server whose package name another server's
// took, that cannot be listed, or none of whose tools reg registers, is
// left out with why; so is each tool mcpgen refuses or without a
// ModelTool. std are the standard packages the builder links (nil: all):
// a generated package needs context and encoding/json.
func newMCPSet(servers []MCPServer, reg *tool.Registry, std []string) *mcpSet {
	set := &mcpSet{byPath: map[string]*mcpPackage{}, callTimeout: mcpCallTimeout}
	refuse := func(server, path string, code tool.Code, reason string) {
		set.refused = append(set.refused, mcpRefusal{server: server, path: path, code: code, reason: reason})
	}
	for _, s := range servers {
		name := s.Name()
		pkgName, err := mcpgen.PackageName(name)
		if err != nil {
			refuse(name, "", tool.CodeOf(err), err.Error())
			continue
		}
		path := mcpPathPrefix + pkgName
		if other := set.byPath[path]; other != nil {
			refuse(name, path, codeMCPPackageClash, fmt.Sprintf("the MCP server %s would be the package %s, which the server %s is already", quoteArg(name), path, quoteArg(other.server.Name())))
			continue
		}
		if std != nil && (!slices.Contains(std, "context") || !slices.Contains(std, "encoding/json")) {
			refuse(name, path, CodeBuildUnavailable, "a generated MCP package needs the standard packages context and encoding/json, which BuilderOptions.StdPackages leaves out")
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), mcpListTimeout)
		tools, err := s.Tools(ctx)
		cancel()
		if err != nil {
			refuse(name, path, mcpCode(err), "its tools could not be listed: "+err.Error())
			continue
		}
		var in []mcpgen.Tool
		byName := map[string]MCPTool{}
		for _, t := range tools {
			if t.ModelTool == "" {
				set.refused = append(set.refused, mcpRefusal{server: name, tool: t.Name, path: path, code: codeMCPToolUnauthorized, reason: "no model tool authorizes it"})
				continue
			}
			byName[t.Name] = t
			in = append(in, mcpgen.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations})
		}
		gen, err := mcpgen.Generate(name, in)
		if err != nil {
			refuse(name, path, tool.CodeOf(err), err.Error())
			continue
		}
		if reason := vetGenerated(gen.Name, gen.Source); reason != "" {
			refuse(name, path, mcpgen.CodeGeneratorFault, reason)
			continue
		}
		for _, r := range gen.Refused {
			set.refused = append(set.refused, mcpRefusal{server: name, tool: r.Tool, path: path, code: r.Code, reason: r.Message})
		}
		p := &mcpPackage{server: s, gen: gen, rows: map[string]*capability{}}
		registered := false
		for _, c := range gen.Capabilities {
			t := byName[c.Tool]
			p.tools = append(p.tools, t)
			p.rows[c.Name] = &capability{name: c.Name, authorizedBy: []string{t.ModelTool}, serve: p.serve(c.Tool),
				summary: summarize(func(map[string]any) string { return "server=" + quoteArg(name) + " tool=" + quoteArg(c.Tool) })}
			if _, ok := reg.Lookup(t.ModelTool); ok {
				registered = true
			}
		}
		if !registered {
			refuse(name, path, codeMCPToolUnauthorized, "none of its tools is registered as a model tool (mcpclient.Register), so no strand could call one")
			continue
		}
		set.pkgs = append(set.pkgs, p)
		set.byPath[path] = p
	}
	return set
}

// mcpCode is err's code, or codeMCPFailed.
func mcpCode(err error) tool.Code {
	if c := tool.CodeOf(err); c != "" {
		return c
	}
	return codeMCPFailed
}

// paths are the import paths of the set's packages, in order.
func (s *mcpSet) paths() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.pkgs))
	for i, p := range s.pkgs {
		out[i] = p.gen.Path
	}
	return out
}

// row is the capability of name, or nil.
func (s *mcpSet) row(name string) *capability {
	if s == nil || !strings.HasPrefix(name, mcpCapPrefix) {
		return nil
	}
	if p := s.byPath[capPackagePath(name)]; p != nil {
		return p.rows[name]
	}
	return nil
}

// imported is the generated sources of the packages imports names, in
// import path order.
func (s *mcpSet) imported(imports []string) []generatedSource {
	if s == nil {
		return nil
	}
	var out []generatedSource
	for _, path := range imports {
		if p := s.byPath[path]; p != nil {
			out = append(out, generatedSource{path: path, src: p.gen.Source})
		}
	}
	return out
}

// withheld says why path, an MCP package path, is not offered.
func (s *mcpSet) withheld(path string) string {
	if s != nil {
		for _, r := range s.refused {
			if r.path == path && r.tool == "" {
				return fmt.Sprintf("the MCP server %s is left out (%s: %s)", quoteArg(r.server), r.code, r.reason)
			}
		}
	}
	offered := "none"
	if ps := s.paths(); len(ps) > 0 {
		offered = strings.Join(ps, ", ")
	}
	return fmt.Sprintf("no configured MCP server is the package %s; this host's MCP packages are %s (fs_read cap://mcp lists them)", path, offered)
}

// serve is the handler of the capability calling the server's tool
// name: the args decoded into the JSON object, the call bounded by the
// set's callTimeout, the answer as mcpgen.Answer shapes it.
func (p *mcpPackage) serve(name string) func(h *seamHost, ctx context.Context, a *capArgs) (any, error) {
	return func(h *seamHost, ctx context.Context, a *capArgs) (any, error) {
		args, err := mcpgen.DecodeArguments(a.m)
		if err != nil {
			return nil, &CapError{Code: codeInvalidCapabilityArguments, Message: a.cap + ": " + err.(*mcpgen.Error).Message}
		}
		bound := h.mcp.callTimeout
		ctx, cancel := context.WithTimeoutCause(ctx, bound, errMCPCallTimeout)
		defer cancel()
		res, err := p.server.Call(ctx, name, args)
		if errors.Is(context.Cause(ctx), errMCPCallTimeout) {
			return nil, &CapError{Code: codeCallTimeout, Message: fmt.Sprintf("%s: the MCP server %s did not answer its tool %s within %s, the bound of one MCP tool call", a.cap, quoteArg(p.server.Name()), quoteArg(name), bound)}
		}
		if err != nil {
			return nil, &CapError{Code: mcpCode(err), Message: a.cap + ": " + err.Error()}
		}
		ans, err := mcpgen.Answer(mcpgen.CallResult{Structured: res.Structured, Text: res.Text, IsError: res.IsError})
		if err != nil {
			e := err.(*mcpgen.Error)
			return nil, &CapError{Code: e.Code, Message: e.Message}
		}
		return ans, nil
	}
}

// errMCPCallTimeout is the cause of an MCP tool call cut at its bound.
var errMCPCallTimeout = errors.New("the MCP tool call ran past its bound")

// capPackagePath is the import path of the package whose capability name
// is: "cap/fs" for "fs.read", "cap/mcp/github" for
// "mcp.github.create_issue".
func capPackagePath(name string) string {
	if rest, ok := strings.CutPrefix(name, mcpCapPrefix); ok {
		pkg, _, _ := strings.Cut(rest, ".")
		return mcpPathPrefix + pkg
	}
	p, _, _ := strings.Cut(name, ".")
	return preludeModule + "/" + p
}

// isMCPPath reports an MCP package's import path.
func isMCPPath(path string) bool { return strings.HasPrefix(path, mcpPathPrefix) }

// mcpDescription is the description's paragraph on the MCP packages:
// each server with its tool count, never its tools. "" without one.
func (s *mcpSet) description() string {
	if s == nil || len(s.pkgs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("MCP servers, each a package of one function per tool (on your authority: a tool you may not call directly is refused): ")
	for i, p := range s.pkgs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "import %q (%s, %d tools)", p.gen.Path, quoteArg(p.server.Name()), len(p.tools))
	}
	fmt.Fprintf(&b, ". Read a package's API with fs_read cap://mcp/<name>; find tools by words with fs_read \"cap://mcp?q=<words>\". Each tool call ends within %d s.\n", int(mcpCallTimeout.Seconds()))
	return b.String()
}

// ReadMCP answers an fs_read of the MCP packages, and ok false for any
// other cap:// path (the prelude's, which Scheme serves):
//
//   - "cap://mcp" lists each server's package, its tool count, and the
//     servers and tools left out with why;
//   - "cap://mcp/<name>" (or "cap://cap/mcp/<name>") shows the package's
//     API page (mcpgen.Package.API: signatures, the types they name with
//     their fields' JSON names, optionality and docs), at most 64 KiB;
//   - "cap://mcp?q=<words>" finds tools whose name, title or description
//     hold every word (case-insensitive), at most 20, each with its
//     package, function and description's first line.
//
// Reads change nothing and are replay-safe.
func (e *Engine) ReadMCP(uri string) (tool.Outcome, bool) {
	rest, ok := strings.CutPrefix(uri, capSchemePrefix)
	if !ok {
		return tool.Outcome{}, false
	}
	rest = strings.TrimPrefix(strings.Trim(rest, "/"), preludeModule+"/")
	switch {
	case rest == "mcp":
		return tool.Success(e.mcp.index()), true
	case strings.HasPrefix(rest, "mcp?"):
		q := strings.TrimPrefix(rest, "mcp?")
		q = strings.TrimPrefix(q, "q=")
		return tool.Success(e.mcp.search(q)), true
	case strings.HasPrefix(rest, "mcp/"):
	default:
		return tool.Outcome{}, false
	}
	path := preludeModule + "/" + rest
	p := e.mcp.byPath[path]
	if p == nil {
		return tool.Fail(CodeUnknownCapPackage, e.mcp.withheld(path)), true
	}
	return tool.Success(boundDoc(string(p.gen.API), maxCapDocBytes)), true
}

// index is cap://mcp.
func (s *mcpSet) index() string {
	var b strings.Builder
	b.WriteString("MCP packages (a code_mode program imports them by these paths; fs_read cap://mcp/<name> shows one's API, fs_read \"cap://mcp?q=<words>\" finds tools):\n")
	if s == nil || len(s.pkgs) == 0 {
		b.WriteString("(none)\n")
	}
	if s == nil {
		return b.String()
	}
	for _, p := range s.pkgs {
		fmt.Fprintf(&b, "%s  the MCP server %s, %d tools\n", p.gen.Path, quoteArg(p.server.Name()), len(p.tools))
	}
	if len(s.refused) > 0 {
		b.WriteString("Left out:\n")
		for _, r := range s.refused {
			what := "the server " + quoteArg(r.server)
			if r.tool != "" {
				what = "the tool " + quoteArg(r.tool) + " of " + quoteArg(r.server)
			}
			fmt.Fprintf(&b, "%s: %s: %s\n", what, r.code, r.reason)
		}
	}
	return b.String()
}

// search is cap://mcp?q=words.
func (s *mcpSet) search(q string) string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return r == ' ' || r == '+' || r == ',' })
	if len(words) == 0 {
		return "give words to look for: fs_read \"cap://mcp?q=<words>\" finds the tools whose name, title or description hold every one\n"
	}
	type hit struct {
		pkg  *mcpPackage
		c    mcpgen.Capability
		t    MCPTool
		rank int
	}
	var hits []hit
	if s != nil {
		for _, p := range s.pkgs {
			for i, c := range p.gen.Capabilities {
				t := p.toolNamed(c.Tool, i)
				name := strings.ToLower(t.Name + " " + c.Func)
				text := strings.ToLower(t.Title + " " + t.Description)
				rank, all := 0, true
				for _, w := range words {
					switch {
					case strings.Contains(name, w):
						rank += 2
					case strings.Contains(text, w):
						rank++
					default:
						all = false
					}
				}
				if all {
					hits = append(hits, hit{p, c, t, rank})
				}
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].rank > hits[j].rank })
	var b strings.Builder
	fmt.Fprintf(&b, "%d tools match %s", len(hits), quoteArg(q))
	if len(hits) > maxMCPSearchResults {
		fmt.Fprintf(&b, " (the first %d shown; add words to narrow)", maxMCPSearchResults)
		hits = hits[:maxMCPSearchResults]
	}
	b.WriteString(":\n")
	for _, h := range hits {
		line, _, _ := strings.Cut(strings.TrimSpace(h.t.Description), "\n")
		if len(line) > 160 {
			line = strings.ToValidUTF8(line[:160], "") + "…"
		}
		fmt.Fprintf(&b, "%s.%s  (tool %s of %s) %s\n", h.pkg.gen.Path, h.c.Func, quoteArg(h.t.Name), quoteArg(h.pkg.server.Name()), line)
	}
	return b.String()
}

// toolNamed is the offered tool called name (i: its likely index).
func (p *mcpPackage) toolNamed(name string, i int) MCPTool {
	if i < len(p.tools) && p.tools[i].Name == name {
		return p.tools[i]
	}
	for _, t := range p.tools {
		if t.Name == name {
			return t
		}
	}
	return MCPTool{Name: name}
}

// sourceDigest is the hex SHA-256 over the generated sources, each its
// path, a NUL, its length and its bytes: mixed into a binary's key, so
// other schemas give another binary.
func sourceDigest(srcs []generatedSource) string {
	h := sha256.New()
	for _, g := range srcs {
		fmt.Fprintf(h, "%s\x00%d\x00", g.path, len(g.src))
		h.Write(g.src)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// vetted completes vetting's answer with the Engine's MCP packages: a
// program's generated packages to build with it, or, in a refusal, why
// an MCP package it imports is not offered.
func (e *Engine) vetted(p *Program, err error) (*Program, error) {
	var ve *VetError
	switch {
	case err == nil:
		p.generated = e.mcp.imported(p.Imports)
	case errors.As(err, &ve):
		ve.withheld = e.mcp.withheld
	}
	return p, err
}

// generatedImports are the only imports a generated package may have.
var generatedImports = []string{"context", "encoding/json", preludeModule + "/internal/client"}

// vetGenerated checks a generated package's source as vetting checks a
// program, though mcpgen writes it from a server's hostile tool list: it
// parses as the package name, imports only generatedImports, and holds
// no comment the compiler honours (//go:…, //line). The reason, or "".
// (A "+build" line is harmless here: the compiler, called directly,
// reads no build constraint.)
func vetGenerated(name string, src []byte) string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name+".go", src, parser.ParseComments)
	switch {
	case err != nil:
		return "the generated source does not parse: " + err.Error()
	case f.Name.Name != name:
		return "the generated package is named " + f.Name.Name
	}
	for _, spec := range f.Imports {
		if p, err := strconv.Unquote(spec.Path.Value); err != nil || !slices.Contains(generatedImports, p) {
			return "the generated source imports " + spec.Path.Value
		}
	}
	for _, g := range f.Comments {
		for _, c := range g.List {
			if r := commentRule(c.Text); r == ruleDirectiveComment || r == ruleLineDirective {
				return fmt.Sprintf("the generated source holds a compiler directive (%s) at %s", r, fset.Position(c.Pos()))
			}
		}
	}
	return ""
}
