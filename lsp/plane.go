package lsp

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// settleWait bounds how long Diagnose waits for the servers when its
// context has no deadline of its own (the file tools give it
// tool.DiagnosticsWait).
const settleWait = 5 * time.Second

// Options configure New.
type Options struct {
	// Workspace is the workspace's absolute path, links resolved: the
	// servers' one folder, readable to them and never writable.
	Workspace string
	// Servers are the servers to run, in the order they are asked about a
	// file: the first that owns a file diagnoses it.
	Servers []Server
	// Broker runs the servers, each as one long-lived command; required.
	Broker *broker.Broker
	// Base is the session's base policy. A server gets its system and
	// readable roots, its writable roots but the workspace (and any root
	// inside it or holding it), its protected entries and limits; the
	// workspace as a readable root; its executable file as a system root
	// when nothing covers it; no network, no host sockets, no wall limit.
	Base sandbox.Policy
	// Env is the environment the servers get (the session's, toolchain
	// profiles included); every name in it is allowed through.
	Env map[string]string
	// TempDir, when set and writable under Base without the workspace,
	// holds each server's private TMPDIR (TempDir/lsp-<name>), made by
	// New.
	TempDir string
}

// Plane runs the language servers of one workspace: each one started at
// the first diagnosis that needs it, restarted after it ends (at most
// MaxRestarts times), shut down by Close. It implements
// tool.Diagnostics.
type Plane struct {
	ws      string
	broker  *broker.Broker
	servers []*server
	once    sync.Once

	// test holds test hooks: shorter bounds for a fake server's tests.
	test struct {
		startTimeout, writeTimeout time.Duration
		// beforeLanding is called as Apply is about to land each file.
		beforeLanding func(path string)
	}
}

var _ tool.Diagnostics = (*Plane)(nil)

// State is where a server is in its life.
type State string

// The states.
const (
	// StateIdle: not started yet; the first diagnosis that needs it
	// starts it.
	StateIdle State = "idle"
	// StateRunning: started (perhaps still initializing).
	StateRunning State = "running"
	// StateEnded: its last incarnation ended; the next diagnosis starts
	// it again.
	StateEnded State = "ended"
	// StateGaveUp: it ended MaxRestarts+1 times and is not started again.
	StateGaveUp State = "gave_up"
	// StateClosed: its Plane was closed.
	StateClosed State = "closed"
)

// Status is one server's state, as Plane.Servers reports it.
type Status struct {
	Name string
	// Command is the argument vector it runs with, its executable
	// resolved (as configured when it was not found).
	Command []string
	Files   []FilePattern
	State   State
	// Starts counts its incarnations so far.
	Starts int
	// Last says why its last incarnation ended; nil while none did.
	Last *Error
}

// New makes the plane o describes; it starts no server. A server whose
// executable is not found is kept, and answers every diagnosis as
// unavailable (CodeNotFound).
func New(o Options) (*Plane, error) {
	if o.Broker == nil {
		return nil, &Error{Code: CodeInvalidConfig, Reason: "a plane needs a broker to run its servers"}
	}
	if !filepath.IsAbs(o.Workspace) {
		return nil, &Error{Code: CodeInvalidConfig, Reason: fmt.Sprintf("the workspace %q is not an absolute path", o.Workspace)}
	}
	p := &Plane{ws: filepath.Clean(o.Workspace), broker: o.Broker}
	seen := map[string]bool{}
	for _, cfg := range o.Servers {
		if err := cfg.validate(); err != nil {
			return nil, err
		}
		if seen[cfg.Name] {
			return nil, &Error{Code: CodeInvalidConfig, Server: cfg.Name, Reason: "two servers have this name"}
		}
		seen[cfg.Name] = true
		s, err := p.prepare(cfg, o)
		if err != nil {
			return nil, err
		}
		p.servers = append(p.servers, s)
	}
	return p, nil
}

// prepare resolves a server's executable and composes its jail.
func (p *Plane) prepare(cfg Server, o Options) (*server, error) {
	s := &server{p: p, cfg: cfg, turn: make(chan struct{}, 1)}
	s.env = maps.Clone(o.Env)
	if s.env == nil {
		s.env = map[string]string{}
	}
	name := cfg.Command[0]
	if filepath.IsAbs(name) {
		s.bin = lookPath(filepath.Base(name), []string{filepath.Dir(name)})
	} else if filepath.Base(name) == name {
		s.bin = lookPath(name, filepath.SplitList(s.env["PATH"]))
	}
	if s.bin == "" {
		s.missing = fmt.Sprintf("its executable %q was not found (an absolute path, or a name on the servers' PATH)", name)
	}
	s.argv = append([]string{s.bin}, cfg.Command[1:]...)
	pol := sandbox.Policy{
		SystemRoots:   slices.Concat(o.Base.SystemRoots, cfg.ReadOnly),
		ReadableRoots: append(slices.Clone(o.Base.ReadableRoots), p.ws),
		Protected:     slices.Clone(o.Base.Protected),
		Network:       sandbox.NetworkOff,
		Limits:        o.Base.Limits,
	}
	for _, w := range o.Base.WritableRoots {
		if !sandbox.Covers(w, p.ws) && !sandbox.Covers(p.ws, w) {
			pol.WritableRoots = append(pol.WritableRoots, w)
		}
	}
	if o.TempDir != "" {
		tmp := filepath.Join(o.TempDir, "lsp-"+cfg.Name)
		if slices.ContainsFunc(pol.WritableRoots, func(w string) bool { return sandbox.Covers(w, tmp) }) {
			if err := os.MkdirAll(tmp, 0o700); err != nil {
				return nil, &Error{Code: CodeInvalidConfig, Server: cfg.Name, Reason: "its temporary directory: " + err.Error()}
			}
			s.env["TMPDIR"] = tmp
		}
	}
	if s.bin != "" && !slices.ContainsFunc(slices.Concat(pol.SystemRoots, pol.ReadableRoots, pol.WritableRoots),
		func(r string) bool { return sandbox.Covers(r, s.bin) }) {
		// The executable alone, never its directory: a GOPATH/bin holds
		// every tool the host user installed.
		pol.SystemRoots = append(pol.SystemRoots, s.bin)
	}
	pol.EnvAllow = slices.Sorted(maps.Keys(s.env))
	if err := sandbox.Validate(pol); err != nil {
		return nil, &Error{Code: CodeInvalidConfig, Server: cfg.Name, Reason: "its jail's policy: " + err.Error()}
	}
	s.pol = pol
	return s, nil
}

// Diagnose tells each file's server of its new content and waits, until
// ctx ends (settleWait when ctx has no deadline), for the server's
// diagnostics of exactly that content: a publication carrying the
// version Loom sent. Files no server owns have no entry. It implements
// tool.Diagnostics.
func (p *Plane) Diagnose(ctx context.Context, files []tool.ChangedFile) []tool.FileDiagnostics {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, settleWait)
		defer cancel()
	}
	byServer := map[*server][]tool.ChangedFile{}
	var order []*server
	owner := make([]*server, len(files))
	for i, f := range files {
		for _, s := range p.servers {
			if _, ok := s.cfg.owns(f.Path); ok && sandbox.Covers(p.ws, f.Path) {
				if byServer[s] == nil {
					order = append(order, s)
				}
				byServer[s] = append(byServer[s], f)
				owner[i] = s
				break
			}
		}
	}
	results := make(map[*server][]tool.FileDiagnostics, len(order))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range order {
		wg.Go(func() {
			r := s.diagnose(ctx, byServer[s])
			mu.Lock()
			results[s] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	var out []tool.FileDiagnostics
	next := map[*server]int{}
	for i := range files {
		s := owner[i]
		if s == nil {
			continue
		}
		out = append(out, results[s][next[s]])
		next[s]++
	}
	return out
}

// Servers reports every configured server's state, in configuration
// order.
func (p *Plane) Servers() []Status {
	out := make([]Status, len(p.servers))
	for i, s := range p.servers {
		out[i] = s.status()
	}
	return out
}

// Close shuts every running server down (shutdown and exit, each within
// stopTimeout, then killed) and refuses to start any again. It is safe to
// call more than once.
func (p *Plane) Close() error {
	p.once.Do(func() {
		var wg sync.WaitGroup
		for _, s := range p.servers {
			wg.Go(s.close)
		}
		wg.Wait()
	})
	return nil
}

func (p *Plane) startTimeout() time.Duration {
	if p.test.startTimeout > 0 {
		return p.test.startTimeout
	}
	return startTimeout
}

func (p *Plane) writeTimeout() time.Duration {
	if p.test.writeTimeout > 0 {
		return p.test.writeTimeout
	}
	return writeTimeout
}
