package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/agentloom/loom/sandbox"
)

// Bounds on one server process.
const (
	// startTimeout bounds a server's start, from its launch to its answer
	// to initialize; a server past it is stopped as hung.
	startTimeout = 30 * time.Second
	// writeTimeout bounds one write to a server's input: a server that
	// reads nothing of what it was sent for this long is stopped as hung.
	writeTimeout = 10 * time.Second
	// stopTimeout bounds a server's clean shutdown (shutdown, then exit);
	// past it, the server is killed.
	stopTimeout = 2 * time.Second
	// maxStderrBytes is how much of the end of a server's standard error
	// is kept, to say why it ended.
	maxStderrBytes = 2048
	// maxServerRequests bounds the requests of a server answered at once;
	// one past it is left unanswered.
	maxServerRequests = 8
	// maxConfigurationItems bounds the items of a workspace/configuration
	// request answered.
	maxConfigurationItems = 64
)

// run is one incarnation of a server: its jailed process and the
// connection to it. It ends once, for one reason (err).
type run struct {
	s      *server
	ctx    context.Context // ends when the run is stopped: the process is killed with it
	cancel context.CancelFunc
	ex     *sandbox.Execution
	conn   *jsonrpc2.Conn
	stdin  *os.File
	out    *io.PipeReader
	pumped chan struct{} // closed when pump has taken the last of the output

	ready     chan struct{} // closed when initialize was answered, or the run ended
	readyOnce sync.Once
	done      chan struct{} // closed when the run ended and its process is gone
	reqs      chan struct{} // one token per server request being answered
	sending   chan struct{} // holds a token while a message of Loom's is being written

	mu     sync.Mutex
	err    *Error // why the run ended, or is ending; set once
	waits  map[string]*waiter
	stderr []byte

	// pull: the server answers textDocument/diagnostic (its initialize
	// result names a diagnosticProvider). Set before ready closes.
	pull bool

	// Touched only by the diagnosis holding the server's turn, after ready.
	docs     map[string]*document
	baseline map[string]stamp
	scanOK   bool
}

// waiter is a diagnosis waiting for the publication of one version of a
// document.
type waiter struct {
	version int32
	ch      chan published // buffered: the publication is never blocked on
}

// document is a file the server was told of with didOpen.
type document struct {
	uri     string
	version int32
	open    bool
	used    uint64  // when it was last diagnosed: the least recent is closed first
	waiter  *waiter // the diagnosis of its last version
	// pushOnly: the server answered a pull for it with an error, so its
	// publications settle it.
	pushOnly bool
}

// launch starts one incarnation of s in its jail and returns at once;
// its initialize runs in the background, and ready closes when it was
// answered or the run ended.
func (s *server) launch() *run {
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{
		s:       s,
		ctx:     ctx,
		cancel:  cancel,
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
		reqs:    make(chan struct{}, maxServerRequests),
		sending: make(chan struct{}, 1),
		waits:   map[string]*waiter{},
		docs:    map[string]*document{},
	}
	go r.start()
	return r
}

// start launches the process, connects to it and initializes it.
func (r *run) start() {
	s := r.s
	// The files the server will read as it initializes are its baseline:
	// what changes after it is told.
	r.baseline, r.scanOK = scanWorkspace(r.ctx, s.p.ws, s.cfg.watches)
	if s.bin == "" {
		r.end(&Error{Code: CodeNotFound, Server: s.cfg.Name, Reason: s.missing})
		return
	}
	in, stdin, err := os.Pipe()
	if err != nil {
		r.end(&Error{Code: CodeCrashed, Server: s.cfg.Name, Reason: "could not make its input pipe: " + err.Error()})
		return
	}
	r.stdin = stdin
	ex, err := s.p.broker.Clear(r.ctx, sandbox.CallSpec{
		Key:    sandbox.StepKey{OpID: "lsp", StepID: s.cfg.Name},
		Argv:   s.argv,
		Dir:    s.p.ws,
		Env:    s.env,
		Stdin:  in,
		Policy: s.pol,
	})
	in.Close()
	if err != nil {
		reason := err.Error()
		if d := sandbox.DenialOf(err); d != nil {
			reason = string(d.Code) + ": " + d.Explain()
		}
		stdin.Close()
		r.end(&Error{Code: CodeRefused, Server: s.cfg.Name, Reason: "the broker refused to start it: " + oneLine(reason, 300)})
		return
	}
	r.ex = ex
	out, toConn := io.Pipe()
	r.out = out
	r.pumped = make(chan struct{})
	go r.pump(toConn)
	stream := &checkedStream{ObjectStream: jsonrpc2.NewBufferedStream(&pipes{r: out, w: stdin, run: r}, codec{}), run: r}
	r.conn = jsonrpc2.NewConn(context.Background(), stream, r, jsonrpc2.SetLogger(discard{}))
	go r.watch()

	ctx, cancel := context.WithTimeout(r.ctx, s.p.startTimeout())
	defer cancel()
	var result struct {
		Capabilities struct {
			DiagnosticProvider json.RawMessage `json:"diagnosticProvider"`
		} `json:"capabilities"`
	}
	err = r.call(ctx, "initialize", r.initializeParams(), &result)
	switch {
	case err == nil:
		p := result.Capabilities.DiagnosticProvider
		r.pull = len(p) > 0 && string(p) != "null" && string(p) != "false"
	case errors.Is(err, context.DeadlineExceeded):
		r.stop(&Error{Code: CodeHung, Server: s.cfg.Name, Reason: fmt.Sprintf("it did not answer initialize within %d ms", s.p.startTimeout().Milliseconds())})
		return
	default:
		var je *jsonrpc2.Error
		if errors.As(err, &je) {
			r.stop(&Error{Code: CodeInitFailed, Server: s.cfg.Name, Reason: "it refused initialize: " + oneLine(je.Message, 300)})
			return
		}
		r.lost("it ended before answering initialize")
		return
	}
	if err := r.notify(ctx, "initialized", struct{}{}); err != nil {
		r.lost("it ended as it initialized")
		return
	}
	r.readyOnce.Do(func() { close(r.ready) })
}

// lost stops a run whose connection failed under it, for why unless the
// run ends within stopTimeout by itself: the process ended or broke the
// protocol, and watch records which, with its exit status.
func (r *run) lost(why string) {
	select {
	case <-r.done:
	case <-time.After(stopTimeout):
		r.stop(&Error{Code: CodeCrashed, Server: r.s.cfg.Name, Reason: why})
	}
}

// initializeParams is what Loom tells a server of itself: no process to
// watch (the server's pid namespace has none), the workspace as its one
// folder, versioned diagnostics, the language operations Plane asks
// (edits as text edits only: no file created, renamed or deleted), no
// dynamic registration, no configuration requests
// (InitializationOptions carry the settings).
func (r *run) initializeParams() map[string]any {
	ws := r.s.p.ws
	params := map[string]any{
		"processId":  nil,
		"clientInfo": map[string]any{"name": "loom"},
		"rootUri":    fileURI(ws),
		"workspaceFolders": []map[string]any{
			{"uri": fileURI(ws), "name": baseName(ws)},
		},
		"capabilities": map[string]any{
			"general": map[string]any{"positionEncodings": []string{"utf-16"}},
			"textDocument": map[string]any{
				"synchronization":    map[string]any{"dynamicRegistration": false, "didSave": false},
				"publishDiagnostics": map[string]any{"versionSupport": true, "relatedInformation": false},
				"diagnostic":         map[string]any{"dynamicRegistration": false, "relatedDocumentSupport": false},
				"definition":         map[string]any{"linkSupport": true},
				"implementation":     map[string]any{"linkSupport": true},
				"references":         map[string]any{},
				"hover":              map[string]any{"contentFormat": []string{"markdown", "plaintext"}},
				"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true},
				"callHierarchy":      map[string]any{},
				"rename":             map[string]any{"prepareSupport": false},
				"codeAction": map[string]any{
					"codeActionLiteralSupport": map[string]any{"codeActionKind": map[string]any{"valueSet": []string{
						"", "quickfix", "refactor", "refactor.extract", "refactor.inline", "refactor.rewrite", "source", "source.organizeImports",
					}}},
					"isPreferredSupport": true,
					"disabledSupport":    true,
				},
			},
			"workspace": map[string]any{
				"didChangeWatchedFiles": map[string]any{"dynamicRegistration": false},
				"workspaceFolders":      true,
				"configuration":         false,
				"symbol":                map[string]any{},
				"workspaceEdit":         map[string]any{"documentChanges": true, "resourceOperations": []string{}},
			},
			"window": map[string]any{"workDoneProgress": false},
		},
	}
	if len(r.s.cfg.InitializationOptions) > 0 {
		params["initializationOptions"] = r.s.cfg.InitializationOptions
	}
	return params
}

// pump delivers the process's standard output to the connection and
// keeps the end of its standard error, until the process's output ends.
// Once the connection stops reading, output is drained and dropped.
func (r *run) pump(toConn *io.PipeWriter) {
	for o := range r.ex.Output() {
		if o.Stream == sandbox.Stderr {
			r.mu.Lock()
			r.stderr = append(r.stderr, o.Bytes...)
			if len(r.stderr) > maxStderrBytes {
				r.stderr = append(r.stderr[:0], r.stderr[len(r.stderr)-maxStderrBytes:]...)
			}
			r.mu.Unlock()
			continue
		}
		toConn.Write(o.Bytes) // fails once the connection is closed: dropped
	}
	toConn.Close()
	close(r.pumped)
}

// watch ends the run when the connection drops or the process ends,
// whichever comes first, and records why.
func (r *run) watch() {
	select {
	case <-r.conn.DisconnectNotify():
	case <-r.ex.Done():
	case <-r.ctx.Done():
	}
	r.ex.Cancel()
	r.conn.Close()
	r.out.Close()
	settled := r.ex.Wait()
	r.stdin.Close()
	// The output is closed before Wait returns: once pump has taken its
	// last chunk, the stderr tail is whole.
	<-r.pumped
	r.end(r.endOf(settled))
}

// endOf says why the run ended, from how its process settled, unless a
// reason was recorded before.
func (r *run) endOf(s sandbox.Settled) *Error {
	name := r.s.cfg.Name
	r.mu.Lock()
	tail := oneLine(strings.TrimSpace(string(r.stderr)), 300)
	r.mu.Unlock()
	var why string
	switch {
	case s.Failed != "":
		return &Error{Code: CodeCrashed, Server: name, Reason: "it could not start in its jail: " + oneLine(s.Failed, 300)}
	case s.OutputLimited:
		return &Error{Code: CodeProtocol, Server: name, Reason: "it wrote more than its output bound over its life"}
	case s.Signal != "":
		why = "it was killed by signal " + s.Signal
	default:
		why = fmt.Sprintf("it exited with status %d", s.ExitCode)
	}
	if tail != "" {
		why += "; its last words: " + tail
	}
	return &Error{Code: CodeCrashed, Server: name, Reason: why}
}

// end records why the run ended (the first reason stands), releases
// every waiter and, once its process is gone, tells the server.
func (r *run) end(e *Error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = e
	}
	r.mu.Unlock()
	r.cancel()
	r.readyOnce.Do(func() { close(r.ready) })
	close(r.done)
	r.s.ended(r)
}

// stop ends the run for the reason e: the process is killed, and watch
// ends the run once it is gone.
func (r *run) stop(e *Error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = e
	}
	r.mu.Unlock()
	r.cancel() // kills the process, or ends a start still under way
}

// failure returns why the run ended, once done is closed.
func (r *run) failure() *Error {
	r.mu.Lock()
	defer r.mu.Unlock()
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

// call makes a request and decodes its result, giving up when ctx ends
// or the run ends.
func (r *run) call(ctx context.Context, method string, params, result any) error {
	var w jsonrpc2.Waiter
	err := r.send(ctx, func() (err error) {
		w, err = r.conn.DispatchCall(context.Background(), method, params)
		return err
	})
	if err != nil {
		return err
	}
	return w.Wait(ctx, result)
}

// notify sends a notification, giving up when ctx ends or the run ends.
func (r *run) notify(ctx context.Context, method string, params any) error {
	return r.send(ctx, func() error { return r.conn.Notify(context.Background(), method, params) })
}

// send writes one message of Loom's (write) in the background, giving up
// when ctx ends or the run ends; the write goes on, bounded by
// writeTimeout. At most one write is in flight per run: when the last one
// is still pending as the next is due, the server is not reading, and the
// run is stopped as hung rather than a second write queued behind it.
func (r *run) send(ctx context.Context, write func() error) error {
	select {
	case r.sending <- struct{}{}:
	default:
		r.stop(&Error{Code: CodeHung, Server: r.s.cfg.Name, Reason: "it had not read the last message when the next was due"})
		return errStillSending
	}
	sent := make(chan error, 1)
	go func() {
		err := write()
		<-r.sending
		sent <- err
	}()
	select {
	case err := <-sent:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-r.done:
		return r.failure()
	}
}

// errStillSending fails a send due while the last is still being written.
var errStillSending = errors.New("the last message is still being written")

// Handle serves what the server sends: publications of diagnostics are
// read, other notifications ignored, and requests answered in the
// background, at most maxServerRequests at once.
func (r *run) Handle(_ context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		if req.Method == "textDocument/publishDiagnostics" && req.Params != nil {
			r.publish(*req.Params)
		}
		return
	}
	select {
	case r.reqs <- struct{}{}:
		go func() {
			defer func() { <-r.reqs }()
			r.answer(conn, req)
		}()
	default:
		// Too many unanswered requests already: this one stays unanswered.
	}
}

// answer replies to a server's request: the few a client must answer are
// answered with what changes nothing; the rest are refused as unknown.
func (r *run) answer(conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	ctx := context.Background()
	switch req.Method {
	case "client/registerCapability", "client/unregisterCapability",
		"window/workDoneProgress/create", "window/showMessageRequest":
		conn.Reply(ctx, req.ID, nil)
	case "window/showDocument":
		conn.Reply(ctx, req.ID, map[string]bool{"success": false})
	case "workspace/workspaceFolders":
		conn.Reply(ctx, req.ID, []map[string]string{{"uri": fileURI(r.s.p.ws), "name": baseName(r.s.p.ws)}})
	case "workspace/applyEdit":
		conn.Reply(ctx, req.ID, map[string]any{"applied": false, "failureReason": "Loom applies no edit a server proposes"})
	case "workspace/configuration":
		var p struct {
			Items []json.RawMessage `json:"items"`
		}
		if req.Params == nil || json.Unmarshal(*req.Params, &p) != nil || len(p.Items) > maxConfigurationItems {
			conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "invalid configuration request"})
			return
		}
		conn.Reply(ctx, req.ID, make([]any, len(p.Items)))
	default:
		conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found"})
	}
}

// publish reads a publication of diagnostics and hands it to the
// diagnosis waiting for that version of that document; anything else
// (another document, another version, no version, a URI outside the
// workspace) is dropped unread.
func (r *run) publish(raw json.RawMessage) {
	var p publishParams
	if json.Unmarshal(raw, &p) != nil || p.Version == nil {
		return
	}
	path, ok := pathIn(p.URI, r.s.p.ws)
	if !ok {
		return
	}
	r.mu.Lock()
	w := r.waits[path]
	if w == nil || int64(w.version) != *p.Version {
		r.mu.Unlock()
		return
	}
	delete(r.waits, path)
	r.mu.Unlock()
	w.ch <- decodeDiagnostics(p.Diagnostics)
}

// pullDiagnostics asks the server for a document's diagnostics of what it
// was last told (textDocument/diagnostic): the answer is the settled
// state of that content. An error the server answers with is a
// *jsonrpc2.Error (see isResponseError).
func (r *run) pullDiagnostics(ctx context.Context, uri string) (published, error) {
	var report struct {
		Kind  string          `json:"kind"`
		Items json.RawMessage `json:"items"`
	}
	if err := r.call(ctx, "textDocument/diagnostic", map[string]any{"textDocument": map[string]string{"uri": uri}}, &report); err != nil {
		return published{}, err
	}
	if report.Kind != "full" {
		// Loom never names a previous result, so only a full report
		// answers it.
		return published{}, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "a report that is not full"}
	}
	return decodeDiagnostics(report.Items), nil
}

// isResponseError reports whether err is the server's own error answer
// to a request (not a lost connection, a write that failed, or a context
// that ended).
func isResponseError(err error) bool {
	var je *jsonrpc2.Error
	return errors.As(err, &je)
}

// wait registers a waiter for version of path.
func (r *run) wait(path string, version int32) *waiter {
	w := &waiter{version: version, ch: make(chan published, 1)}
	r.mu.Lock()
	r.waits[path] = w
	r.mu.Unlock()
	return w
}

// unwait removes the waiter of path, if it is still w.
func (r *run) unwait(path string, w *waiter) {
	r.mu.Lock()
	if r.waits[path] == w {
		delete(r.waits, path)
	}
	r.mu.Unlock()
}

// shutdown asks the server to shut down and exit, within stopTimeout,
// then kills what is left; the run ends as closed.
func (r *run) shutdown() {
	r.mu.Lock()
	if r.err == nil {
		r.err = &Error{Code: CodeClosed, Server: r.s.cfg.Name, Reason: "its plane was closed"}
	}
	r.mu.Unlock()
	select {
	case <-r.ready:
	default:
		r.stop(nil)
		<-r.done
		return
	}
	if !r.ended() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		if r.call(ctx, "shutdown", nil, nil) == nil {
			r.notify(ctx, "exit", nil)
		}
		select {
		case <-r.done:
		case <-ctx.Done():
		}
		cancel()
	}
	r.stop(nil)
	<-r.done
}

// pipes joins the server's output and input into the connection's one
// stream. A write that the server does not read within writeTimeout
// stops the run as hung.
type pipes struct {
	r   *io.PipeReader
	w   *os.File
	run *run
}

func (p *pipes) Read(b []byte) (int, error) { return p.r.Read(b) }

func (p *pipes) Write(b []byte) (int, error) {
	timeout := p.run.s.p.writeTimeout()
	p.w.SetWriteDeadline(time.Now().Add(timeout))
	n, err := p.w.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		p.run.stop(&Error{Code: CodeHung, Server: p.run.s.cfg.Name, Reason: fmt.Sprintf("it read nothing of its input for %d ms", timeout.Milliseconds())})
	}
	return n, err
}

func (p *pipes) Close() error {
	p.r.Close()
	return p.w.Close()
}

// checkedStream records why reading the server's output failed, when it
// broke the protocol.
type checkedStream struct {
	jsonrpc2.ObjectStream
	run *run
}

func (c *checkedStream) ReadObject(v any) error {
	err := c.ObjectStream.ReadObject(v)
	var e *Error
	switch {
	case errors.As(err, &e):
		e.Server = c.run.s.cfg.Name
		c.run.stop(e)
	case err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.ErrClosedPipe):
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syntax) || errors.As(err, &typ) || strings.HasPrefix(err.Error(), "jsonrpc2:") {
			c.run.stop(&Error{Code: CodeProtocol, Server: c.run.s.cfg.Name, Reason: "it sent a message that is not JSON-RPC: " + oneLine(err.Error(), 200)})
		}
	}
	return err
}

// discard is the connection's logger: nothing a server makes the
// library log reaches the host's standard error.
type discard struct{}

func (discard) Printf(string, ...any) {}

// oneLine returns s with control characters escaped, cut to n bytes.
func oneLine(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= n {
			break
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return cut(b.String(), n)
}

// baseName is the last element of a path, as a folder's name.
func baseName(p string) string {
	i := strings.LastIndexByte(p, '/')
	return p[i+1:]
}
