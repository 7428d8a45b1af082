package tool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/internal/search"
	"github.com/agentloom/loom/sandbox"
)

// Bounds of the grep tool.
const (
	// defaultGrepResults is how many matching lines grep shows when
	// max_results is not given.
	defaultGrepResults = 100
	// MaxGrepResults is the most matching lines grep shows; a larger
	// max_results is clamped to it.
	MaxGrepResults = 1000
	// maxGrepContext is the most context lines grep shows around a match
	// (search.MaxContext); a larger context is clamped to it.
	maxGrepContext = search.MaxContext
	// grepTimeout bounds one search, whichever engine runs it.
	grepTimeout = 60 * time.Second
	// maxConcurrentSearches is grep's declared headroom in its step's
	// budget: how many grep calls of one batch may run at once (grep is
	// Concurrent, so a batch may hold several).
	maxConcurrentSearches = 4
	// grepStderrBytes is how much of ripgrep's stderr is kept for an
	// error message.
	grepStderrBytes = 4 << 10
	// maxRipgrepOutputBytes bounds the JSON stream one jailed ripgrep run
	// may write; at the bound the broker stops it and the matches read so
	// far stand, with a note that the search was cut there.
	maxRipgrepOutputBytes = 64 << 20
	// grepConfirmTimeout bounds the re-reading that confirms a ripgrep
	// result (search.Confirm) after the search, which grepTimeout does
	// not cover; hits not confirmed by then are left out.
	grepConfirmTimeout = 10 * time.Second
)

// Engine names reported in GrepDetails.Engine.
const (
	// EngineRipgrep is ripgrep run in a jail through the call's broker.
	EngineRipgrep = "ripgrep"
	// EngineGo is the pure-Go engine, run in the host process.
	EngineGo = "go"
)

// Failure codes grep adds to the shared ones.
const (
	// CodeInvalidPattern: the pattern does not compile (RE2 syntax) or is
	// empty; the text names the problem and the offending part.
	CodeInvalidPattern Code = "invalid_pattern"
	// CodeInvalidGlob: the glob is one the engines would not agree on
	// (ripgrep refuses it, or reads it differently across versions) or
	// is longer than search.MaxGlobBytes; the text names what is wrong
	// and the syntax accepted. Refused before any engine runs.
	CodeInvalidGlob Code = "invalid_glob"
	// CodeSearchFailed: the arguments were accepted but the search could
	// not be completed (ripgrep failed in its jail, the Go engine met an
	// error). A root that changed after it was resolved is
	// CodePathChanged instead. The other engine is never tried instead.
	CodeSearchFailed Code = "search_failed"
)

// goEngineInHost is GrepDetails.InHost whenever the Go engine ran: what
// confines it, since no jail does.
const goEngineInHost = "the Go engine ran in the host process with no jail; " +
	"it follows no symbolic link, opens directories and regular files only and never blocks on an open, " +
	"and reads only the workspace and the readable roots the host listed"

type grepArgs struct {
	Pattern         string `json:"pattern" jsonschema:"matched per line"`
	Path            string `json:"path,omitempty" jsonschema:"file or directory (default: the workspace)"`
	Glob            string `json:"glob,omitempty" jsonschema:"e.g. *.go, !*_test.go"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty"`
	Context         int    `json:"context,omitempty"`
	MaxResults      int    `json:"max_results,omitempty"`
}

// GrepDetails is the Details of a grep outcome (success or a search
// that failed after the arguments were accepted).
type GrepDetails struct {
	// Engine is EngineRipgrep or EngineGo: the engine that produced
	// this outcome.
	Engine string `json:"engine"`
	// InHost says what confines the Go engine, since no jail does, when
	// it ran (it ran in the host process, follows no link, opens
	// directories and regular files only, and reads only the workspace
	// and the roots the host listed); empty when ripgrep did.
	InHost string `json:"in_host,omitempty"`
	// Fallback says why the Go engine ran although ripgrep is installed
	// and the host has a broker: the session's policy cannot give a jail
	// what ripgrep needs. Empty otherwise.
	Fallback string `json:"fallback,omitempty"`
	// Matches counts matching lines found; Files the files holding them.
	Matches int `json:"matches"`
	Files   int `json:"files"`
	// Shown counts the matching lines in the text.
	Shown int `json:"shown"`
	// Truncated: more matches were found than shown.
	Truncated bool `json:"truncated"`
	// Stopped: the search stopped collecting at search.MaxScanMatches,
	// so Matches is a lower bound.
	Stopped bool `json:"stopped,omitempty"`
	// Left counts the matching lines found past search.MaxScanMatches
	// and not kept (a lower bound on what the search left).
	Left int `json:"left,omitempty"`
	// Unconfirmed counts the lines (matches and context) ripgrep
	// reported that re-reading the file through the workspace did not
	// confirm (search.Confirm), so they were left out and Matches and
	// Files do not count them.
	Unconfirmed int `json:"unconfirmed,omitempty"`
	// TimedOut: the search hit its 60 s bound (grepTimeout); what was
	// found is shown.
	TimedOut bool `json:"timed_out,omitempty"`
	// SkippedLarge counts files the Go engine skipped for their size.
	SkippedLarge int `json:"skipped_large,omitempty"`
	// Overflow is set when the rendered result spilled to a blob.
	Overflow *blob.Overflow `json:"overflow,omitempty"`
	// Warnings is ripgrep's stderr (its last grepStderrBytes) when it
	// searched to the end but could not read some entries.
	Warnings string `json:"warnings,omitempty"`
	// Enforcement is the jail report of the ripgrep run that produced
	// this outcome; nil when the Go engine ran, which no jail confines.
	Enforcement *sandbox.Enforcement `json:"enforcement,omitempty"`
}

// GrepTool returns grep: a regular-expression search over files. Both
// engines select files and render results the same way; GrepDetails.Engine
// says which ran.
//
// The pattern and the glob are validated first, so no engine meets input
// the other would refuse (CodeInvalidPattern, CodeInvalidGlob), and the
// path is authorized by ResolveRead: the workspace, the readable and
// writable roots the host listed and this call's granted roots, never the
// base's SystemRoots. The engine is then chosen once, from the host's
// configuration alone:
//   - ripgrep, jailed through the call's broker (read-only, network off),
//     when rg is on PATH, the host has a broker and the session's policy
//     can give a jail the search root and rg's own directory;
//   - otherwise the pure-Go engine of internal/search, in the host, with
//     GrepDetails.Fallback saying why when rg is installed. It follows no
//     link, never blocks on an open and reads regular files only, all
//     relative to directory descriptors it pinned, so what it reads is
//     what the path discipline authorized (GrepDetails.InHost says so).
//
// Once ripgrep was chosen, anything that goes wrong (the broker refuses,
// ripgrep exits 2 before searching, its output cannot be parsed) is an
// error outcome carrying that run's enforcement report, never a silent
// switch to the in-host engine. Ripgrep's result is not trusted as it
// comes: every line shown is confirmed by re-reading its file as the Go
// engine reads (search.Confirm), since ripgrep follows a link swapped in
// below its root during its walk; lines it cannot confirm are left out,
// counted in GrepDetails.Unconfirmed and said in the text.
func GrepTool() Tool {
	return Typed(Tool{
		Name:     "grep",
		Title:    "Search files",
		ReadOnly: true,
		Description: fmt.Sprintf("Search files with an RE2 regular expression (pattern at most %d bytes, glob at most %d). "+
			"Matches print as `path:line:text`, context as `path-line-text`. "+
			"Hidden, .gitignored, .rgignored and binary files and protected paths are skipped unless `path` names them; "+
			"`glob` only narrows. `context`: lines around each match, up to %d; `max_results`: matching lines shown, up to %d "+
			"(default %d, as is zero; larger values are clamped), the rest counted. Stops after %d s or %d matches; lines over %d bytes are cut; output over "+
			"%d KiB goes to a file fs_read pages.",
			search.MaxPatternBytes, search.MaxGlobBytes, maxGrepContext, MaxGrepResults, defaultGrepResults,
			int(grepTimeout/time.Second), search.MaxScanMatches, search.MaxLineBytes, blob.OverflowThreshold>>10),
		PromptSnippet: "grep: regex search over files (ripgrep semantics), path:line:text results",
		Replay:        ReplaySafe,
		Mode:          Concurrent,
		Requirements:  grepRequirements,
	}, runGrep)
}

// grepRequirements: the workspace readable, the system roots for the
// jailed ripgrep (jail-only), nothing writable, network off, grepTimeout
// of wall time.
func grepRequirements(workspace string) sandbox.Policy {
	return sandbox.Policy{
		ReadableRoots: []string{workspace},
		SystemRoots:   sandbox.SystemReadableRoots(),
		Network:       sandbox.NetworkOff,
		WallMs:        int(grepTimeout / time.Millisecond),
	}
}

func runGrep(ctx context.Context, c *Call, a grepArgs) Outcome {
	var notes []string
	if a.Context < 0 || a.MaxResults < 0 {
		return Fail(CodeInvalidArguments, fmt.Sprintf("context and max_results must not be negative (got context=%d, max_results=%d)", a.Context, a.MaxResults))
	}
	if a.Context > maxGrepContext {
		notes = append(notes, ClampNote("context", int64(a.Context), maxGrepContext))
		a.Context = maxGrepContext
	}
	switch {
	case a.MaxResults == 0:
		a.MaxResults = defaultGrepResults
	case a.MaxResults > MaxGrepResults:
		notes = append(notes, ClampNote("max_results", int64(a.MaxResults), MaxGrepResults))
		a.MaxResults = MaxGrepResults
	}
	opts := search.Options{Pattern: a.Pattern, CaseInsensitive: a.CaseInsensitive, Glob: a.Glob, Context: a.Context}
	if _, err := search.Validate(opts); err != nil {
		var ge *search.GlobError
		if errors.As(err, &ge) {
			return Fail(CodeInvalidGlob, err.Error())
		}
		return Fail(CodeInvalidPattern, err.Error()+"; escape regex metacharacters such as ( [ { . * + ? with a backslash to match them literally")
	}
	if a.Path == "" {
		a.Path = "."
	}
	root, fail := c.searchRoot(a.Path, &opts)
	if fail != nil {
		return *fail
	}

	ctx, cancel := context.WithTimeout(ctx, grepTimeout)
	defer cancel()
	det := GrepDetails{Engine: EngineGo, InHost: goEngineInHost}
	if rg := ripgrepPath(c); rg != "" {
		p, d := ripgrepPolicy(c, rg, root, opts)
		if d == nil {
			return runRipgrepEngine(ctx, c, a, rg, root, p, opts, notes)
		}
		// The host's policy cannot jail ripgrep for this root (rg's own
		// directory or the root is not one it lets a jail read): a fact
		// of the host's configuration, decided before anything ran.
		det.Fallback = "ripgrep is installed but cannot be jailed under this session's policy: " + d.Explain()
	}
	if c.Broker != nil {
		// The Go engine is budgeted like a clearance, so a step's cap and
		// its aborts hold whichever engine runs.
		t, err := c.Broker.Ledger().Admit(c.stepKey(), sandbox.Budget{MaxOutstanding: maxConcurrentSearches}, cancel)
		if d := sandbox.DenialOf(err); d != nil {
			return grepFail(Code(d.Code), d.Explain(), det)
		}
		defer c.Broker.Ledger().Release(t)
	}
	res, err := search.Go(ctx, root, opts)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		det.TimedOut = true
	case errors.Is(err, context.Canceled):
		return grepFail(CodeCancelled, "the search was cancelled before it finished", det)
	case errors.Is(err, fs.ErrInvalid):
		return grepFail(CodeSearchFailed, notSearchable(a.Path), det)
	case err != nil:
		return grepFail(CodeSearchFailed, fmt.Sprintf("searching %s: %v (a link may have been swapped into the path since it was checked; grep follows none)", a.Path, err), det)
	}
	return grepOutcome(c, a, res, det, notes)
}

// searchRoot resolves path as a search root for reading, refusing a root
// that is missing, a link swapped in since resolution, or neither a
// directory nor a regular file, and sets the ignore root and protected
// entries of opts for it.
func (c *Call) searchRoot(path string, opts *search.Options) (string, *Outcome) {
	root, err := c.ResolveRead(path)
	if err != nil {
		o := pathFailure(err)
		return "", &o
	}
	refuse := func(code Code, text string) (string, *Outcome) {
		o := Fail(code, text)
		return "", &o
	}
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		return refuse(CodeNotFound, fmt.Sprintf("%s does not exist; check the path (relative paths start at the workspace root) or search a directory above it", quoted(path)))
	}
	if fi, err := os.Lstat(root); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// The resolved root holds no link, so one there now was swapped
		// in since: nothing is searched through it.
		return refuse(CodePathChanged, fmt.Sprintf("%s changed after it was resolved (a symbolic link is there now); nothing was searched. Something (a running command?) replaced it just now; try again once it settles", path))
	} else if err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
		// A FIFO, device or socket: neither engine searches one (ripgrep
		// would wait on a FIFO in its jail until grepTimeout).
		return refuse(CodeSearchFailed, notSearchable(path))
	}
	ws, _ := resolveReal(c.Workspace)
	if ws != "" && sandbox.Covers(ws, root) {
		opts.IgnoreRoot = ws
	}
	opts.Protected = protectedForms(c.Base.Protected)
	return root, nil
}

// notSearchable is the refusal of a root that is neither a directory nor
// a regular file.
func notSearchable(path string) string {
	return fmt.Sprintf("%s is neither a directory nor a regular file; grep searches only those", path)
}

// runRipgrepEngine runs the ripgrep engine and renders its outcome; every
// failure is an error outcome, never a switch to the Go engine.
func runRipgrepEngine(ctx context.Context, c *Call, a grepArgs, rg, root string, p sandbox.Policy, opts search.Options, notes []string) Outcome {
	det := GrepDetails{Engine: EngineRipgrep}
	r := runRipgrep(ctx, c, rg, root, p, opts)
	det.Enforcement = r.enf
	switch {
	case r.denial != nil:
		return grepFail(Code(r.denial.Code), r.denial.Explain(), det)
	case r.err != nil:
		return grepFail(r.failCode(), r.err.Error(), det)
	}
	det.TimedOut, det.Warnings = r.timedOut, r.warnings
	if r.outputLimited {
		notes = append(notes, fmt.Sprintf("ripgrep's output reached its %d-byte bound and the search was stopped there: narrow the path or the pattern to see the rest", maxRipgrepOutputBytes))
	}
	if r.warnings != "" {
		notes = append(notes, "ripgrep could not read some entries: "+firstLine(r.warnings))
	}
	// Ripgrep opens what lies below the root by path, so a link swapped
	// in during its walk is followed: only lines the harness reads again,
	// as the Go engine reads, are shown.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grepConfirmTimeout)
	defer cancel()
	res := search.Confirm(cctx, root, r.res, a.MaxResults, a.Context)
	if det.Unconfirmed = res.Unconfirmed; det.Unconfirmed > 0 {
		notes = append(notes, fmt.Sprintf("%d lines ripgrep reported were left out: read again through the workspace, their file did not hold them (it changed during the search, or a link was swapped into its path)", det.Unconfirmed))
	}
	return grepOutcome(c, a, res, det, notes)
}

// firstLine returns s up to its first newline, cut to maxNoteBytes.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > maxNoteBytes {
		s = strings.ToValidUTF8(s[:maxNoteBytes], "") + "…"
	}
	return s
}

// maxNoteBytes bounds a line of ripgrep's stderr quoted in the text.
const maxNoteBytes = 200

// protectedForms returns each protected entry and, when it differs, its
// resolved form, so a walk over real paths skips both.
func protectedForms(protected []string) []string {
	var out []string
	for _, p := range protected {
		p = filepath.Clean(p)
		out = append(out, p)
		if r, err := resolveReal(p); err == nil && r != p {
			out = append(out, r)
		}
	}
	return out
}

// ripgrepPath returns the resolved path of rg when the ripgrep engine can
// run (rg is on PATH and the host has a broker), else "".
func ripgrepPath(c *Call) string {
	if c.Broker == nil {
		return ""
	}
	p, err := exec.LookPath("rg")
	if err != nil {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

func grepOutcome(c *Call, a grepArgs, res search.Result, det GrepDetails, notes []string) Outcome {
	det.Matches, det.Files, det.Stopped, det.Left, det.SkippedLarge = res.Matches, res.Files, res.Stopped, res.Left, res.SkippedLarge
	hits, truncated := search.Bound(res.Hits, a.MaxResults, a.Context)
	det.Truncated = truncated
	for _, h := range hits {
		if h.Match {
			det.Shown++
		}
	}
	var b strings.Builder
	if det.Matches == 0 {
		fmt.Fprintf(&b, "No matches for %q in %s.\n", a.Pattern, a.Path)
	} else {
		b.WriteString(search.Render(hits, a.Context, displayFunc(c)))
	}
	var tail []string
	if truncated {
		more := "more"
		if res.Stopped {
			more = "at least that many"
		}
		tail = append(tail, fmt.Sprintf("showing the first %d of %d matching lines in %d files (%s); narrow pattern, path or glob, or raise max_results (at most %d)",
			det.Shown, det.Matches, det.Files, more, MaxGrepResults))
	} else if det.Matches > 0 {
		tail = append(tail, fmt.Sprintf("%d matching lines in %d files", det.Matches, det.Files))
	}
	if res.Stopped {
		tail = append(tail, fmt.Sprintf("the search stopped after %d matching lines (at least %d more were found)", search.MaxScanMatches, max(res.Left, 1)))
	}
	if det.TimedOut {
		tail = append(tail, fmt.Sprintf("the search timed out after %s; results are partial", grepTimeout))
	}
	if res.SkippedLarge > 0 {
		tail = append(tail, fmt.Sprintf("%d files over %d MiB were not searched", res.SkippedLarge, search.MaxFileBytes>>20))
	}
	tail = append(tail, notes...)
	if len(tail) > 0 {
		b.WriteString("[" + strings.Join(tail, "; ") + "]\n")
	}
	text := b.String()
	if len(text) > blob.OverflowThreshold {
		if c.Blobs == nil {
			cut := strings.LastIndexByte(text[:blob.OverflowThreshold], '\n') + 1
			text = text[:cut] + fmt.Sprintf("[output cut at %d bytes: this host stores no overflow; narrow the search]\n", cut)
		} else {
			_, ov, err := c.Blobs.Bound([]byte(text))
			if ov == nil { // a refusal for the session's budget comes with the excerpts, shown below
				return grepFail(CodeSpillFailed, fmt.Sprintf("grep output of %d bytes could not be stored: %v; narrow the search", len(text), err), det)
			}
			det.Overflow = ov
			text = ov.Text("grep output")
		}
	}
	return Success(text).WithDetails(det)
}

// grepFail is an error outcome that keeps the search's details, with the
// failure code.
func grepFail(code Code, text string, det GrepDetails) Outcome {
	return Fail(code, text).WithDetails(det)
}

// displayFunc renders result paths as fs tools do (relative to the
// workspace when under it, absolute otherwise), resolving the workspace
// once rather than per line.
func displayFunc(c *Call) func(string) string {
	ws, err := resolveReal(c.Workspace)
	if err != nil {
		return c.displayPath
	}
	return func(p string) string {
		if sandbox.Covers(ws, p) {
			if rel, err := filepath.Rel(ws, p); err == nil {
				return rel
			}
		}
		return p
	}
}
