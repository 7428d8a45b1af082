package codemode

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// Options configures an Engine. Every field but Registry and Broker has
// a working zero value.
type Options struct {
	// Registry is the registry the code_mode tool is registered in. Its
	// holds gate every capability that acts on a tool's authority
	// (AuthorizingTool), and job.start runs through its bash. Required.
	Registry *tool.Registry
	// Broker runs every build and every program in its jails. Required.
	Broker *broker.Broker
	// Jobs is the job plane cap/job reaches; nil means job.poll, job.list,
	// job.send and job.kill are refused with job.CodeNoJobPlane.
	Jobs job.Jobs
	// KV is the scratch store behind cap/kv; nil means a fresh one owned
	// by the Engine.
	KV *KV
	// Seam is the seam programs run on; the zero value is
	// WorkspaceSeam() less the packages none of whose capabilities a tool
	// in Registry authorizes when New is called (without bash and the job
	// tools, a program is offered neither cap/proc nor cap/job), so the
	// description and vetting offer only what a program could use.
	Seam Seam
	// Builder configures the hermetic build (toolchain, cache directory,
	// cache bound, progress); its Broker is the Engine's.
	Builder BuilderOptions
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
	kv    *KV
	execs *executions

	once    sync.Once
	builder *Builder
	err     error
}

// New returns an Engine.
func New(o Options) (*Engine, error) {
	if o.Registry == nil || o.Broker == nil {
		return nil, errors.New("codemode: Options.Registry and Options.Broker are required")
	}
	if o.Seam.Name == "" {
		o.Seam = offered(WorkspaceSeam(), o.Registry)
	}
	e := &Engine{opts: o, kv: o.KV, execs: newExecutions(func(k broker.StepKey) { o.Broker.Ledger().AbortStep(k) }, o.Notify)}
	if e.kv == nil {
		e.kv = NewKV()
	}
	return e, nil
}

// offered is s less the packages whose every capability is authorized by
// a tool reg does not register.
func offered(s Seam, reg *tool.Registry) Seam {
	var keep []string
	for _, pkg := range s.Packages {
		prefix := strings.TrimPrefix(pkg, PreludeModule+"/") + "."
		usable := false
		for _, c := range WorkspaceCapabilities() {
			if !strings.HasPrefix(c, prefix) {
				continue
			}
			name, gated := AuthorizingTool(c)
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

// Seam is the seam the Engine's programs run on.
func (e *Engine) Seam() Seam { return e.opts.Seam }

// KV is the store behind the Engine's cap/kv.
func (e *Engine) KV() *KV { return e.kv }

// buildStage is the Engine's Builder, made on first use.
func (e *Engine) buildStage() (*Builder, error) {
	e.once.Do(func() {
		o := e.opts.Builder
		o.Broker = e.opts.Broker
		e.builder, e.err = NewBuilder(o)
	})
	return e.builder, e.err
}

// Warm finds the toolchain and builds the archives, if not done yet; a
// host calls it in the background at start so the first program does
// not pay for it. Calls made meanwhile wait for it.
func (e *Engine) Warm(ctx context.Context) error {
	b, err := e.buildStage()
	if err != nil {
		return err
	}
	return b.Warm(ctx)
}

// Vet checks src against the Engine's seam (see the package-level Vet).
func (e *Engine) Vet(src []byte) (*Program, error) { return Vet(src, e.opts.Seam) }

// Build compiles a vetted program into a static binary in the build
// jail (see Builder.Build).
func (e *Engine) Build(ctx context.Context, p *Program) (*Binary, error) {
	b, err := e.buildStage()
	if err != nil {
		return nil, err
	}
	return b.Build(ctx, p)
}

// Run runs bin in the run jail on c's authority, serving its
// capabilities until it ends or within (clamped to MaxWithin; 0 means
// DefaultWithin) passes. c is the code_mode call: its identity, pinned
// roots and session; a refusal one of the program's capability calls
// meets is answered to the program in band and never raised. The error
// is a refusal before the program started (a *CapError: the run jail
// unavailable, a broker refusal); how the program ended is in the
// RunResult.
func (e *Engine) Run(ctx context.Context, c *tool.Call, bin *Binary, within time.Duration) (*RunResult, error) {
	return e.runAs(ctx, c, bin, within, nil)
}

// runAs is Run of the launched execution x (nil: a foreground run).
func (e *Engine) runAs(ctx context.Context, c *tool.Call, bin *Binary, within time.Duration, x *execution) (*RunResult, error) {
	if within <= 0 {
		within = DefaultWithin
	}
	within = min(within, MaxWithin)
	if c.Broker == nil {
		c = withBroker(c, e.opts.Broker)
	}
	served := *c
	served.RaiseRefusal = nil
	h := &seamHost{call: &served, reg: e.opts.Registry, jobs: e.opts.Jobs, kv: e.kv, proc: newProcRunner(), exec: x, execs: e.execs}
	res, err := runProgram(ctx, &served, bin, within, h)
	if res != nil {
		res.lastFailure, res.lastStderr, _ = h.proc.last.get()
	}
	return res, err
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

	// joined: rendered by join, which shows no call record.
	joined bool
}

// Execute vets, builds and runs src on c's authority. The error is a
// refusal at one stage: a *VetError, a *BuildError, a *BuilderError, or
// Run's refusal; Execution then holds what the earlier stages produced.
func (e *Engine) Execute(ctx context.Context, c *tool.Call, src []byte, within time.Duration) (*Execution, error) {
	x := &Execution{}
	p, err := e.Vet(src)
	if err != nil {
		return x, err
	}
	x.Program = p
	bin, err := e.Build(ctx, p)
	if err != nil {
		return x, err
	}
	x.Binary = bin
	res, err := e.Run(ctx, c, bin, within)
	x.Run = res
	return x, err
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
