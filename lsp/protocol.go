package lsp

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/agentloom/loom/tool"
)

// Bounds on what one publication of diagnostics keeps. A server's lists
// and counts are never trusted: Loom counts the elements itself and keeps
// a bounded selection of them.
const (
	// maxKeptDiagnostics bounds the findings kept of one publication: the
	// most severe, then the earliest.
	maxKeptDiagnostics = 64
	// maxMessageKeptBytes bounds one finding's message as kept.
	maxMessageKeptBytes = 1024
	// maxSourceBytes bounds a finding's source as kept.
	maxSourceBytes = 64
	// maxLine is the largest 0-based line a finding may name.
	maxLine = 1 << 30
)

// publishParams is what Loom reads of textDocument/publishDiagnostics;
// the list is decoded only when the document is one Loom waits on.
type publishParams struct {
	URI         string          `json:"uri"`
	Version     *int64          `json:"version"`
	Diagnostics json.RawMessage `json:"diagnostics"`
}

// wireDiagnostic is what Loom reads of one LSP Diagnostic.
type wireDiagnostic struct {
	Range struct {
		Start struct {
			Line int64 `json:"line"`
		} `json:"start"`
	} `json:"range"`
	Severity int64  `json:"severity"`
	Source   string `json:"source"`
	Message  string `json:"message"`
}

// published is one publication of a document's diagnostics, decoded.
type published struct {
	counts [4]int // errors, warnings, informations, hints
	items  []tool.Diagnostic
	// dropped counts elements that were not diagnostics Loom could read.
	dropped int
}

// total is how many findings the publication counted.
func (p published) total() int { return p.counts[0] + p.counts[1] + p.counts[2] + p.counts[3] }

// severities maps an LSP DiagnosticSeverity (1 to 4) to Loom's; anything
// else, an omitted one included, is taken as an error.
var severities = [...]tool.Severity{tool.SeverityError, tool.SeverityWarning, tool.SeverityInformation, tool.SeverityHint}

// decodeDiagnostics decodes a publication's list, totally: every element
// is counted, at most maxKeptDiagnostics are kept (the most severe, then
// the earliest), messages are cut to maxMessageKeptBytes, and an element
// that is not a readable diagnostic is dropped and counted as such.
func decodeDiagnostics(raw json.RawMessage) published {
	var out published
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return out // null, or not a list: nothing published
	}
	for dec.More() {
		var w wireDiagnostic
		if err := dec.Decode(&w); err != nil {
			out.dropped++
			if _, ok := err.(*json.UnmarshalTypeError); !ok {
				return out // the stream is out of step: stop here
			}
			continue
		}
		if w.Range.Start.Line < 0 || w.Range.Start.Line > maxLine {
			out.dropped++
			continue
		}
		sev := 0
		if w.Severity >= 1 && w.Severity <= 4 {
			sev = int(w.Severity - 1)
		}
		out.counts[sev]++
		d := tool.Diagnostic{
			Line:     int(w.Range.Start.Line) + 1,
			Severity: severities[sev],
			Message:  cut(w.Message, maxMessageKeptBytes),
			Source:   cut(w.Source, maxSourceBytes),
		}
		out.keep(d)
	}
	return out
}

// keep adds d to the kept findings, dropping the least severe, latest one
// past maxKeptDiagnostics.
func (p *published) keep(d tool.Diagnostic) {
	at, _ := slices.BinarySearchFunc(p.items, d, func(x, y tool.Diagnostic) int {
		if r := severityRank(x.Severity) - severityRank(y.Severity); r != 0 {
			return r
		}
		if x.Line != y.Line {
			return x.Line - y.Line
		}
		return -1 // after every equal one: arrival order holds
	})
	if at >= maxKeptDiagnostics {
		return
	}
	p.items = slices.Insert(p.items, at, d)
	if len(p.items) > maxKeptDiagnostics {
		p.items = p.items[:maxKeptDiagnostics]
	}
}

// severityRank orders severities, most severe first.
func severityRank(s tool.Severity) int {
	for i, x := range severities {
		if x == s {
			return i
		}
	}
	return 0
}

// cut returns s cut to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
