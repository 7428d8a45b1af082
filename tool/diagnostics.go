package tool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentloom/loom/hashline"
)

// Bounds on the diagnostics fs_write and fs_edit append to an answer.
const (
	// MaxDiagnosticsShown bounds the diagnostics one answer shows, over
	// all the files it changed, errors first.
	MaxDiagnosticsShown = 10
	// DiagnosticsWait bounds how long a write waits for its diagnostics:
	// the context Diagnostics.Diagnose gets ends this long after the file
	// landed.
	DiagnosticsWait = 5 * time.Second
	// MaxDiagnosticMessageBytes bounds one diagnostic's message as shown,
	// after its control characters are escaped.
	MaxDiagnosticMessageBytes = 240
)

// Diagnostics is the seam fs_write and fs_edit hand the files they
// landed to: a language server's view of them (package lsp is the
// reference). Its report is appended to the answer; it never fails the
// write, and a nil Diagnostics leaves the answers as they are without
// one.
type Diagnostics interface {
	// Diagnose is told of files that just landed, each with exactly the
	// content written, and answers one FileDiagnostics for each file a
	// server owns, in the order given; a file no server owns has none. It
	// returns once ctx ends at the latest (the write's DiagnosticsWait),
	// saying then which files are unsettled, and never panics.
	Diagnose(ctx context.Context, files []ChangedFile) []FileDiagnostics
}

// ChangedFile is one file a tool landed.
type ChangedFile struct {
	// Path is the file's absolute path, links resolved.
	Path string
	// Content is what was written: the diagnostics are of this content,
	// and their anchors are computed from it.
	Content []byte
}

// DiagnosticsStatus says how a file's diagnosis ended.
type DiagnosticsStatus string

const (
	// DiagnosticsSettled: the server answered for this content, by a pull
	// answer or a publication of this version (Items may be empty: the
	// file is clean).
	DiagnosticsSettled DiagnosticsStatus = "settled"
	// DiagnosticsUnsettled: the server had not answered for this content
	// when the wait ended.
	DiagnosticsUnsettled DiagnosticsStatus = "unsettled"
	// DiagnosticsUnavailable: no server could be asked (it crashed, could
	// not start, or gave up); Code and Reason say why.
	DiagnosticsUnavailable DiagnosticsStatus = "unavailable"
)

// Severity is a diagnostic's severity: "error", "warning", "information"
// or "hint".
type Severity string

// The severities, most severe first.
const (
	SeverityError       Severity = "error"
	SeverityWarning     Severity = "warning"
	SeverityInformation Severity = "information"
	SeverityHint        Severity = "hint"
)

// rank orders severities, most severe first; an unknown one ranks as an
// error.
func (s Severity) rank() int {
	switch s {
	case SeverityWarning:
		return 1
	case SeverityInformation:
		return 2
	case SeverityHint:
		return 3
	}
	return 0
}

// Diagnostic is one finding of a server about one line.
type Diagnostic struct {
	// Line is the 1-based line the finding starts on.
	Line     int      `json:"line"`
	Severity Severity `json:"severity"`
	// Message is the server's text; in an answer's Details, with its
	// control characters escaped and cut to MaxDiagnosticMessageBytes.
	Message string `json:"message"`
	// Source names what found it ("compiler", an analyzer); may be empty.
	Source string `json:"source,omitempty"`
	// Anchor is the line's hashline anchor, set by the tool from the
	// content written; empty when the line is past the content's end.
	Anchor string `json:"anchor,omitempty"`
}

// FileDiagnostics is one file's diagnosis.
type FileDiagnostics struct {
	// Path is the file: absolute as Diagnose was told; in an answer's
	// Details, as the file tools show paths.
	Path string `json:"path"`
	// Server names the server that owns the file.
	Server string            `json:"server"`
	Status DiagnosticsStatus `json:"status"`
	// Waited is how long the diagnosis waited for the server.
	Waited time.Duration `json:"waited_ns"`
	// Code and Reason say, in a word and a sentence, why a diagnosis is
	// unavailable (or, for one unsettled, what the server was doing).
	Code   Code   `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Errors, Warnings, Infos and Hints count what the server published
	// for the file, whatever Items keeps.
	Errors   int `json:"errors,omitempty"`
	Warnings int `json:"warnings,omitempty"`
	Infos    int `json:"infos,omitempty"`
	Hints    int `json:"hints,omitempty"`
	// Items are the most severe findings, then the earliest; the seam
	// keeps what it bounds, the answer's Details what it shows.
	Items []Diagnostic `json:"items,omitempty"`
}

// total is how many findings the server published for the file.
func (f FileDiagnostics) total() int { return f.Errors + f.Warnings + f.Infos + f.Hints }

// describeDiagnostics is what fs_write and fs_edit add to their
// description when they have a Diagnostics.
func describeDiagnostics() string {
	return fmt.Sprintf(" Then a language server's diagnostics for it: errors first, at most %d, each at its `N:anchor`; "+
		"\"clean\" if none, \"unsettled\" if not settled within %d ms.",
		MaxDiagnosticsShown, DiagnosticsWait.Milliseconds())
}

// diagnose asks d about the files that landed, within DiagnosticsWait,
// and returns what it answered; a panic in d is answered as an
// unavailable diagnosis, never a failed write.
func diagnose(ctx context.Context, d Diagnostics, files []ChangedFile) (out []FileDiagnostics) {
	ctx, cancel := context.WithTimeout(ctx, DiagnosticsWait)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			out = []FileDiagnostics{{Path: files[0].Path, Status: DiagnosticsUnavailable, Code: CodeDiagnosticsFailed,
				Reason: fmt.Sprintf("the diagnostics seam failed (%s)", truncateText(fmt.Sprint(r), 120))}}
		}
	}()
	return d.Diagnose(ctx, files)
}

// writeDiagnostics renders the diagnoses of the files that landed under
// the answer b holds, and returns them as Details carry them: paths as
// shown, items cut to those shown, each with its anchor. contents maps a
// file's path to what was written.
func writeDiagnostics(b *strings.Builder, c *Call, found []FileDiagnostics, contents map[string][]byte) []FileDiagnostics {
	if len(found) == 0 {
		return nil
	}
	type shownItem struct {
		file int
		d    Diagnostic
	}
	var all []shownItem
	for i, f := range found {
		if f.Status != DiagnosticsSettled {
			continue
		}
		for _, d := range f.Items {
			all = append(all, shownItem{i, d})
		}
	}
	slices.SortStableFunc(all, func(x, y shownItem) int {
		if r := x.d.Severity.rank() - y.d.Severity.rank(); r != 0 {
			return r
		}
		if x.file != y.file {
			return x.file - y.file
		}
		return x.d.Line - y.d.Line
	})
	all = all[:min(len(all), MaxDiagnosticsShown)]
	out := make([]FileDiagnostics, len(found))
	lines := map[int][]hashline.Line{}
	for i, f := range found {
		f.Path = c.displayPath(f.Path)
		f.Reason = escapeControls(f.Reason, MaxDiagnosticMessageBytes)
		f.Items = nil
		out[i] = f
	}
	for _, it := range all {
		d := it.d
		d.Message = escapeControls(d.Message, MaxDiagnosticMessageBytes)
		d.Source = escapeControls(d.Source, 40)
		d.Severity = Severity(escapeControls(string(d.Severity), 20))
		if _, ok := lines[it.file]; !ok {
			lines[it.file] = hashline.Annotate(contents[found[it.file].Path])
		}
		if ls := lines[it.file]; d.Line >= 1 && d.Line <= len(ls) {
			d.Anchor = ls[d.Line-1].Anchor
		}
		out[it.file].Items = append(out[it.file].Items, d)
	}
	for _, f := range out {
		writeFileDiagnosis(b, f)
	}
	return out
}

// writeFileDiagnosis renders one file's diagnosis: a headline, then the
// findings shown for it.
func writeFileDiagnosis(b *strings.Builder, f FileDiagnostics) {
	server := escapeControls(f.Server, 40)
	switch f.Status {
	case DiagnosticsUnsettled:
		fmt.Fprintf(b, "diagnostics (%s): %s unsettled after %d ms", server, f.Path, f.Waited.Milliseconds())
		if f.Reason != "" {
			fmt.Fprintf(b, " (%s)", f.Reason)
		}
		b.WriteString("; the write landed, and the next write or a build shows what the server finds\n")
		return
	case DiagnosticsUnavailable:
		fmt.Fprintf(b, "diagnostics (%s): unavailable for %s: %s [%s]\n", server, f.Path, f.Reason, f.Code)
		return
	}
	if f.total() == 0 {
		fmt.Fprintf(b, "diagnostics (%s): %s clean\n", server, f.Path)
		return
	}
	var counts []string
	for _, c := range []struct {
		n    int
		word string
	}{{f.Errors, "error"}, {f.Warnings, "warning"}, {f.Infos, "information"}, {f.Hints, "hint"}} {
		switch {
		case c.n == 1:
			counts = append(counts, "1 "+c.word)
		case c.n > 1 && c.word == "information":
			counts = append(counts, fmt.Sprintf("%d informations", c.n))
		case c.n > 1:
			counts = append(counts, fmt.Sprintf("%d %ss", c.n, c.word))
		}
	}
	fmt.Fprintf(b, "diagnostics (%s): %s in %s", server, strings.Join(counts, ", "), f.Path)
	if len(f.Items) < f.total() {
		fmt.Fprintf(b, " (showing %d, errors first)", len(f.Items))
	}
	b.WriteString(":\n")
	for _, d := range f.Items {
		at := "past the end"
		if d.Anchor != "" {
			at = fmt.Sprintf("%d:%s", d.Line, d.Anchor)
		}
		fmt.Fprintf(b, "  %s:%d %s [%s]: %s", f.Path, d.Line, d.Severity, at, d.Message)
		if d.Source != "" {
			fmt.Fprintf(b, " (%s)", d.Source)
		}
		b.WriteByte('\n')
	}
}

// escapeControls returns s with every control or format character
// (C0, C1, DEL, bidirectional and other invisible format marks) and
// every invalid byte escaped as Go escapes it, cut to max bytes on a
// rune boundary with an ellipsis: text a server wrote, made safe to show
// on one line.
func escapeControls(s string, max int) string {
	var b strings.Builder
	for i, r := range s {
		if b.Len() >= max {
			return truncateText(b.String(), max)
		}
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			if r < 0x10000 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return truncateText(b.String(), max)
}
