package lsp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// Bounds on a server across its incarnations.
const (
	// MaxRestarts bounds how many times a server that ended (crashed,
	// hung, broke the protocol, could not start) is started again, each
	// time at the next diagnosis that needs it. Once it ended
	// MaxRestarts+1 times it is not started again while its Plane lives
	// (CodeRestartsExhausted).
	MaxRestarts = 3
	// maxOpenDocuments bounds the documents one server holds open; past
	// it the least recently diagnosed is closed (the server reads it from
	// disk again).
	maxOpenDocuments = 32
)

// server is one configured server of a Plane and its current
// incarnation.
type server struct {
	p       *Plane
	cfg     Server
	bin     string // the executable, resolved; "" when it was not found
	missing string // why bin is empty
	argv    []string
	env     map[string]string
	pol     sandbox.Policy

	turn chan struct{} // one diagnosis at a time

	mu     sync.Mutex
	run    *run   // the current incarnation, or nil
	starts int    // incarnations launched
	last   *Error // why the last incarnation ended
	closed bool

	version int32  // the last document version sent; guarded by turn
	clock   uint64 // diagnoses made; guarded by turn
}

// current returns the running incarnation, launching one when none runs
// (counting it against MaxRestarts), or why none will.
func (s *server) current() (*run, *Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, &Error{Code: CodeClosed, Server: s.cfg.Name, Reason: "its plane was closed"}
	case s.run != nil && !s.run.ended():
		return s.run, nil
	case s.starts > MaxRestarts:
		why := "it was never started"
		if s.last != nil {
			why = s.last.Reason
		}
		return nil, &Error{Code: CodeRestartsExhausted, Server: s.cfg.Name,
			Reason: fmt.Sprintf("it ended %d times and is not started again this session (last: %s)", s.starts, why)}
	}
	s.starts++
	s.run = s.launch()
	return s.run, nil
}

// ended records that r ended.
func (s *server) ended(r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == r {
		s.last = r.failure()
	}
}

// endedNote says what happens next after the server ended: when it
// starts again, or that it will not.
func (s *server) endedNote() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.starts > MaxRestarts {
		return fmt.Sprintf("; it is not started again this session (%d restarts used)", MaxRestarts)
	}
	return fmt.Sprintf("; it starts again at the next write (restart %d of %d)", s.starts, MaxRestarts)
}

// diagnose tells the server of files (all its own) and waits, until ctx
// ends, for its diagnostics of exactly that content.
func (s *server) diagnose(ctx context.Context, files []tool.ChangedFile) []tool.FileDiagnostics {
	began := time.Now()
	out := make([]tool.FileDiagnostics, len(files))
	for i, f := range files {
		out[i] = tool.FileDiagnostics{Path: f.Path, Server: s.cfg.Name}
	}
	pending := func(status tool.DiagnosticsStatus, code Code, reason string) []tool.FileDiagnostics {
		for i := range out {
			if out[i].Status == "" {
				out[i].Status, out[i].Reason, out[i].Waited = status, reason, time.Since(began)
				if code != "" {
					out[i].Code = tool.Code(code)
				}
			}
		}
		return out
	}

	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return pending(tool.DiagnosticsUnsettled, "", "an earlier diagnosis by the server was still running")
	}
	defer func() { <-s.turn }()

	r, e := s.current()
	if e != nil {
		return pending(tool.DiagnosticsUnavailable, e.Code, s.cfg.Name+": "+e.Reason)
	}
	// failed answers for every file not settled yet when a step fails:
	// the run ended (it says why), or ctx did.
	failed := func(why string) []tool.FileDiagnostics {
		for _, f := range files {
			if d := r.docs[f.Path]; d != nil && d.waiter != nil {
				r.unwait(f.Path, d.waiter)
			}
		}
		select {
		case <-r.done:
			e := r.failure()
			return pending(tool.DiagnosticsUnavailable, e.Code, fmt.Sprintf("%s: %s%s", s.cfg.Name, e.Reason, s.endedNote()))
		case <-ctx.Done():
			return pending(tool.DiagnosticsUnsettled, "", why)
		}
	}
	select {
	case <-r.ready:
	case <-ctx.Done():
		return pending(tool.DiagnosticsUnsettled, "", "the server is starting")
	}
	if r.ended() {
		return failed("")
	}
	s.clock++
	writing := map[string]bool{}
	for _, f := range files {
		writing[f.Path] = true
	}
	// A send fails when the run ends (or is ending: a write past
	// writeTimeout stops it), or when ctx ends.
	if err := s.sync(ctx, r, writing); err != nil {
		return failed("the server had not read the changes on disk")
	}
	opened := map[string]bool{}
	for _, f := range files {
		was, err := s.send(ctx, r, f)
		if err != nil {
			return failed("the server had not read the change")
		}
		opened[f.Path] = !was
	}
	if err := s.closeLeastRecent(ctx, r, writing); err != nil {
		return failed("")
	}
	for i, f := range files {
		pub, err := s.settle(ctx, r, f.Path)
		if err == nil && opened[f.Path] && pub.total() == 0 {
			// A document just opened that the server finds clean is
			// asked once more, as a change to the same text: gopls
			// answers a module's first Go file as clean until its next
			// change has loaded the package.
			if _, err = s.send(ctx, r, f); err == nil {
				pub, err = s.settle(ctx, r, f.Path)
			}
		}
		if err != nil {
			return failed("")
		}
		out[i].Status, out[i].Waited = tool.DiagnosticsSettled, time.Since(began)
		out[i].Errors, out[i].Warnings, out[i].Infos, out[i].Hints = pub.counts[0], pub.counts[1], pub.counts[2], pub.counts[3]
		out[i].Items = pub.items
	}
	return out
}

// send tells the server f's content as a new version of its document
// (didChange with the full text when it is open, didOpen otherwise), a
// waiter registered for its publication first; it reports whether the
// document was open already.
func (s *server) send(ctx context.Context, r *run, f tool.ChangedFile) (wasOpen bool, err error) {
	lang, _ := s.cfg.owns(f.Path)
	d := r.docs[f.Path]
	if d == nil {
		d = &document{uri: fileURI(f.Path)}
		r.docs[f.Path] = d
	}
	s.version++
	d.version, d.used = s.version, s.clock
	d.waiter = r.wait(f.Path, d.version)
	wasOpen = d.open
	if d.open {
		err = r.notify(ctx, "textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": d.uri, "version": d.version},
			"contentChanges": []map[string]string{{"text": string(f.Content)}},
		})
	} else {
		d.open = true
		err = r.notify(ctx, "textDocument/didOpen", map[string]any{
			"textDocument": map[string]any{"uri": d.uri, "languageId": lang, "version": d.version, "text": string(f.Content)},
		})
	}
	if err != nil {
		return wasOpen, err
	}
	// Loom's own write is not a change on disk to tell of later.
	if st, ok := statFile(f.Path); ok && r.baseline != nil {
		r.baseline[f.Path] = st
	}
	return wasOpen, nil
}

// settle waits for the server's diagnostics of the version of path last
// sent: its answer to a pull when it answers pulls for the document (the
// settled state of what it holds), else its publication carrying that
// version. An error means the run ended or ctx did.
func (s *server) settle(ctx context.Context, r *run, path string) (published, error) {
	d := r.docs[path]
	if r.pull && !d.pushOnly {
		pub, err := r.pullDiagnostics(ctx, d.uri)
		if err == nil || !isResponseError(err) {
			r.unwait(path, d.waiter)
			d.waiter = nil // a publication it held is dropped with it
			return pub, err
		}
		// The server answers no pull for this document (gopls for
		// go.mod): its publication of the version settles it.
		d.pushOnly = true
	}
	select {
	case pub := <-d.waiter.ch:
		d.waiter = nil
		return pub, nil
	case <-r.done:
		return published{}, r.failure()
	case <-ctx.Done():
		r.unwait(path, d.waiter)
		d.waiter = nil
		return published{}, ctx.Err()
	}
}

// sync tells the server what changed on disk since its baseline, except
// the files being written (their content follows), closing first every
// open document among them so the server reads it from disk.
func (s *server) sync(ctx context.Context, r *run, writing map[string]bool) error {
	if !r.scanOK {
		return nil
	}
	now, ok := scanWorkspace(ctx, s.p.ws, s.cfg.watches)
	if err := ctx.Err(); err != nil {
		return err // the baseline stands: the next diagnosis scans again
	}
	if !ok {
		r.scanOK, r.baseline = false, nil
		return nil
	}
	events := changes(r.baseline, now)
	r.baseline = now
	events = slices.DeleteFunc(events, func(e fileEvent) bool {
		p, _ := pathIn(e.URI, s.p.ws)
		return writing[p]
	})
	for _, e := range events {
		p, _ := pathIn(e.URI, s.p.ws)
		if d := r.docs[p]; d != nil && d.open {
			r.forget(p, d)
			if err := r.notify(ctx, "textDocument/didClose", map[string]any{"textDocument": map[string]string{"uri": d.uri}}); err != nil {
				return err
			}
		}
	}
	for len(events) > 0 {
		n := min(len(events), maxEventsPerNotice)
		if err := r.notify(ctx, "workspace/didChangeWatchedFiles", map[string]any{"changes": events[:n]}); err != nil {
			return err
		}
		events = events[n:]
	}
	return nil
}

// closeLeastRecent closes the least recently diagnosed documents past
// maxOpenDocuments, never one being written.
func (s *server) closeLeastRecent(ctx context.Context, r *run, writing map[string]bool) error {
	var open []string
	for p, d := range r.docs {
		if d.open {
			open = append(open, p)
		}
	}
	if len(open) <= maxOpenDocuments {
		return nil
	}
	slices.SortFunc(open, func(a, b string) int { return cmp.Compare(r.docs[a].used, r.docs[b].used) })
	for _, p := range open[:len(open)-maxOpenDocuments] {
		if writing[p] {
			continue
		}
		d := r.docs[p]
		r.forget(p, d)
		if err := r.notify(ctx, "textDocument/didClose", map[string]any{"textDocument": map[string]string{"uri": d.uri}}); err != nil {
			return err
		}
	}
	return nil
}

// forget drops the document d of path as it is closed: the server keeps
// no entry, nor waiter, of a closed document, so a run holds at most
// maxOpenDocuments (and those being written) however many files it was
// told of.
func (r *run) forget(path string, d *document) {
	d.open = false
	if d.waiter != nil {
		r.unwait(path, d.waiter)
		d.waiter = nil
	}
	delete(r.docs, path)
}

// status reports the server's state.
func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.cfg.Name, Command: slices.Clone(s.argv), Files: slices.Clone(s.cfg.Files), Starts: s.starts, Last: s.last}
	if st.Command == nil {
		st.Command = slices.Clone(s.cfg.Command)
	}
	switch {
	case s.closed:
		st.State = StateClosed
	case s.run == nil:
		st.State = StateIdle
	case !s.run.ended():
		st.State = StateRunning
	case s.starts > MaxRestarts:
		st.State = StateGaveUp
	default:
		st.State = StateEnded
	}
	return st
}

// close shuts the current incarnation down and refuses new ones.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	r := s.run
	s.mu.Unlock()
	if r != nil {
		r.shutdown()
	}
}
