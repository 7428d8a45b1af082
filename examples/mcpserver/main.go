// Command mcpserver serves Loom's whole tool plane (plane) to an MCP
// client over standard input and output: the hashline file tools
// (fs_read, fs_write, fs_edit), working_directory, grep, the jailed bash
// shell with the background job tools (job_poll, job_kill, job_send),
// history_search and remember over a history index kept per workspace,
// todo, and code_mode (one Go program run in an empty jail, reaching the
// workspace through the cap/... packages; in the foreground or launched
// in the background), all confined to one workspace directory. The
// agent_* tools are left out: a sub-agent needs a model loop of its own,
// which an MCP server does not have (the client is the model's loop), so
// code_mode serves the workspace seam alone.
//
//	go run ./examples/mcpserver -workspace /path/to/project
//
// The jail is on: commands run under the broker's kernel jail (user,
// mount and network namespaces, Landlock, seccomp), may write only inside
// the workspace and the session's scratch directory, never into
// .git/hooks or .git/config, and have no network. A command that asks for
// more (bash's or code_mode's permissions) is put to the client's user as
// an MCP elicitation question and runs with exactly that access, for that
// call only, when the user accepts; otherwise it is refused in band, saying
// why. When the host offers no confinement layer at all, commands are
// refused unless -allow-unconfined is given. See README.md for the client
// configuration.
//
// Nothing of the server's own lives in the workspace: the blob store
// (overflowing output) is in the user cache directory
// (<cache>/loom/blobs, or -blobs), bounded to 1 GiB shared by every
// server using it (-blobs-max-mib; the least recently used blobs no live
// session holds are evicted) and 256 MiB per session
// (-blobs-session-mib; past it output shows as excerpts only), the
// history index is
// <cache>/loom/history/workspace-<digest>.sqlite (or -history), and the
// scratch directory commands see as TMPDIR is a fresh directory under
// <cache>/loom/scratch (or -scratch), removed when the server exits. A
// blob store, history index or scratch directory inside the workspace is
// refused. Toolchains get caches of their own there too: for each of go,
// npm and pip found on the commands' PATH, a toolchain profile (package
// toolchain) gives commands a persistent cache under
// <cache>/loom/toolchains and, for Go, the modules of the host's module
// cache without network; HOME is a private directory in the scratch
// directory. The server says at start which profiles it applied.
//
// fs_write and fs_edit append a language server's diagnostics of the file
// they wrote when one owns it: gopls when it is on the commands' PATH, in
// $GOBIN or in $GOPATH/bin (detected, never required), run jailed with
// the workspace read-only and started at the first write of a Go file.
// The server says at start which language servers it found.
//
// -mcp-config names a JSON file in the form every MCP host reads (Claude
// Desktop, Claude Code, Cursor): {"mcpServers": {"<name>": {"command":
// ..., "args": [...], "env": {...}} or {"url": ...}}}. Each server's tools
// are served beside the plane's, named mcp__<name>__<tool>. A stdio
// server runs in the jail (package mcpclient): the workspace read-only,
// its own home and TMPDIR in the scratch directory, no network, none of
// the server's environment but PATH, LANG and TERM; npm's cache when its
// command is node or npx. The file widens no jail: only this command
// line does, -mcp-read giving every stdio server a further read-only
// directory (a server installed with npm install --prefix, say) and
// -mcp-network a named server the network. The server says at start
// which MCP servers it started, with their tools, and why any was
// refused.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/mcpclient"
	"github.com/agentloom/loom/mcpserve"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// scratchDir is where per-session scratch directories are made, under
// the user cache directory.
const scratchDir = plane.ScratchParent

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.workspace, "workspace", ".", "the directory the tools work in (default: the current directory)")
	fs.StringVar(&cfg.blobs, "blobs", "", "where overflowing output is stored, outside the workspace (default: <user cache>/loom/blobs)")
	fs.Int64Var(&cfg.blobsMaxMiB, "blobs-max-mib", blob.DefaultMaxBytes>>20, "the blob store's budget in MiB, shared by every server on the same store: past it the least recently used blobs no live session holds are evicted")
	fs.Int64Var(&cfg.blobsSessionMiB, "blobs-session-mib", blob.DefaultSessionBytes>>20, "this session's budget in MiB of overflowing output kept in the blob store: past it output is shown as head and tail excerpts only")
	fs.StringVar(&cfg.history, "history", "", "the history index file, outside the workspace (default: <user cache>/loom/history/workspace-<digest>.sqlite)")
	fs.StringVar(&cfg.scratch, "scratch", "", "the scratch directory commands see as TMPDIR, kept on exit (default: a fresh directory under <user cache>/loom/scratch, removed on exit)")
	fs.BoolVar(&cfg.allowUnconfined, "allow-unconfined", false, "run commands even when this host offers no confinement layer at all")
	fs.BoolVar(&cfg.warm, "warm", true, "build code_mode's toolchain archives at start (once per toolchain, cached under <user cache>/loom/codemode), not at the first program")
	fs.StringVar(&cfg.mcpConfig, "mcp-config", "", `a JSON file of MCP servers whose tools are served too, as mcp__<server>__<tool>: {"mcpServers": {"<name>": {"command": "...", "args": [...], "env": {...}} or {"url": "..."}}}, the form Claude Desktop, Claude Code and Cursor read; stdio servers run jailed`)
	fs.Func("mcp-read", "a directory every stdio MCP server may read (its interpreter's packages, say), never write; repeatable", func(v string) error {
		if !filepath.IsAbs(v) {
			return fmt.Errorf("%q is not an absolute path", v)
		}
		dir, err := filepath.EvalSymlinks(v)
		if err != nil {
			return err
		}
		cfg.mcpRead = append(cfg.mcpRead, dir)
		return nil
	})
	fs.Func("mcp-network", "the name of a stdio MCP server that may reach the network (all are jailed without it); repeatable", func(v string) error {
		cfg.mcpNetwork = append(cfg.mcpNetwork, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.blobsMaxMiB <= 0 || cfg.blobsSessionMiB <= 0 || cfg.blobsMaxMiB > maxBudgetMiB || cfg.blobsSessionMiB > maxBudgetMiB {
		return fmt.Errorf("-blobs-max-mib and -blobs-session-mib must be between 1 and %d", maxBudgetMiB)
	}
	p, err := newPlane(cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	fmt.Fprintln(stderr, "mcpserver:", toolchains(p))
	fmt.Fprintln(stderr, "mcpserver:", languageServers(p))
	for _, line := range mcpServers(p) {
		fmt.Fprintln(stderr, "mcpserver:", line)
	}
	srv, err := mcpserve.New(p.Registry, p.Call, mcpserve.Options{
		Name:                   "loom",
		Instructions:           instructions(p),
		ApproveWithElicitation: true,
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// code_mode's toolchain warm-up, while the client connects; a
	// program that comes first waits for it.
	if cfg.warm {
		go p.CodeMode.Warm(ctx)
	}
	if err := srv.ServeStdio(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// instructions are the server instructions a client may show its model.
func instructions(p *plane.Plane) string {
	return "Tools over the workspace " + p.Call.Workspace + ". Read files with fs_read before editing them with fs_edit. " +
		"Commands and code_mode programs run in a jail; bash's and code_mode's permissions are asked of the user, for that one call." +
		mcpNote(p)
}

// mcpNote tells the model where the MCP servers' tools are, when any run.
func mcpNote(p *plane.Plane) string {
	if len(p.MCP) == 0 {
		return ""
	}
	return " Tools named mcp__<server>__<tool> are those of the MCP server <server>, run jailed with the workspace read-only."
}

// toolchains says which toolchain profiles commands get.
func toolchains(p *plane.Plane) string {
	if len(p.Toolchains) == 0 {
		return "no toolchain profiles (no go, npm or pip on the commands' PATH)"
	}
	var names, caches, notes []string
	for _, tc := range p.Toolchains {
		names = append(names, tc.Name)
		caches = append(caches, tc.Caches...)
		for _, n := range tc.Notes {
			notes = append(notes, tc.Name+": "+n)
		}
	}
	s := "toolchain profiles: " + strings.Join(names, ", ") + "; their caches: " + strings.Join(caches, ", ")
	if len(notes) > 0 {
		s += "; " + strings.Join(notes, "; ")
	}
	return s
}

// languageServers says which language servers diagnose the files the
// tools write.
func languageServers(p *plane.Plane) string {
	if p.LanguageServers == nil {
		return "no language servers (no gopls on the commands' PATH, in $GOBIN or in $GOPATH/bin): writes answer without diagnostics"
	}
	var found []string
	for _, s := range p.LanguageServers.Servers() {
		var pats []string
		for _, f := range s.Files {
			pats = append(pats, f.Pattern)
		}
		found = append(found, fmt.Sprintf("%s (%s, for %s)", s.Name, s.Command[0], strings.Join(pats, " ")))
	}
	return "language servers, started at the first write of a file they own: " + strings.Join(found, ", ")
}

// mcpServers says which MCP servers run and how many tools each gave,
// then each server refused and each tool left out, with why; nothing
// when -mcp-config names none.
func mcpServers(p *plane.Plane) []string {
	if len(p.MCP) == 0 {
		return nil
	}
	failed := map[string]bool{}
	for _, e := range p.MCPRefused {
		if e.Tool == "" {
			failed[e.Server] = true
		}
	}
	names := p.Registry.Names()
	var started []string
	for _, c := range p.MCP {
		prefix := mcpclient.ToolName(c.Name(), "")
		n := 0
		for _, name := range names {
			if strings.HasPrefix(name, prefix) {
				n++
			}
		}
		if n == 0 && failed[c.Name()] {
			continue // it could not be listed
		}
		started = append(started, fmt.Sprintf("%s (%d tools, %s*)", c.Name(), n, prefix))
	}
	var out []string
	if len(started) > 0 {
		out = append(out, "MCP servers: "+strings.Join(started, ", "))
	} else {
		out = append(out, "MCP servers: none started")
	}
	for _, e := range p.MCPRefused {
		if e.Tool == "" {
			out = append(out, fmt.Sprintf("MCP server %s refused (%s): %s", e.Server, e.Code, e.Reason))
		} else {
			out = append(out, fmt.Sprintf("MCP server %s: tool %q left out (%s): %s", e.Server, e.Tool, e.Code, e.Reason))
		}
	}
	return out
}

// mcpConfig reads the -mcp-config file, and grants its stdio servers
// what -mcp-read and -mcp-network say: the file never widens a jail.
func mcpConfig(cfg config) ([]mcpclient.Server, error) {
	if cfg.mcpConfig == "" {
		if len(cfg.mcpRead) > 0 || len(cfg.mcpNetwork) > 0 {
			return nil, errors.New("-mcp-read and -mcp-network need -mcp-config")
		}
		return nil, nil
	}
	f, err := os.Open(cfg.mcpConfig)
	if err != nil {
		return nil, fmt.Errorf("-mcp-config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, mcpclient.MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("-mcp-config: %w", err)
	}
	servers, err := mcpclient.ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("-mcp-config %s: %w", cfg.mcpConfig, err)
	}
	for _, n := range cfg.mcpNetwork {
		if !slices.ContainsFunc(servers, func(s mcpclient.Server) bool { return s.Name == n && s.Stdio() }) {
			return nil, fmt.Errorf("-mcp-network %q: %s names no such stdio server", n, cfg.mcpConfig)
		}
	}
	for i := range servers {
		if servers[i].Stdio() {
			servers[i].Grant.ReadOnly = slices.Clone(cfg.mcpRead)
			servers[i].Grant.Network = slices.Contains(cfg.mcpNetwork, servers[i].Name)
		}
	}
	return servers, nil
}

// config is what the flags choose.
type config struct {
	workspace, blobs, history, scratch string
	blobsMaxMiB, blobsSessionMiB       int64
	allowUnconfined                    bool
	warm                               bool
	mcpConfig                          string
	mcpRead, mcpNetwork                []string
}

// maxBudgetMiB bounds the blob budget flags (1 PiB), so a budget in
// bytes cannot overflow.
const maxBudgetMiB = 1 << 30

// newPlane assembles the plane every request is served from: every
// family (agents as todo alone: no model runs a sub-agent here) on the
// strand mcpserve.DefaultStrand, with the plane's default session policy
// (commands read the system directories and the workspace, write the
// workspace and the scratch directory only, network off, .git hooks and
// config protected), a broker running the jail, and the blob store,
// history index and scratch directory outside the workspace. A call
// under any other strand (a host bug) is refused before it runs.
func newPlane(cfg config) (*plane.Plane, error) {
	ws, err := workspaceOf(cfg.workspace)
	if err != nil {
		return nil, err
	}
	servers, err := mcpConfig(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.scratch != "" {
		// Refused before anything is made there.
		abs, err := filepath.Abs(cfg.scratch)
		if err != nil {
			return nil, fmt.Errorf("scratch: %w", err)
		}
		if within(ws, abs) {
			return nil, scratchInWorkspace(abs, ws)
		}
	}
	p, err := plane.New(plane.Config{
		Workspace:     ws,
		Strand:        mcpserve.DefaultStrand,
		Scratch:       cfg.scratch,
		BlobDir:       cfg.blobs,
		BlobOptions:   blob.Options{MaxBytes: cfg.blobsMaxMiB << 20, SessionBytes: cfg.blobsSessionMiB << 20},
		HistoryPath:   cfg.history,
		BrokerOptions: broker.Options{AllowUnconfined: cfg.allowUnconfined},
		MCPServers:    servers,
	})
	if err != nil {
		if tool.CodeOf(err) == plane.CodeStoreInWorkspace {
			return nil, fmt.Errorf("%w (choose another with -blobs or -history)", err)
		}
		return nil, err
	}
	if within(p.Call.Workspace, p.Call.Scratch()) {
		// The named directory resolved into the workspace through a link.
		p.Close()
		return nil, scratchInWorkspace(p.Call.Scratch(), p.Call.Workspace)
	}
	ref, _ := p.Agency.(*agent.Reference)
	strand := p.Call.Strand
	p.Registry.SetHolds(func(ctx context.Context, s, name string) bool {
		return s == strand && (ref == nil || ref.Holds(ctx, agent.Caller{Strand: s}, name) == nil)
	})
	return p, nil
}

func scratchInWorkspace(scratch, ws string) error {
	return fmt.Errorf("scratch directory %s is inside the workspace %s, where a command could swap it for a link; choose a directory outside it with -scratch, or omit -scratch for a private one in the user cache", scratch, ws)
}

// workspaceOf resolves the workspace flag, links included; it must be a
// directory.
func workspaceOf(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	ws, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	if fi, err := os.Stat(ws); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("workspace %s is not a directory", ws)
	}
	return ws, nil
}

// within reports whether p is root or beneath it; both are clean and
// absolute.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}
