package mcpclient

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/toolchain"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxRestarts bounds how many times a server that ended (crashed, hung,
// broke the protocol, could not start) is started again, each time at
// the next request that needs it. Once it ended MaxRestarts+1 times it is
// not started again while its Client lives (CodeRestartsExhausted). The
// same bound as the language servers' (lsp.MaxRestarts).
const MaxRestarts = 3

// Options configure New: the session a stdio server's jail is composed
// from. An HTTP server needs none of it.
type Options struct {
	// Workspace is the workspace's absolute path, links resolved: a stdio
	// server's working directory, readable to it and writable only with
	// Grant.WriteWorkspace.
	Workspace string
	// Broker runs stdio servers, each as one long-lived command; required
	// for them.
	Broker *broker.Broker
	// Base is the session's base policy. A stdio server gets its system
	// and readable roots, its protected entries and limits; never its
	// writable roots (the session's scratch directory and caches are not
	// a server's), nor its network.
	Base sandbox.Policy
	// Env is the session's environment: a stdio server gets its PATH,
	// LANG and TERM, nothing else of it.
	Env map[string]string
	// TempDir holds each stdio server's private directory,
	// TempDir/mcp-<name>, with its home and its TMPDIR, made by New; it
	// must lie outside the workspace. Required for stdio servers.
	TempDir string
	// Toolchains are the session's toolchain profiles (toolchain.Detect,
	// Prepared). A stdio server whose command is a toolchain's own (npx,
	// npm or node for "npm"; uvx, uv, pip or python3 for "pip"; go for
	// "go") gets that profile: its variables, its read-only directories
	// and its caches, writable.
	Toolchains []toolchain.Profile
	// HTTPClient makes an HTTP server's requests, Server.Headers added to
	// each. Nil means one with no overall timeout (a call's context bounds
	// it).
	HTTPClient *http.Client
}

// Client is one configured MCP server and its current incarnation:
// started at the first request (Tools, or Call), restarted after it ends
// at most MaxRestarts times, shut down by Close. Its tools are listed once
// per incarnation and again after notifications/tools/list_changed. A
// Client is safe for concurrent use.
type Client struct {
	cfg        Server
	broker     *broker.Broker
	bin        string // the executable, resolved; "" when not found
	missing    string // why bin is empty
	argv       []string
	dir        string
	env        map[string]string
	pol        sandbox.Policy
	httpClient *http.Client
	sdk        *mcp.Client

	mu     sync.Mutex
	run    *run
	starts int
	last   *Error
	closed bool

	// listMu serialises listings; cat and heard (the count of
	// notifications/tools/list_changed) are guarded by mu.
	listMu sync.Mutex
	cat    *catalogue
	heard  uint64

	// test holds test hooks: shorter bounds for a fake server's tests.
	test struct {
		startTimeout, writeTimeout, callTimeout time.Duration
		// dial, when set, connects each incarnation over the transport it
		// returns instead of starting the server (an in-memory server).
		dial func() mcp.Transport
	}
}

// New makes the client of s; it starts nothing. A stdio server whose
// executable is not found is kept, and answers every request with
// CodeServerNotFound. New fails with a *Error (CodeInvalidConfig) when s
// cannot run: no broker or temporary directory for a stdio server, a
// grant's path that is not absolute, a policy sandbox.Validate refuses.
func New(s Server, o Options) (*Client, error) {
	bad := func(format string, args ...any) error {
		return &Error{Code: CodeInvalidConfig, Server: s.Name, Reason: fmt.Sprintf(format, args...)}
	}
	if !ServerNamePattern.MatchString(s.Name) {
		return nil, bad("a server's name must match %s", ServerNamePattern)
	}
	if (s.Command == "") == (s.URL == "") {
		return nil, bad("a server has exactly one of a command and a URL")
	}
	c := &Client{cfg: s, broker: o.Broker, cat: newCatalogue()}
	c.sdk = mcp.NewClient(&mcp.Implementation{Name: "loom", Version: "1"}, &mcp.ClientOptions{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
			c.announced(req.Session)
		},
	})
	if !s.Stdio() {
		base := o.HTTPClient
		if base == nil {
			base = &http.Client{}
		}
		hc := *base
		rt := hc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		hc.Transport = &headerTransport{base: rt, headers: s.Headers}
		c.httpClient = &hc
		return c, nil
	}
	if o.Broker == nil {
		return nil, bad("a stdio server needs a broker to run it")
	}
	if !filepath.IsAbs(o.Workspace) || !filepath.IsAbs(o.TempDir) {
		return nil, bad("a stdio server needs an absolute workspace and temporary directory")
	}
	if sandbox.Covers(o.Workspace, o.TempDir) {
		return nil, bad("its temporary directory %s lies in the workspace", o.TempDir)
	}
	if err := c.prepare(o); err != nil {
		return nil, err
	}
	return c, nil
}

// toolchainOf names the toolchain profile a command belongs to.
var toolchainOf = map[string]string{
	"npx": "npm", "npm": "npm", "node": "npm", "pnpm": "npm", "yarn": "npm", "bunx": "npm",
	"uvx": "pip", "uv": "pip", "pip": "pip", "pip3": "pip", "python": "pip", "python3": "pip", "pipx": "pip",
	"go": "go",
}

// prepare composes a stdio server's jail and environment.
func (c *Client) prepare(o Options) error {
	s := c.cfg
	bad := func(format string, args ...any) error {
		return &Error{Code: CodeInvalidConfig, Server: s.Name, Reason: fmt.Sprintf(format, args...)}
	}
	ws := filepath.Clean(o.Workspace)
	own := filepath.Join(o.TempDir, "mcp-"+s.Name)
	home, tmp := filepath.Join(own, "home"), filepath.Join(own, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return bad("its private directory: %v", err)
		}
	}
	own, _ = filepath.EvalSymlinks(own)
	home, tmp = filepath.Join(own, "home"), filepath.Join(own, "tmp")
	env := map[string]string{}
	for _, k := range []string{"PATH", "LANG", "TERM"} {
		if v, ok := o.Env[k]; ok {
			env[k] = v
		}
	}
	if env["PATH"] == "" {
		env["PATH"] = toolchain.DefaultPath
	}
	pol := sandbox.Policy{
		SystemRoots:   slices.Clone(o.Base.SystemRoots),
		ReadableRoots: slices.Clone(o.Base.ReadableRoots),
		WritableRoots: []string{own},
		Unguarded:     []string{own},
		Protected:     slices.Clone(o.Base.Protected),
		Network:       sandbox.NetworkOff,
		Limits:        o.Base.Limits,
	}
	if s.Grant.WriteWorkspace {
		pol.WritableRoots = append(pol.WritableRoots, ws)
	} else {
		pol.ReadableRoots = append(pol.ReadableRoots, ws)
	}
	if s.Grant.Network {
		pol.Network = sandbox.NetworkFull
	}
	for _, p := range slices.Concat(s.Grant.ReadOnly, s.Grant.Writable) {
		if !filepath.IsAbs(p) {
			return bad("granted path %q is not absolute", p)
		}
	}
	pol.SystemRoots = append(pol.SystemRoots, s.Grant.ReadOnly...)
	for _, w := range s.Grant.Writable {
		if !s.Grant.WriteWorkspace && (sandbox.Covers(ws, w) || sandbox.Covers(w, ws)) {
			return bad("granted writable path %s overlaps the workspace, which it may only read", w)
		}
		pol.WritableRoots = append(pol.WritableRoots, w)
	}
	if want := toolchainOf[filepath.Base(s.Command)]; want != "" {
		for _, tc := range o.Toolchains {
			if tc.Name != want {
				continue
			}
			for k, v := range tc.Env {
				env[k] = v
			}
			pol.SystemRoots = append(pol.SystemRoots, tc.ReadOnly...)
			pol.WritableRoots = append(pol.WritableRoots, tc.Caches...)
			pol.Unguarded = append(pol.Unguarded, tc.Caches...)
		}
	}
	env["HOME"], env["TMPDIR"] = home, tmp
	maps.Copy(env, s.Env)

	name := s.Command
	if filepath.IsAbs(name) {
		c.bin = lookPath(filepath.Base(name), []string{filepath.Dir(name)})
	} else if filepath.Base(name) == name {
		c.bin = lookPath(name, filepath.SplitList(env["PATH"]))
	}
	if c.bin == "" {
		c.missing = fmt.Sprintf("its executable %q was not found (an absolute path, or a name on its PATH)", name)
	}
	if c.bin != "" && !slices.ContainsFunc(slices.Concat(pol.SystemRoots, pol.ReadableRoots, pol.WritableRoots),
		func(r string) bool { return sandbox.Covers(r, c.bin) }) {
		// The executable alone, never its directory.
		pol.SystemRoots = append(pol.SystemRoots, c.bin)
	}
	pol.EnvAllow = slices.Sorted(maps.Keys(env))
	if err := sandbox.Validate(pol); err != nil {
		return bad("its jail's policy: %v", err)
	}
	c.argv = append([]string{c.bin}, s.Args...)
	c.dir, c.env, c.pol = ws, env, pol
	return nil
}

// lookPath finds the executable name in the first of dirs (absolute ones
// only) that holds it, and returns it with links resolved, or "".
func lookPath(name string, dirs []string) string {
	for _, dir := range dirs {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		r, err := filepath.EvalSymlinks(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if fi, err := os.Stat(r); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return r
		}
	}
	return ""
}

// Name returns the server's configured name.
func (c *Client) Name() string { return c.cfg.Name }

// current returns the running incarnation, launching one when none runs
// (counting it against MaxRestarts), or why none will.
func (c *Client) current() (*run, *Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, errorf(CodeClosed, c.cfg.Name, "its client was closed")
	case c.run != nil && !c.run.ended():
		return c.run, nil
	case c.starts > MaxRestarts:
		why := "it was never started"
		if c.last != nil {
			why = c.last.Reason
		}
		return nil, errorf(CodeRestartsExhausted, c.cfg.Name, "it ended %d times and is not started again (last: %s)", c.starts, why)
	}
	c.starts++
	c.run = c.launch()
	return c.run, nil
}

// ready returns a running, initialized incarnation, waiting for its
// start until ctx ends.
func (c *Client) ready(ctx context.Context) (*run, *Error) {
	r, e := c.current()
	if e != nil {
		return nil, e
	}
	select {
	case <-r.ready:
	case <-ctx.Done():
		return nil, errorf(CodeTimeout, c.cfg.Name, "it was still starting when the call's time ran out")
	}
	r.mu.Lock()
	connected := r.cs != nil
	r.mu.Unlock()
	if r.ended() || !connected {
		return nil, c.endedErr(r)
	}
	return r, nil
}

// endedErr is why r ended, with what happens next.
func (c *Client) endedErr(r *run) *Error {
	e := *r.failure()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.Code == CodeClosed {
		return &e
	}
	if c.starts > MaxRestarts {
		e.Reason += fmt.Sprintf("; it is not started again (%d restarts used)", MaxRestarts)
	} else {
		e.Reason += fmt.Sprintf("; it starts again at the next call (restart %d of %d)", c.starts, MaxRestarts)
	}
	return &e
}

// ended records that r ended.
func (c *Client) ended(r *run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run == r {
		c.last = r.failure()
	}
}

// Status is a server's state, as Client.Status reports it.
type Status struct {
	Name string
	// Running: an incarnation is running (perhaps still initializing).
	Running bool
	// Starts counts its incarnations so far.
	Starts int
	// Last says why its last incarnation ended; nil while none did.
	Last *Error
}

// Status reports the server's state.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Status{Name: c.cfg.Name, Running: c.run != nil && !c.run.ended(), Starts: c.starts, Last: c.last}
}

// Close shuts the server down (a stdio server's input closed, then killed
// past StopTimeout) and refuses to start it again. It is safe to call
// more than once; it returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	r := c.run
	c.mu.Unlock()
	if r != nil {
		r.shutdown()
	}
	return nil
}

func (c *Client) startTimeout() time.Duration {
	if c.test.startTimeout > 0 {
		return c.test.startTimeout
	}
	return StartTimeout
}

func (c *Client) writeTimeout() time.Duration {
	if c.test.writeTimeout > 0 {
		return c.test.writeTimeout
	}
	return WriteTimeout
}

// headerTransport adds a server's configured headers to each request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

// RoundTrip sends req with the headers, and bounds the response's body:
// an event stream to MaxStreamBytes (the SDK bounds each event to
// MaxMessageBytes), any other body to MaxMessageBytes.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for _, k := range sortedKeys(t.headers) {
			req.Header.Set(k, t.headers[k])
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	limit := int64(MaxMessageBytes)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		limit = MaxStreamBytes
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, bound: limit, left: limit}
	return resp, nil
}

// MaxStreamBytes bounds what one stdio server writes over its life, and
// one event stream of an HTTP server: past it, the server is stopped
// (CodeProtocol) or the stream ended.
const MaxStreamBytes = 1 << 30

// boundedBody fails a read past its bound.
type boundedBody struct {
	io.ReadCloser
	bound, left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the server's answer ran past %d bytes", b.bound)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
