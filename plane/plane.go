package plane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/history/postgres"
	"github.com/agentloom/loom/history/sqlite"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/lsp"
	"github.com/agentloom/loom/mcpclient"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/tool"
	"github.com/agentloom/loom/toolchain"
)

// closeWait bounds how long Close waits for the job plane it made to kill
// and reap what still runs.
const closeWait = 10 * time.Second

// Plane is one session's assembled tool plane. Its fields are set by New
// and must not be reassigned; the Call template's host-side hooks
// (ObserveOutput, RaiseRefusal, Now) may be set before the first call.
type Plane struct {
	// Registry holds every tool of the configured families, in the order
	// FamilyFiles, FamilyGrep, FamilyShell, FamilyHistory, FamilyAgents,
	// FamilyHost, FamilyCodeMode (each family in the order its package
	// lists it).
	Registry *tool.Registry
	// Call is the root strand's session template: workspace, strand,
	// base policy, environment, scratch directory, shell directory,
	// broker and blob store. Copy it per call with At, or let Dispatcher
	// do it.
	Call *tool.Call
	// Broker, Blobs and Jobs are the infrastructure the tools share: the
	// host's own where the Config named them, else the plane's.
	Broker *broker.Broker
	Blobs  *blob.Store
	Jobs   job.Jobs
	// Store is the reference history index New opened, which the host
	// feeds with Index or IndexBatch as its session log grows (history_search
	// finds only what was indexed); nil when the host brought both
	// History and Memory, or left FamilyHistory out.
	Store *sqlite.Store
	// PostgresStore is the PostgreSQL index New opened instead of Store
	// when Config.HistoryURL is set; the host feeds it the same way.
	PostgresStore *postgres.Store
	// Agency is the seam behind FamilyAgents: the host's, or the
	// reference agent.Reference New made; nil without FamilyAgents.
	Agency agent.Agency
	// CodeMode is the engine behind code_mode, for hosts that drive its
	// stages themselves; nil without FamilyCodeMode.
	CodeMode *codemode.Engine
	// MaxParallel is the Dispatcher's bound (Config.MaxParallel, defaults
	// applied).
	MaxParallel int
	// Toolchains are the toolchain profiles applied to every command,
	// their caches made and resolved (see Config.Toolchains).
	Toolchains []toolchain.Profile
	// LanguageServers runs the language servers whose diagnostics
	// fs_write and fs_edit append (see Config.LanguageServers); its
	// Servers method says which are configured and how each runs. Nil
	// when none is configured or FamilyFiles is left out. Close shuts
	// them down.
	LanguageServers *lsp.Plane
	// MCP are the clients of Config.MCPServers, in its order; MCPRefused
	// says each server that could not be listed and each tool left out.
	MCP        []*mcpclient.Client
	MCPRefused []*mcpclient.Error

	fence   Fence
	mu      sync.Mutex
	shells  map[string]*tool.Shell
	closers []func() error
	once    sync.Once
	closed  error
}

// New assembles the plane cfg describes. On failure it returns an *Error
// (read its code with tool.CodeOf) and has released everything it made.
func New(cfg Config) (*Plane, error) {
	p := &Plane{shells: map[string]*tool.Shell{}}
	if err := p.build(cfg); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Plane) build(cfg Config) error {
	ws, err := workspaceOf(cfg.Workspace)
	if err != nil {
		return err
	}
	fam := cfg.Families
	if fam == 0 {
		fam = AllFamilies
	}
	strand := cfg.Strand
	if strand == "" {
		strand = DefaultStrand
	}
	scratch, err := p.scratch(cfg.Scratch)
	if err != nil {
		return err
	}
	env := maps.Clone(cfg.Env)
	if env == nil {
		home := filepath.Join(scratch, "home")
		if err := os.MkdirAll(home, 0o700); err != nil {
			return fail(CodeSetupFailed, "home directory", err)
		}
		env = DefaultEnv(home)
	}
	if err := p.toolchains(cfg, ws, env["PATH"]); err != nil {
		return err
	}
	for _, tc := range p.Toolchains {
		for k, v := range tc.Env {
			if _, set := env[k]; !set {
				env[k] = v
			}
		}
	}
	base := DefaultPolicy(ws, scratch, env)
	for _, tc := range p.Toolchains {
		base.SystemRoots = append(base.SystemRoots, tc.ReadOnly...)
		base.WritableRoots = append(base.WritableRoots, tc.Caches...)
		base.Unguarded = append(base.Unguarded, tc.Caches...)
	}
	if cfg.Policy != nil {
		base = cfg.Policy(base)
	}
	if err := sandbox.Validate(base); err != nil {
		return fail(CodePolicyInvalid, "base policy", err)
	}
	if !writable(ws, base, scratch) {
		return fail(CodePolicyInvalid, "base policy", fmt.Errorf("the scratch directory %s is neither in the workspace nor under a writable root", scratch))
	}
	if err := p.openBlobs(cfg, ws); err != nil {
		return err
	}
	p.Broker = cfg.Broker
	if p.Broker == nil {
		p.Broker = broker.New(cfg.BrokerOptions)
		p.closers = append(p.closers, p.Broker.Close)
	}
	p.MaxParallel = cfg.MaxParallel
	if p.MaxParallel <= 0 {
		p.MaxParallel = DefaultMaxParallel
	}

	var govern *agent.Reference
	if fam.Has(FamilyAgents) {
		p.Agency = cfg.Agency
		if p.Agency == nil {
			govern = agent.NewAgency(cfg.Runner, cfg.AgentOptions)
			p.Agency = govern
			p.closers = append(p.closers, govern.Close)
		}
	}
	var tools []tool.Tool
	var schemes []tool.Scheme
	if fam.Has(FamilyAgents) && (cfg.Agency != nil || cfg.Runner != nil) {
		schemes = append(schemes, agent.NoteScheme(p.Agency))
	}
	if fam.Has(FamilyShell) {
		p.openJobs(cfg)
		schemes = append(schemes, job.Scheme(p.Jobs))
	}
	if fam.Has(FamilyCodeMode) {
		schemes = append(schemes, p.withMCP(codemode.Scheme(schemeSeam(fam.Has(FamilyAgents) && (cfg.Agency != nil || cfg.Runner != nil)))))
	}
	if fam.Has(FamilyFiles) {
		var diag tool.Diagnostics
		if err := p.openLanguageServers(cfg, ws, base, env, scratch); err != nil {
			return err
		}
		if p.LanguageServers != nil {
			diag = p.LanguageServers
		}
		tools = append(tools, tool.ReadTool(schemes...), tool.WriteTool(diag), tool.EditTool(diag), tool.WorkdirTool())
	}
	if fam.Has(FamilyGrep) {
		tools = append(tools, tool.GrepTool())
	}
	if fam.Has(FamilyShell) {
		tools = append(tools, job.BashTool(p.Jobs))
		tools = append(tools, job.Tools(p.Jobs)...)
	}
	if fam.Has(FamilyHistory) {
		h, m, err := p.openHistory(cfg, ws)
		if err != nil {
			return err
		}
		tools = append(tools, history.SearchTool(h, cfg.SessionOf), history.RememberTool(m, cfg.SessionOf))
	}
	if fam.Has(FamilyAgents) {
		if cfg.Agency == nil && cfg.Runner == nil {
			tools = append(tools, agent.TodoTool(p.Agency))
		} else {
			tools = append(tools, agent.Tools(p.Agency)...)
		}
	}
	if fam.Has(FamilyHost) {
		tools = append(tools, hostTools(cfg)...)
	}
	if p.Registry, err = tool.NewRegistry(tools...); err != nil {
		return fail(CodeSetupFailed, "registry", err)
	}
	if err := p.openMCP(cfg, ws, base, env, scratch); err != nil {
		return err
	}
	if govern != nil {
		govern.Govern(p.Registry)
	}
	if fam.Has(FamilyCodeMode) {
		if err := p.openCodeMode(cfg); err != nil {
			return err
		}
	}
	if err := p.cachesApartFromStores(scratch); err != nil {
		return err
	}
	p.Call = &tool.Call{
		Workspace: ws,
		Strand:    strand,
		Base:      base,
		Env:       env,
		TempDir:   scratch,
		Shell:     p.shellOf(strand),
		Broker:    p.Broker,
		Blobs:     p.Blobs,
	}
	// Pin the session's roots now, before any command could move one.
	p.Call.At("", "", 0)
	return nil
}

// CallFor returns a copy of the session template for strand calling in
// operation opID: what a Runner dispatches a child's calls with
// (CallFor(turn.Strand, turn.Operation)). Each strand keeps its own shell
// directory across its runs; the rest is the session's.
func (p *Plane) CallFor(strand, opID string) *tool.Call {
	// At, so that every strand's template shares the session's pinned
	// roots: a root a command swapped stays refused for them all.
	c := p.Call.At(opID, "", 0)
	c.Strand = strand
	c.Shell = p.shellOf(strand)
	return c
}

// Dispatcher returns the dispatcher over the plane's registry, bounded
// by MaxParallel and holding the plane's Fence: every batch and single
// call dispatched through it keeps each strand's Exclusive calls alone.
func (p *Plane) Dispatcher() Dispatcher {
	return Dispatcher{Registry: p.Registry, MaxParallel: p.MaxParallel, Fence: &p.fence}
}

// Close releases what New made, last made first: the programs code_mode
// launched (torn down and reaped, within 10 s), the reference Agency
// (aborting running children and waiting for their runners), the history
// index, the language servers (each shut down within 2 s),
// the job plane (killing what still runs, within 10 s), the blob store,
// the broker's warm helper, and a scratch directory New created. What the host brought stays open. Close is safe to call more
// than once and returns the first call's errors, joined.
func (p *Plane) Close() error {
	p.once.Do(func() {
		var errs []error
		for i := len(p.closers) - 1; i >= 0; i-- {
			if err := p.closers[i](); err != nil {
				errs = append(errs, err)
			}
		}
		p.closed = errors.Join(errs...)
	})
	return p.closed
}

// openMCP makes a client of each of Config.MCPServers, lists their tools
// side by side (each within mcpclient.StartTimeout) and registers them in
// config order.
func (p *Plane) openMCP(cfg Config, ws string, base sandbox.Policy, env map[string]string, scratch string) error {
	o := mcpclient.Options{Workspace: ws, Broker: p.Broker, Base: base, Env: env, TempDir: scratch, Toolchains: p.Toolchains}
	for _, s := range cfg.MCPServers {
		c, err := mcpclient.New(s, o)
		if err != nil {
			return fail(CodeSetupFailed, "MCP server "+s.Name, err)
		}
		p.closers = append(p.closers, c.Close)
		p.MCP = append(p.MCP, c)
	}
	var wg sync.WaitGroup
	for _, c := range p.MCP {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), mcpclient.StartTimeout)
			defer cancel()
			c.Tools(ctx)
		})
	}
	wg.Wait()
	for _, c := range p.MCP {
		ctx, cancel := context.WithTimeout(context.Background(), mcpclient.StartTimeout)
		skipped, err := mcpclient.Register(ctx, p.Registry, c)
		cancel()
		var e *mcpclient.Error
		switch {
		case errors.As(err, &e):
			p.MCPRefused = append(p.MCPRefused, e)
		case err != nil:
			return fail(CodeSetupFailed, "MCP server "+c.Name(), err)
		}
		p.MCPRefused = append(p.MCPRefused, skipped...)
	}
	return nil
}

// openLanguageServers makes the language-server plane over the detected
// servers (adjusted by Config.LanguageServers), run by the plane's broker
// under the session's base policy and environment; none is started yet.
func (p *Plane) openLanguageServers(cfg Config, ws string, base sandbox.Policy, env map[string]string, scratch string) error {
	servers := lsp.Detect(env["PATH"])
	if cfg.LanguageServers != nil {
		servers = cfg.LanguageServers(servers)
	}
	if len(servers) == 0 {
		return nil
	}
	ls, err := lsp.New(lsp.Options{Workspace: ws, Servers: servers, Broker: p.Broker, Base: base, Env: env, TempDir: scratch})
	if err != nil {
		return fail(CodeSetupFailed, "language servers", err)
	}
	p.closers = append(p.closers, ls.Close)
	p.LanguageServers = ls
	return nil
}

// openCodeMode makes the code mode engine over the plane's registry,
// broker, job plane and Agency (so with the agent tools it serves the
// orchestration seam too) and registers code_mode. The toolchain is looked
// for, and the archives built, at the first program or when the host
// calls CodeMode.Warm (in the background, at start).
func (p *Plane) openCodeMode(cfg Config) error {
	opts := codemode.Options{Registry: p.Registry, Broker: p.Broker, Jobs: p.Jobs, Agency: p.Agency, Builder: cfg.CodeMode, Notify: cfg.CodeModeNotify,
		MCPServers: p.mcpServers(), Seams: cfg.CodeModeSeams}
	if p.LanguageServers != nil {
		opts.Diagnostics = p.LanguageServers
		opts.LanguageServers = p.LanguageServers
	}
	eng, err := codemode.New(opts)
	if err != nil {
		return fail(CodeSetupFailed, "code mode", err)
	}
	p.closers = append(p.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), closeWait)
		defer cancel()
		return eng.Close(ctx)
	})
	if err := p.Registry.Register(eng.Tool()); err != nil {
		return fail(CodeSetupFailed, "code mode", err)
	}
	p.CodeMode = eng
	return nil
}

// schemeSeam is what cap:// lists: the workspace seam's packages, and
// with the agent tools the orchestration seam's too (cap/notes and
// cap/strand are served only over an Agency).
func schemeSeam(agents bool) codemode.Seam {
	ws := codemode.WorkspaceSeam()
	if !agents {
		ws.Packages = slices.DeleteFunc(ws.Packages, func(p string) bool { return p == "cap/notes" })
		return ws
	}
	s := codemode.Seam{Name: ws.Name + " and " + codemode.OrchestrationSeamName, Packages: ws.Packages}
	for _, p := range codemode.OrchestrationSeam().Packages {
		if !slices.Contains(s.Packages, p) {
			s.Packages = append(s.Packages, p)
		}
	}
	return s
}

func (p *Plane) shellOf(strand string) *tool.Shell {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.shells[strand]
	if !ok {
		s = &tool.Shell{}
		p.shells[strand] = s
	}
	return s
}

// workspaceOf resolves the configured workspace.
func workspaceOf(dir string) (string, error) {
	if dir == "" {
		return "", fail(CodeWorkspaceRequired, "workspace", errors.New("Config.Workspace is empty; name the directory the tools work in"))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fail(CodeWorkspaceUnusable, "workspace", err)
	}
	ws, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fail(CodeWorkspaceUnusable, "workspace", err)
	}
	if fi, err := os.Stat(ws); err != nil {
		return "", fail(CodeWorkspaceUnusable, "workspace", err)
	} else if !fi.IsDir() {
		return "", fail(CodeWorkspaceUnusable, "workspace", fmt.Errorf("%s is not a directory", ws))
	}
	return ws, nil
}

// scratch returns the session scratch directory, resolved: dir (created
// if missing, kept) when set, else a fresh private directory under the
// user cache directory, which Close removes.
func (p *Plane) scratch(dir string) (string, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fail(CodeSetupFailed, "scratch directory", err)
		}
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return "", fail(CodeSetupFailed, "scratch directory", err)
		}
		resolved, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return "", fail(CodeSetupFailed, "scratch directory", err)
		}
		return resolved, nil
	}
	parent, err := cacheDir(ScratchParent)
	if err != nil {
		return "", fail(CodeSetupFailed, "scratch directory", fmt.Errorf("%w; set Config.Scratch", err))
	}
	made, err := os.MkdirTemp(parent, "session-")
	if err != nil {
		return "", fail(CodeSetupFailed, "scratch directory", err)
	}
	p.closers = append(p.closers, func() error { return os.RemoveAll(made) })
	resolved, err := filepath.EvalSymlinks(made)
	if err != nil {
		return "", fail(CodeSetupFailed, "scratch directory", err)
	}
	return resolved, nil
}

// toolchains detects the toolchain profiles on path (with the host's
// adjustment), makes their caches and refuses one whose cache lies in the
// workspace or holds it. With no user cache directory nothing is
// detected: the host's adjustment still may add profiles.
func (p *Plane) toolchains(cfg Config, ws, path string) error {
	found, _ := toolchain.Detect(toolchain.Options{Path: path})
	if cfg.Toolchains != nil {
		found = cfg.Toolchains(found)
	}
	// Looked at as named before anything is made, and as resolved after.
	if err := cachesApart(found, ws); err != nil {
		return err
	}
	ready, err := toolchain.Prepare(found)
	if err != nil {
		return fail(CodeSetupFailed, "toolchain caches", err)
	}
	if err := cachesApart(ready, ws); err != nil {
		return err
	}
	p.Toolchains = ready
	return nil
}

// cachesApartFromStores refuses a toolchain cache that holds one of the
// plane's own stores, or lies in one: the blob store, the history index,
// the scratch directory. A command writes the caches.
func (p *Plane) cachesApartFromStores(scratch string) error {
	stores := []string{scratch}
	if p.Blobs != nil {
		stores = append(stores, p.Blobs.Root())
	}
	if p.Store != nil {
		stores = append(stores, p.Store.Path())
	}
	for _, tc := range p.Toolchains {
		for _, c := range tc.Caches {
			for _, s := range stores {
				if sandbox.Covers(c, s) || sandbox.Covers(s, c) {
					return fail(CodeStoreInWorkspace, "toolchain "+tc.Name, fmt.Errorf("its cache %s and the plane's store %s would hold one another; keep caches apart from the stores", c, s))
				}
			}
		}
	}
	return nil
}

// cachesApart refuses a profile whose cache lies in the workspace ws or
// holds it.
func cachesApart(ps []toolchain.Profile, ws string) error {
	for _, tc := range ps {
		for _, c := range tc.Caches {
			if !filepath.IsAbs(c) || sandbox.Covers(ws, c) || sandbox.Covers(c, ws) {
				return fail(CodeStoreInWorkspace, "toolchain "+tc.Name, fmt.Errorf("its cache %q must be an absolute directory apart from the workspace %s (neither holding the other)", c, ws))
			}
		}
	}
	return nil
}

// writable reports whether base lets commands write scratch.
func writable(ws string, base sandbox.Policy, scratch string) bool {
	if sandbox.Covers(ws, scratch) {
		return true
	}
	for _, r := range base.WritableRoots {
		if sandbox.Covers(r, scratch) {
			return true
		}
	}
	return false
}

// cacheDir returns <user cache>/sub, created (private) if missing, with
// links resolved.
func cacheDir(sub string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, sub)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(dir)
}

func (p *Plane) openBlobs(cfg Config, ws string) error {
	if cfg.Blobs != nil {
		p.Blobs = cfg.Blobs
		return nil
	}
	root := cfg.BlobDir
	if root == "" {
		var err error
		if root, err = blob.DefaultRoot(); err != nil {
			return fail(CodeSetupFailed, "blob store", fmt.Errorf("%w; set Config.BlobDir", err))
		}
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return fail(CodeSetupFailed, "blob store", err)
	}
	store, err := blob.OpenWith(root, cfg.BlobOptions)
	if err != nil {
		return fail(CodeSetupFailed, "blob store", err)
	}
	p.closers = append(p.closers, store.Close)
	if sandbox.Covers(ws, store.Root()) {
		return fail(CodeStoreInWorkspace, "blob store", fmt.Errorf("%s is inside the workspace %s, where a command could tamper with it; choose a directory outside it", store.Root(), ws))
	}
	p.Blobs = store
	return nil
}

func (p *Plane) openJobs(cfg Config) {
	if cfg.Jobs != nil {
		p.Jobs = cfg.Jobs
		return
	}
	opts := cfg.JobOptions
	if opts.Blobs == nil {
		opts.Blobs = p.Blobs
	}
	jp := job.NewPlane(p.Broker, opts)
	p.Jobs = jp
	p.closers = append(p.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), closeWait)
		defer cancel()
		return jp.Close(ctx)
	})
}

// openHistory returns the History and Memory seams, opening the
// reference index for whichever the host left nil.
func (p *Plane) openHistory(cfg Config, ws string) (history.History, history.Memory, error) {
	h, m := cfg.History, cfg.Memory
	if h != nil && m != nil {
		return h, m, nil
	}
	if cfg.HistoryURL != "" {
		return p.openPostgresHistory(cfg, ws)
	}
	path, err := historyPath(cfg.HistoryPath, ws)
	if err != nil {
		return nil, nil, err
	}
	store, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		return nil, nil, fail(CodeSetupFailed, "history index", err)
	}
	p.closers = append(p.closers, store.Close)
	p.Store = store
	if h == nil {
		h = store
	}
	if m == nil {
		m = store
	}
	return h, m, nil
}

// historyPath returns the index file's path, its directory created and
// resolved, refusing one inside the workspace.
func historyPath(path, ws string) (string, error) {
	var dir, name string
	if path == "" {
		d, err := cacheDir(HistoryParent)
		if err != nil {
			return "", fail(CodeSetupFailed, "history index", fmt.Errorf("%w; set Config.HistoryPath", err))
		}
		sum := sha256.Sum256([]byte(ws))
		dir, name = d, historyFilePrefix+hex.EncodeToString(sum[:])[:historyDigestChars]+historyFileSuffix
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", fail(CodeSetupFailed, "history index", err)
		}
		dir, name = filepath.Dir(abs), filepath.Base(abs)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fail(CodeSetupFailed, "history index", err)
		}
		if dir, err = filepath.EvalSymlinks(dir); err != nil {
			return "", fail(CodeSetupFailed, "history index", err)
		}
	}
	full := filepath.Join(dir, name)
	if sandbox.Covers(ws, full) {
		return "", fail(CodeStoreInWorkspace, "history index", fmt.Errorf("%s is inside the workspace %s, where a command could tamper with it; choose a path outside it", full, ws))
	}
	return full, nil
}

// hostTools returns FamilyHost's tools whose seams cfg brings: advise,
// context_remaining, propose, and the schedule tools.
func hostTools(cfg Config) []tool.Tool {
	var tools []tool.Tool
	if cfg.Advice != nil {
		tools = append(tools, agent.AdviseTool(cfg.Advice))
	}
	if cfg.Gauge != nil {
		tools = append(tools, agent.ContextTool(cfg.Gauge))
	}
	if cfg.Proposals != nil {
		tools = append(tools, agent.ProposeTool(cfg.Proposals))
	}
	if cfg.Schedules != nil {
		tools = append(tools, schedule.Tools(cfg.Schedules)...)
	}
	return tools
}
