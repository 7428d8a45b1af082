package search

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp/syntax"
	"strconv"
	"strings"
)

// MaxEventBytes bounds one line of ripgrep's --json stream. A longer event
// (a match in a line of many megabytes) fails the parse.
const MaxEventBytes = 16 << 20

// Operand is how ripgrep is pointed at the search root.
type Operand int

const (
	// OperandPath names the root by its absolute path, as ripgrep's own
	// argument: ripgrep follows a link found there when it starts, so
	// only a root nothing can swap may be searched this way. Reported
	// paths are absolute.
	OperandPath Operand = iota
	// OperandDir names a directory root as ".": run ripgrep with its
	// working directory already pinned at the root (entered and checked
	// before ripgrep starts), so it searches that directory whatever
	// path now leads to it. Reported paths are relative to it, and the
	// collector maps them under the root.
	OperandDir
	// OperandStdin searches a file root as ripgrep's standard input
	// ("-"): the caller opens the file (without following links) and
	// hands it over, so ripgrep opens no path at all. Ripgrep reports it
	// as StdinPath, which the collector maps to the root.
	OperandStdin
)

// StdinPath is the path ripgrep reports for its standard input.
const StdinPath = "<stdin>"

// RipgrepArgs returns RipgrepArgsFor(root, o, OperandPath).
func RipgrepArgs(root string, o Options) []string { return RipgrepArgsFor(root, o, OperandPath) }

// RipgrepArgsFor returns the arguments (without the program name) that
// make ripgrep search root, named as op says, and select files as the Go
// engine does: JSON events, no config file, .gitignore and .rgignore
// honoured with or without a git repository (ripgrep has no switch for
// .rgignore short of dropping every ignore file, so the Go engine
// honours it too), no .ignore, no global or info/exclude ignores, no
// encoding sniffing (a UTF-16 file is then bytes to both: binary when it
// holds a NUL byte, as any UTF-16 text with an ASCII character does),
// and the pattern and case of o; ancestors' ignore files are read only
// when o.IgnoreRoot lies above root (ripgrep then reads every readable
// ancestor's, which the jail limits to the readable roots). An excluding
// glob ("!glob") is passed as ripgrep's --glob; an admitting one is not,
// since ripgrep's --glob admits the hidden and ignored files it matches,
// and the collector applies it instead (only ever narrowing, as the Go
// engine does). Run it with its working directory at root (at root's
// directory when root is a file): ripgrep matches globs relative to its
// working directory. Protected subtrees are not expressed as arguments;
// RipgrepCollector drops them, as it drops binary files. Collect its
// output with NewRipgrepCollectorFor(o, root, op).
func RipgrepArgsFor(root string, o Options, op Operand) []string {
	glob := ""
	if strings.HasPrefix(o.Glob, "!") {
		glob = o.Glob
	}
	return ripgrepArgs(root, o, op, glob)
}

// ripgrepArgs is RipgrepArgsFor passing glob, if any, as ripgrep's
// --glob.
func ripgrepArgs(root string, o Options, op Operand, glob string) []string {
	args := []string{
		"--json", "--no-config", "--line-number",
		"--no-require-git", "--no-ignore-dot", "--no-ignore-exclude", "--no-ignore-global",
		"--encoding", "none",
	}
	if o.CaseInsensitive {
		args = append(args, "--ignore-case")
	} else {
		args = append(args, "--case-sensitive")
	}
	if c := min(max(o.Context, 0), MaxContext); c > 0 {
		args = append(args, "--context", strconv.Itoa(c))
	}
	if glob != "" {
		args = append(args, "--glob", glob)
	}
	if o.IgnoreRoot == "" || o.IgnoreRoot == root {
		// No ancestor's .gitignore applies; without this ripgrep would
		// read every parent directory's.
		args = append(args, "--no-ignore-parent")
	}
	operand := root
	switch op {
	case OperandDir:
		operand = "."
	case OperandStdin:
		operand = "-"
	}
	return append(args, "--regexp", RipgrepPattern(o), "--", operand)
}

// RipgrepPattern rewrites o.Pattern so ripgrep's regex engine means what
// Go's does: the pattern is parsed with Go's syntax and printed back,
// which spells out Go's ASCII-only \d, \w and \s as explicit classes and
// ^ and $ as line anchors, and \b and \B become ASCII word boundaries
// ((?-u:\b)). A pattern Go cannot parse is returned unchanged (Compile
// refuses it before any search runs).
func RipgrepPattern(o Options) string {
	re, err := syntax.Parse("(?m)"+o.Pattern, syntax.Perl)
	if err != nil {
		return o.Pattern
	}
	s := re.String()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case 'b':
				b.WriteString(`(?-u:\b)`)
			case 'B':
				b.WriteString(`(?-u:\B)`)
			default:
				b.WriteString(s[i : i+2])
			}
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Event is one parsed ripgrep --json event.
type Event struct {
	// Type is "begin", "match", "context", "end", "summary", or whatever
	// newer ripgrep versions add (kept, not refused).
	Type string
	// Path is the file the event is about (absent from "summary").
	Path string
	// Line is the 1-based line number of a match or context event.
	Line int
	// Text is the line's text as Hit.Text holds it.
	Text string
	// Binary is set on an "end" event when ripgrep found a NUL byte in
	// the file.
	Binary bool
}

// ParseError is a ripgrep event that could not be understood. Its code
// (ErrorCode) is always "bad_ripgrep_event".
type ParseError struct {
	Reason string
	Err    error
}

// ErrorCode returns "bad_ripgrep_event" (see tool.CodedError).
func (e *ParseError) ErrorCode() string { return "bad_ripgrep_event" }

// Error names the event that failed and why it was refused.
func (e *ParseError) Error() string {
	if e.Err != nil {
		return "ripgrep --json: " + e.Reason + ": " + e.Err.Error()
	}
	return "ripgrep --json: " + e.Reason
}

// Unwrap returns the underlying error, if any.
func (e *ParseError) Unwrap() error { return e.Err }

// ParseRipgrepEvent parses one line of ripgrep's --json output. Match and
// context events must carry a path, their lines and a positive line
// number; begin and end events a path. Events of other types are returned
// with their Type only.
func ParseRipgrepEvent(line []byte) (Event, error) {
	if len(line) > MaxEventBytes {
		return Event{}, &ParseError{Reason: fmt.Sprintf("event of %d bytes exceeds %d", len(line), MaxEventBytes)}
	}
	ev, err := scanEvent(line)
	if err != nil {
		return Event{}, &ParseError{Reason: "malformed event", Err: err}
	}
	typ := string(ev.typ)
	out := Event{Type: typ}
	switch typ {
	case "match", "context", "begin", "end":
	default:
		return out, nil
	}
	p, ok, err := ev.path.decode()
	if err != nil || !ok || len(p) == 0 {
		return Event{}, &ParseError{Reason: typ + " event without a usable path", Err: err}
	}
	out.Path = filepath.Clean(string(p))
	switch typ {
	case "end":
		out.Binary = ev.binaryOffset
	case "match", "context":
		text, ok, err := ev.lines.decode()
		if err != nil || !ok {
			return Event{}, &ParseError{Reason: typ + " event without usable lines", Err: err}
		}
		if !ev.hasLine || ev.lineNumber <= 0 {
			return Event{}, &ParseError{Reason: typ + " event without a positive line_number"}
		}
		out.Line = ev.lineNumber
		out.Text = lineText(text)
	}
	return out, nil
}

// RipgrepCollector turns ripgrep's --json stream into a Result with the
// Go engine's semantics: binary files, protected subtrees and files an
// admitting glob does not match yield nothing, hits are sorted, and
// collection stops at MaxScanMatches, keeping the first matches of the
// file that crosses it (Result.Left counts the rest). It is an io.Writer
// so it can be handed a command's stdout directly; it is not safe for
// concurrent use.
type RipgrepCollector struct {
	protected []string
	root      string      // the search root, for OperandDir and OperandStdin
	op        Operand     // how ripgrep was pointed at root
	glob      *globFilter // an admitting glob, applied below root; nil for none
	context   int         // context lines around each match
	partial   []byte      // an event line not yet terminated
	pending   map[string]*pendingFile
	held      int // matches held in pending
	res       Result
	err       error
	summary   bool // the "summary" event arrived
}

// pendingFile is what was collected of a file whose end event is due.
type pendingFile struct {
	hits    []Hit
	matches int // matching lines reported, held or not
	held    int // matching lines in hits
}

// NewRipgrepCollector returns NewRipgrepCollectorFor(o, "", OperandPath):
// a collector that keeps the paths ripgrep reports as they are (and,
// having no root to match it against, applies no admitting glob).
func NewRipgrepCollector(o Options) *RipgrepCollector {
	return NewRipgrepCollectorFor(o, "", OperandPath)
}

// NewRipgrepCollectorFor returns a collector for a search of root run
// with RipgrepArgsFor(root, o, op). It maps each reported path to the
// absolute path Hit.Path holds before anything else looks at it: for
// OperandDir a relative path is joined under root, for OperandStdin
// StdinPath becomes root, and any other path (one such a run never
// reports: absolute, climbing out with "..", or not StdinPath) fails the
// stream with a *ParseError, so nothing outside root is ever collected.
// An admitting o.Glob is matched against each path strictly below root
// (a file root is searched whatever its name).
func NewRipgrepCollectorFor(o Options, root string, op Operand) *RipgrepCollector {
	c := &RipgrepCollector{protected: o.Protected, root: root, op: op, context: min(max(o.Context, 0), MaxContext), pending: map[string]*pendingFile{}}
	if o.Glob != "" && !strings.HasPrefix(o.Glob, "!") && root != "" {
		c.glob = newGlobFilter(root, o.Glob)
	}
	return c
}

// selected reports whether hits in the file p are collected.
func (c *RipgrepCollector) selected(p string) bool {
	if isProtected(c.protected, p) {
		return false
	}
	if _, below := relBelow(c.root, p); below && c.glob != nil {
		return c.glob.admits(p)
	}
	return true
}

// place maps a path ripgrep reported to the absolute path it stands for.
func (c *RipgrepCollector) place(p string) (string, error) {
	switch c.op {
	case OperandDir:
		if !filepath.IsLocal(p) {
			return "", &ParseError{Reason: "path " + quoteShort(p) + " is not relative to the search root"}
		}
		return filepath.Join(c.root, p), nil
	case OperandStdin:
		if p != StdinPath {
			return "", &ParseError{Reason: "path " + quoteShort(p) + " is not ripgrep's standard input"}
		}
		return c.root, nil
	}
	return p, nil
}

// ErrScanFull is returned by Write once MaxScanMatches matches have been
// collected: the caller should stop ripgrep; the result so far stands.
var ErrScanFull = errors.New("search: match collection limit reached")

// Write consumes a chunk of the stream. It returns a *ParseError for an
// event it cannot parse (and keeps failing after one), or ErrScanFull.
func (c *RipgrepCollector) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(c.partial)+len(p) > MaxEventBytes {
				c.err = &ParseError{Reason: fmt.Sprintf("event exceeds %d bytes", MaxEventBytes)}
				return 0, c.err
			}
			c.partial = append(c.partial, p...)
			break
		}
		line := p[:i]
		if len(c.partial) > 0 {
			line = append(c.partial, line...)
			c.partial = c.partial[:0]
		}
		p = p[i+1:]
		if err := c.feed(line); err != nil {
			c.err = err
			return 0, err
		}
	}
	return n, nil
}

// feed handles one complete event line.
func (c *RipgrepCollector) feed(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	ev, err := ParseRipgrepEvent(line)
	if err != nil {
		return err
	}
	if ev.Path != "" {
		if ev.Path, err = c.place(ev.Path); err != nil {
			return err
		}
	}
	switch ev.Type {
	case "summary":
		c.summary = true
	case "match", "context":
		if !c.selected(ev.Path) {
			return nil
		}
		f := c.pending[ev.Path]
		if f == nil {
			f = &pendingFile{}
			c.pending[ev.Path] = f
		}
		match := ev.Type == "match"
		if match {
			f.matches++
		}
		if f.matches > MaxScanMatches-c.res.Matches {
			// Past what could be kept: counted, not held.
			return nil
		}
		f.hits = append(f.hits, Hit{Path: ev.Path, Line: ev.Line, Text: ev.Text, Match: match})
		if match {
			f.held++
			c.held++
			if c.res.Matches+c.held > 2*MaxScanMatches {
				// Files interleaved in the stream: hold no more than
				// this, even for files that may yet turn out binary.
				c.res.Stopped = true
				return ErrScanFull
			}
		}
	case "end":
		f := c.pending[ev.Path]
		delete(c.pending, ev.Path)
		if f == nil {
			return nil
		}
		c.held -= f.held
		if ev.Binary || f.matches == 0 {
			return nil
		}
		room := MaxScanMatches - c.res.Matches
		if f.matches <= room {
			c.res.Matches += f.matches
			c.res.Files++
			c.res.Hits = append(c.res.Hits, f.hits...)
			return nil
		}
		// The file crosses the limit: its first matches up to it stand,
		// as the Go engine keeps them, and the rest are counted.
		kept, _ := Bound(sortHits(f.hits), room, c.context)
		if room > 0 {
			c.res.Matches += room
			c.res.Files++
			c.res.Hits = append(c.res.Hits, kept...)
		}
		c.res.Left += f.matches - room
		c.res.Stopped = true
		return ErrScanFull
	}
	return nil
}

// Completed reports whether the stream held ripgrep's closing "summary"
// event: ripgrep searched to the end (whatever it said on stderr about
// entries it could not read), rather than stopping before it searched,
// as it does for arguments it refuses.
func (c *RipgrepCollector) Completed() bool { return c.summary }

// Result returns what was collected: files whose end event arrived, with
// hits sorted. Call it after the stream ends (or after ErrScanFull).
func (c *RipgrepCollector) Result() Result {
	r := c.res
	r.Hits = sortHits(append([]Hit(nil), r.Hits...))
	return r
}
