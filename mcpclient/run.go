package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentloom/loom/sandbox"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on one server process or connection.
const (
	// StartTimeout bounds a server's start, from its launch to its answer
	// to initialize; a server past it is stopped as hung.
	StartTimeout = 30 * time.Second
	// WriteTimeout bounds one write to a stdio server's input: a server
	// that reads nothing of what it was sent for this long is stopped as
	// hung.
	WriteTimeout = 10 * time.Second
	// StopTimeout bounds a stdio server's exit once its input is closed;
	// past it, it is killed.
	StopTimeout = 2 * time.Second
	// maxStderrBytes is how much of the end of a server's standard error
	// is kept, to say why it ended.
	maxStderrBytes = 2048
)

// protocolVersion is the MCP version Loom asks for: the last before the
// stateless protocol, which every current server speaks and whose tool
// lists the SDK does not cache on the client.
const protocolVersion = "2025-11-25"

// run is one incarnation of a server: its jailed process (or HTTP
// connection) and the SDK session over it. It ends once, for one reason.
type run struct {
	c      *Client
	ctx    context.Context // ends when the run is stopped: the process is killed with it
	cancel context.CancelFunc
	ex     *sandbox.Execution // nil for an HTTP server
	conn   *pipeConn          // nil for an HTTP server
	cs     *mcp.ClientSession

	ready     chan struct{} // closed once initialized, or when the run ended
	readyOnce sync.Once
	done      chan struct{} // closed when the run ended and its process is gone
	endOnce   sync.Once

	mu     sync.Mutex
	err    *Error
	stderr []byte
	listed bool // its tools were listed (guarded by Client.listMu)
}

// launch starts one incarnation and returns at once; ready closes when
// the server answered initialize or the run ended.
func (c *Client) launch() *run {
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{c: c, ctx: ctx, cancel: cancel, ready: make(chan struct{}), done: make(chan struct{})}
	go r.start()
	return r
}

// start launches the process (or dials), and initializes the session.
func (r *run) start() {
	c := r.c
	name := c.cfg.Name
	var t mcp.Transport
	stdio := c.cfg.Stdio() && c.test.dial == nil
	if c.test.dial != nil {
		t = c.test.dial()
	} else if stdio {
		if c.bin == "" {
			r.end(&Error{Code: CodeServerNotFound, Server: name, Reason: c.missing})
			return
		}
		in, stdin, err := os.Pipe()
		if err != nil {
			r.end(errorf(CodeCrashed, name, "could not make its input pipe: %v", err))
			return
		}
		ex, err := c.broker.Clear(r.ctx, sandbox.CallSpec{
			Key:    sandbox.StepKey{OpID: "mcp", StepID: name},
			Argv:   c.argv,
			Dir:    c.dir,
			Env:    c.env,
			Stdin:  in,
			Policy: c.pol,
			// Over its life; the broker's default (256 MiB) would end a
			// long session's server that answers large results.
			MaxOutputBytes: MaxStreamBytes,
		})
		in.Close()
		if err != nil {
			reason := err.Error()
			if d := sandbox.DenialOf(err); d != nil {
				reason = string(d.Code) + ": " + d.Explain()
			}
			stdin.Close()
			r.end(errorf(CodeRefused, name, "the broker refused to start it: %s", oneLine(reason, 300)))
			return
		}
		r.ex = ex
		r.conn = newPipeConn(r, stdin, ex)
		go r.watch()
		t = pipeTransport{r.conn}
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: c.httpClient, MaxRetries: -1, MaxEventSize: MaxMessageBytes}
	}
	ctx, cancel := context.WithTimeout(r.ctx, c.startTimeout())
	defer cancel()
	cs, err := c.sdk.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		var je *jsonrpc.Error
		switch {
		case r.ended():
		case errors.As(err, &je):
			r.stop(errorf(CodeRequestFailed, name, "it refused initialize: %s", oneLine(je.Message, 300)))
		case ctx.Err() != nil && r.ctx.Err() == nil:
			r.stop(errorf(CodeHung, name, "it did not answer initialize within %d ms", c.startTimeout().Milliseconds()))
		case stdio:
			r.lost(fmt.Sprintf("it ended as it initialized: %s", oneLine(err.Error(), 300)))
		default:
			r.end(errorf(CodeCrashed, name, "could not connect: %s", oneLine(err.Error(), 300)))
		}
		if !stdio {
			r.end(r.failure())
		}
		return
	}
	r.mu.Lock()
	r.cs = cs
	r.mu.Unlock()
	if r.ended() {
		cs.Close() // it ended as it connected: end found no session to close
		return
	}
	if !stdio {
		go func() {
			cs.Wait()
			r.end(errorf(CodeCrashed, name, "its connection ended"))
		}()
	}
	r.readyOnce.Do(func() { close(r.ready) })
}

// lost stops a stdio run whose connection failed under it, for why
// unless the run ends within StopTimeout by itself: its process ended or
// broke the protocol, and watch records which.
func (r *run) lost(why string) {
	select {
	case <-r.done:
	case <-time.After(StopTimeout):
		r.stop(errorf(CodeCrashed, r.c.cfg.Name, "%s", why))
	}
}

// watch ends a stdio run when its process ends or the run is stopped,
// and records why.
func (r *run) watch() {
	select {
	case <-r.ex.Done():
	case <-r.ctx.Done():
	}
	r.ex.Cancel()
	r.conn.Close()
	settled := r.ex.Wait()
	<-r.conn.ended // the end of its standard error is kept
	r.end(r.endOf(settled))
}

// endOf says why the run ended, from how its process settled.
func (r *run) endOf(s sandbox.Settled) *Error {
	name := r.c.cfg.Name
	r.mu.Lock()
	tail := oneLine(strings.TrimSpace(string(r.stderr)), 300)
	r.mu.Unlock()
	var why string
	switch {
	case s.Failed != "":
		return errorf(CodeCrashed, name, "it could not start in its jail: %s", oneLine(s.Failed, 300))
	case s.OutputLimited:
		return errorf(CodeProtocol, name, "it wrote more than its output bound over its life")
	case s.Signal != "":
		why = "it was killed by signal " + s.Signal
	default:
		why = fmt.Sprintf("it exited with status %d", s.ExitCode)
	}
	if tail != "" {
		why += "; its last words: " + tail
	}
	return errorf(CodeCrashed, name, "%s", why)
}

// keepStderr keeps the end of the server's standard error.
func (r *run) keepStderr(b []byte) {
	r.mu.Lock()
	r.stderr = append(r.stderr, b...)
	if len(r.stderr) > maxStderrBytes {
		r.stderr = append(r.stderr[:0], r.stderr[len(r.stderr)-maxStderrBytes:]...)
	}
	r.mu.Unlock()
}

// end records why the run ended (the first reason stands), and tells
// the client. It runs once the process is gone.
func (r *run) end(e *Error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = e
	}
	cs := r.cs
	r.mu.Unlock()
	r.cancel()
	r.endOnce.Do(func() {
		if cs != nil {
			go cs.Close() // returns at once: its connection is gone
		}
		// done closes before ready: a caller woken by ready sees the
		// run ended, never a run without a session.
		close(r.done)
		r.readyOnce.Do(func() { close(r.ready) })
		r.c.ended(r)
	})
}

// stop ends the run for the reason e: the process is killed, and watch
// ends the run once it is gone.
func (r *run) stop(e *Error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = e
	}
	cs := r.cs
	r.mu.Unlock()
	r.cancel()
	if r.ex == nil && cs != nil {
		// No process to kill: closing the session ends the run (its
		// Wait returns).
		go cs.Close()
	}
}

// failure returns why the run ended or is ending.
func (r *run) failure() *Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		return errorf(CodeCrashed, r.c.cfg.Name, "its connection was lost")
	}
	return r.err
}

// ended reports whether the run ended.
func (r *run) ended() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// shutdown ends the run as closed: a stdio server's input is closed and
// it has StopTimeout to exit before it is killed; an HTTP session is
// closed.
func (r *run) shutdown() {
	r.mu.Lock()
	if r.err == nil {
		r.err = errorf(CodeClosed, r.c.cfg.Name, "its client was closed")
	}
	cs := r.cs
	r.mu.Unlock()
	if r.conn != nil {
		r.conn.Close()
		select {
		case <-r.done:
		case <-time.After(StopTimeout):
		}
	} else if cs != nil {
		cs.Close()
	}
	r.cancel()
	if r.ex != nil || cs == nil {
		<-r.done
	} else {
		r.end(r.failure())
	}
}
