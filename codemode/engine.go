package codemode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/lsp"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// Options configures an Engine. Every field but Registry and Broker has
// a working zero value.
type Options struct {
	// Registry is the registry the code_mode tool is registered in. Its
	// holds gate every capability that acts on a tool's authority (see
	// the package doc's Authority), and job.start runs through its bash.
	// Required.
	Registry *tool.Registry
	// Broker runs every build and every program in its jails. Required.
	Broker *broker.Broker
	// Jobs is the job plane cap/job reaches; nil means job.poll, job.list,
	// job.send and job.kill are refused with job.CodeNoJobPlane.
	Jobs job.Jobs
	// Seams are the seams programs run on, the first the default, each
	// Name distinct. Nil means WorkspaceSeam(), then, with an Agency,
	// OrchestrationSeam() while it keeps cap/strand. Each is offered less
	// the packages none of whose capabilities a tool in Registry
	// authorizes when New is called: without bash and the job tools, a
	// program is offered neither cap/proc nor cap/job; without an Agency,
	// neither cap/strand nor cap/notes. So the description and vetting
	// offer only what a program could use. Given seams are offered the
	// same way, but a given seam offering cap/strand without an Agency
	// is refused. The MCP packages (MCPServers) join every seam that
	// offers cap/fs, and no other unless it lists them.
	Seams []Seam
	// Agency serves cap/strand and cap/notes, through the closures the
	// agent_* tools call; nil means no orchestration seam and no
	// cap/notes.
	Agency agent.Agency
	// SpawnCeiling bounds the spawns of one execution (strand.spawn, and
	// each item of strand.map); zero means 32. A spawn past it is refused
	// in band with spawn_ceiling.
	SpawnCeiling int
	// Builder configures the hermetic build (toolchain, cache directory,
	// cache bound, allowlist, progress), which runs in Broker's jails.
	Builder BuilderOptions
	// Diagnostics, when set, is asked about every file fs.write and
	// fs.edit land (the seam fs_write and fs_edit take); its answer, as
	// those tools render it, is the result's Diagnostics. Nil means none.
	Diagnostics tool.Diagnostics
	// LanguageServers, when set, serves cap/lsp: the language operations
	// (definition, references, hover, symbols, calls, diagnostics, code
	// actions, rename and its apply) of the workspace's language servers.
	// Nil means no cap/lsp: New leaves it out of every seam, and vetting
	// refuses its import saying why.
	LanguageServers *lsp.Plane
	// MCPServers are MCP servers a program calls as cap/mcp/<name>, one
	// function per tool (see MCPServer). New lists each server's tools
	// (at most 30 s each) and generates its package, offered on the
	// workspace seam (and on a given seam listing it); a server whose
	// package name another's took, that cannot be listed, or none of whose
	// tools the Registry registers, is left out, and vetting refuses its
	// import saying why. A program may call a tool only when its strand
	// holds the tool's MCPTool.ModelTool; each call is bounded to 30 s.
	// Nil means no cap/mcp/... package.
	MCPServers []MCPServer
	// Notify, when set, is told when a launched program ends on its own
	// (not by its owner's cancel, nor at Close). It is called from the
	// execution's own goroutine with no lock held and must not block for
	// long.
	Notify func(ExecutionNotice)
}

// Engine runs programs: vet, hermetic build and jailed run, each a step
// a host may also drive itself (Vet, Build, Run), and all three behind
// the code_mode tool (Tool). The toolchain is looked for, and the
// archives built, on first use or at Warm; a host without a Go toolchain
// gets CodeToolchainUnavailable from Build and from the tool, never a
// failure at New. Safe for concurrent use.
type Engine struct {
	opts  Options
	mcp   *mcpSet // nil: no MCP packages
	kv    *kvStore
	execs *executions

	once    sync.Once
	builder *builder
	err     error
}

// New returns an Engine.
func New(o Options) (*Engine, error) {
	if o.Registry == nil || o.Broker == nil {
		return nil, errors.New("codemode: Options.Registry and Options.Broker are required")
	}
	var mcp *mcpSet
	if len(o.MCPServers) > 0 {
		mcp = newMCPSet(o.MCPServers, o.Registry, o.Builder.StdPackages)
	}
	if len(o.Seams) == 0 {
		o.Seams = []Seam{WorkspaceSeam()}
		if orch := offered(OrchestrationSeam(), o.Registry, o.Agency, o.LanguageServers != nil); slices.Contains(orch.Packages, "cap/strand") {
			o.Seams = append(o.Seams, orch)
		}
	}
	o.Seams = slices.Clone(o.Seams)
	for i, s := range o.Seams {
		if s.Name == "" || slices.ContainsFunc(o.Seams[:i], func(t Seam) bool { return t.Name == s.Name }) {
			return nil, fmt.Errorf("codemode: Options.Seams[%d] needs a Name of its own (got %q)", i, s.Name)
		}
		if o.Agency == nil && slices.Contains(s.Packages, "cap/strand") {
			return nil, fmt.Errorf("codemode: Options.Seams[%d] (%q) offers cap/strand, which only an Engine with an Agency serves", i, s.Name)
		}
		o.Seams[i] = offeredWithMCP(s, o, mcp.paths())
	}
	e := &Engine{opts: o, mcp: mcp, kv: newKVStore(), execs: newExecutions(func(k sandbox.StepKey) { o.Broker.Ledger().AbortStep(k) }, o.Notify)}
	return e, nil
}

// offeredWithMCP is s offered as a default seam is (see offered), with
// the MCP packages it lists that are configured and, when it offers
// cap/fs, every configured one.
func offeredWithMCP(s Seam, o Options, mcpPaths []string) Seam {
	var listed []string
	s.Packages = slices.DeleteFunc(slices.Clone(s.Packages), func(p string) bool {
		if isMCPPath(p) {
			if slices.Contains(mcpPaths, p) {
				listed = append(listed, p)
			}
			return true
		}
		return false
	})
	s = offered(s, o.Registry, o.Agency, o.LanguageServers != nil)
	if slices.Contains(s.Packages, "cap/fs") {
		listed = mcpPaths
	}
	s.Packages = append(s.Packages, listed...)
	return s
}

// offered is s less the packages whose every capability is authorized by
// a tool reg does not register, less cap/strand and cap/notes without
// an Agency, and less cap/lsp without language servers.
func offered(s Seam, reg *tool.Registry, agency agent.Agency, languageServers bool) Seam {
	var keep []string
	for _, pkg := range s.Packages {
		if agency == nil && (pkg == "cap/strand" || pkg == "cap/notes") {
			continue
		}
		if !languageServers && pkg == "cap/lsp" {
			continue
		}
		if _, spawns := reg.Lookup(agent.SpawnToolName); pkg == "cap/strand" && !spawns {
			continue // directing sub-agents starts with a spawn
		}
		prefix := strings.TrimPrefix(pkg, preludeModule+"/") + "."
		usable := false
		for _, c := range capabilityNames() {
			if !strings.HasPrefix(c, prefix) {
				continue
			}
			name, gated := authorizingTool(c)
			if _, ok := reg.Lookup(name); !gated || ok {
				usable = true
				break
			}
		}
		if usable {
			keep = append(keep, pkg)
		}
	}
	s.Packages = keep
	return s
}

// Seams are the seams the Engine serves, the default first, in a fresh
// slice.
func (e *Engine) Seams() []Seam {
	out := make([]Seam, len(e.opts.Seams))
	for i, s := range e.opts.Seams {
		out[i] = Seam{Name: s.Name, Packages: slices.Clone(s.Packages)}
	}
	return out
}

// seamNamed is the served seam called name ("" is the default), or a
// *CapError coded CodeUnknownSeam naming the seams served.
func (e *Engine) seamNamed(name string) (Seam, error) {
	if name == "" {
		return e.opts.Seams[0], nil
	}
	var names []string
	for _, s := range e.opts.Seams {
		if s.Name == name {
			return s, nil
		}
		names = append(names, quoteArg(s.Name))
	}
	return Seam{}, &CapError{Code: CodeUnknownSeam, Message: fmt.Sprintf("this host serves no seam %s; it serves %s (the first is the default)", quoteArg(name), strings.Join(names, ", "))}
}

// buildStage is the Engine's builder, made on first use.
func (e *Engine) buildStage() (*builder, error) {
	e.once.Do(func() {
		o := e.opts.Builder
		o.brk = e.opts.Broker
		e.builder, e.err = newBuilder(o)
	})
	return e.builder, e.err
}

// Warm finds the toolchain and builds the archives of the whole
// allowlist, if not done yet, for a host that prefers to pay for them up
// front (in the background at start). Without it, a build builds the
// archives of its program's imports alone on first use.
func (e *Engine) Warm(ctx context.Context) error {
	b, err := e.buildStage()
	if err != nil {
		return err
	}
	return b.Warm(ctx)
}

// Vet checks src against the Engine's default seam, as VetOn does.
func (e *Engine) Vet(src []byte) (*Program, error) { return e.vetted(vet(src, e.opts.Seams[0])) }

// VetOn checks src, one Go file the harness names main.go, against the
// served seam called seam ("" is the default). It returns the vetted
// Program or a *VetError holding every violation; an unserved seam is a
// *CapError coded CodeUnknownSeam naming the seams served. It checks, in
// one pass:
//
//   - the size first: at most 256 KiB; then the bytes: UTF-8 with
//     no NUL (each checked before parsing, and a refusal there stops);
//   - go/parser (parse only, with comments) accepts it;
//   - "package main" with a top-level "func main()" (no parameters,
//     results or type parameters); init functions are allowed: the one
//     file is vetted whole, so an init is vetted code like main;
//   - every import path byte-identical to an entry of Seam.Allowlist,
//     written as the plain "path", and covered by no denial (denied
//     standard packages, any internal package, cap/internal/...), so a
//     seam cannot admit what the audit denies; import "C" is refused.
//     Named, blank and dot imports of allowed paths are fine: the path is
//     what is authorized, and cap calls are gated by capability name at
//     run time;
//   - no comment whose text right after // or /* starts with "go:" or
//     "line " (what the compiler honours, in any column; "// line 3 is"
//     and "// go:x" are fine), no build constraint (//go:build, or a //
//     comment starting, after any spaces, with +build), no function or
//     method without a body.
//
// When go/parser refuses the source, its errors (at most ten, as go/parser
// reports them), every directive comment and every cleanly parsed import
// are still reported in the same pass. The package, main and body checks
// wait for a source that parses. Positions are as written: a //line
// directive moves none. Vetting never panics, reads nothing but src,
// needs no toolchain, and is safe for concurrent use.
func (e *Engine) VetOn(src []byte, seam string) (*Program, error) {
	s, err := e.seamNamed(seam)
	if err != nil {
		return nil, err
	}
	return e.vetted(vet(src, s))
}

// Build compiles a vetted program into a static binary in the build
// jail (network off, only the build root writable), against archives
// built once per toolchain: the whole allowlist's once Warm made them,
// else those of the program's imports, built on first use. A binary is kept by content hash: the
// same program again runs no build (Binary.Cached). A program whose every
// error is an unused import, variable or label is repaired once and
// rebuilt once (Binary.Edits). A program the toolchain refuses is a
// *BuildError; a failure outside the program is a *BuilderError or the
// broker's refusal.
func (e *Engine) Build(ctx context.Context, p *Program) (*Binary, error) {
	b, err := e.buildStage()
	if err != nil {
		return nil, err
	}
	return b.Build(ctx, p)
}

// Run runs bin in the run jail on c's authority until it ends or within
// passes (0 means 60 s; more than 600 s is clamped to 600 s). It serves
// the capabilities of the seam bin was vetted on (bin.Seam) and refuses
// any other, whatever the binary sends. c is the code_mode call: its
// identity, pinned roots and session. A refusal one of the program's
// capability calls meets is answered to the program in band and never
// raised. The error is a refusal before the program started (a
// *CapError: the run jail unavailable, a broker refusal); how the
// program ended is in the RunResult.
func (e *Engine) Run(ctx context.Context, c *tool.Call, bin *Binary, within time.Duration) (*RunResult, error) {
	return e.runAs(ctx, c, bin, within, nil, nil)
}

// runAs is Run under the permit composePermissions settled (nil: no
// permissions declared; c's Grants are the permit's), as the launched
// execution x (nil: a foreground run).
func (e *Engine) runAs(ctx context.Context, c *tool.Call, bin *Binary, within time.Duration, pm *permit, x *execution) (*RunResult, error) {
	within = effectiveWithin(within)
	if noBroker(c.Broker) {
		c = withBroker(c, e.opts.Broker)
	}
	served := *c
	served.RaiseRefusal = nil
	h := e.newSeamHost(&served, bin.Seam, pm)
	h.exec, h.execs = x, e.execs
	res, err := runProgram(ctx, &served, bin, within, h)
	if res != nil {
		res.lastFailure, res.lastStderr, _ = h.proc.last.get()
	}
	return res, err
}

// newSeamHost is the host of one execution on seam, for call c, under
// the permit composePermissions settled (nil: no permissions declared).
func (e *Engine) newSeamHost(c *tool.Call, seam Seam, pm *permit) *seamHost {
	return &seamHost{seam: seam, call: c, reg: e.opts.Registry, jobs: e.opts.Jobs, kv: e.kv, proc: newProcRunner(pm.roots()),
		permit: pm, agency: e.opts.Agency, diag: e.opts.Diagnostics, lsp: e.opts.LanguageServers, mcp: e.mcp, adm: admissions{spawnCeiling: e.opts.SpawnCeiling}}
}

// effectiveWithin is a run's wall deadline for within: defaultWithin for
// 0, at most maxWithin.
func effectiveWithin(within time.Duration) time.Duration {
	if within <= 0 {
		within = defaultWithin
	}
	return min(within, maxWithin)
}

// noBroker reports whether a call brings no broker of its own: none, or
// a nil *broker.Broker (a host's nil variable in the interface).
func noBroker(b tool.Broker) bool {
	if b == nil {
		return true
	}
	bb, ok := b.(*broker.Broker)
	return ok && bb == nil
}

func withBroker(c *tool.Call, b *broker.Broker) *tool.Call {
	cc := *c
	cc.Broker = b
	return &cc
}

// Execution is one program taken through every stage.
type Execution struct {
	Program *Program
	Binary  *Binary
	Run     *RunResult
	// Widening is which grants the program's capability calls carried,
	// or which way none did (see Execute).
	Widening Widening

	// joined: rendered by join, which shows no call record.
	joined bool
}

// Request is one program as a call submits it. Only Source is required.
type Request struct {
	// Source is the program: one Go file, package main.
	Source []byte
	// SourcePath is the file Source was read from, shown to an operator
	// asked to approve Permissions beside Source itself; "" for a program
	// given inline. Only Source runs.
	SourcePath string
	// Seam names the served seam the program is vetted and served on
	// (see Engine.Seams); "" is the default, an unserved name is refused
	// with CodeUnknownSeam before vetting.
	Seam string
	// Within is the run's wall deadline: 0 means 60 s; more than 600 s is
	// clamped to 600 s.
	Within time.Duration
	// Permissions, when non-nil, are what the call declares for the
	// program's capability calls, as bash's permissions are (see Execute).
	Permissions *Permissions
}

// Execute vets, builds and runs r.Source on c's authority. The error is
// a refusal at one stage: a *VetError, a *BuildError, a *BuilderError,
// or Run's refusal; Execution then holds what the earlier stages
// produced.
//
// r.Permissions are checked before vetting: a wall_s other than 0, or a
// sub-agent's wall_s, is refused with nothing asked. They are composed
// after the build and before the program starts, a shortfall raised
// through c.Raise at most once. On a resume the program starts once with
// the grants; a refusal that still stands is a *CapError with nothing
// run. The grants act only on the program's capability calls; a refusal
// one of them meets is answered in band and never raised.
// Execution.Widening says how the grants came out, whatever the error.
func (e *Engine) Execute(ctx context.Context, c *tool.Call, r Request) (*Execution, error) {
	x, st, err := e.prepare(ctx, c, r)
	if err != nil {
		return x, err
	}
	x.Run, err = e.runAs(ctx, st.call, x.Binary, st.within, st.permit, nil)
	x.Widening = st.permit.widening(x.Run != nil)
	return x, err
}

// prepared is what prepare settled for the run: the call the program's
// capability calls act on (its Grants the composed ones), the permit and
// the effective wall deadline.
type prepared struct {
	call   *tool.Call
	permit *permit
	within time.Duration
}

// prepare takes r through every stage before the run: the permissions'
// check, vetting on r.Seam, the build and the composition of the
// permissions. On an error, the Execution holds what the stages before
// it produced and its Widening how the grants came out.
func (e *Engine) prepare(ctx context.Context, c *tool.Call, r Request) (*Execution, prepared, error) {
	x := &Execution{}
	pm := &permit{perm: r.Permissions, grants: c.Grants}
	fail := func(err error) (*Execution, prepared, error) {
		x.Widening = pm.widening(false)
		return x, prepared{}, err
	}
	if err := checkPermissions(c.Strand, r.Permissions); err != nil {
		return fail(err)
	}
	p, err := e.VetOn(r.Source, r.Seam)
	if err != nil {
		return fail(err)
	}
	if err := permissionsApply(p.Seam, r.Permissions); err != nil {
		return fail(err)
	}
	x.Program = p
	bin, err := e.Build(ctx, p)
	if err != nil {
		return fail(err)
	}
	x.Binary = bin
	within := effectiveWithin(r.Within)
	if noBroker(c.Broker) {
		c = withBroker(c, e.opts.Broker)
	}
	if pm, err = composePermissions(ctx, c, r.Permissions, within, programSubject(p, r.SourcePath)); err != nil {
		return fail(err)
	}
	served := *c
	served.Grants = pm.grants
	return x, prepared{call: &served, permit: pm, within: within}, nil
}

// stageCode is the code of a refusal Execute returned.
func stageCode(err error) tool.Code {
	var ve *VetError
	var be *BuildError
	var ue *BuilderError
	var ce *CapError
	switch {
	case errors.As(err, &ve):
		return CodeVetRefused
	case errors.As(err, &be):
		return CodeBuildRejected
	case errors.As(err, &ue):
		return ue.Code
	case errors.As(err, &ce):
		return ce.Code
	}
	return CodeRunFailed
}
