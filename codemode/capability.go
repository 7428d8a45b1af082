package codemode

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/lsp"
	"github.com/agentloom/loom/schedule"
)

// A capability is one function a program may call over the channel. Its
// row in capabilities is the one place the host declares it: the router,
// the gate, capabilityNames and the call record's summaries all read it, and
// a test holds it equal to the calls the prelude makes.
type capability struct {
	// name is the capability as a cap_call names it: the cap package's
	// last element, a dot and the function ("fs.read" is cap/fs's Read).
	name string
	// authorizedBy are the tools a strand must hold, every one, for a
	// program of it to make the call. Nil leaves the capability open on
	// purpose to every strand that holds code_mode.
	authorizedBy []string
	// serve answers one call (a.cap is name, for a handler a family shares).
	serve func(h *seamHost, ctx context.Context, a *capArgs) (any, error)
	// summary says what a call is about for the call record, never a
	// payload. Nil records no summary.
	summary func(m map[string]any) []string
}

// pkg is the capability's package as a program imports it ("cap/fs",
// "cap/mcp/github" for "mcp.github.create_issue").
func (c *capability) pkg() string { return capPackagePath(c.name) }

// capabilities declares every capability, in the order capabilityNames
// lists them: the workspace seam's own packages (cap/lsp's read-only
// calls need fs_read, its apply fs_edit as fs.edit does), then cap/notes,
// then cap/strand.
var capabilities = []capability{
	{name: "fs.read", serve: (*seamHost).fsRead, summary: summarize(strArg("path"))},
	{name: "fs.list", serve: (*seamHost).fsList, summary: summarize(strArg("path"))},
	{name: "fs.write", authorizedBy: []string{"fs_write"}, serve: (*seamHost).fsWrite, summary: summarize(strArg("path"), sizeArg("content"))},
	{name: "fs.edit", authorizedBy: []string{"fs_edit"}, serve: (*seamHost).fsEdit, summary: summarize(strArg("path"), countArg("edits"))},
	{name: "search.glob", serve: (*seamHost).searchGlob, summary: summarize(strArg("pattern"), strArg("path"))},
	{name: "search.grep", serve: (*seamHost).searchGrep, summary: summarize(strArg("pattern"), strArg("path"), strArg("glob"))},
	{name: "proc.run", authorizedBy: []string{"bash"}, serve: (*seamHost).procRun, summary: summarize(argvArg, strArg("dir"), sizeArg("stdin"))},
	{name: "kv.get", serve: (*seamHost).kvGet, summary: summarize(strArg("key"))},
	{name: "kv.set", serve: (*seamHost).kvSet, summary: summarize(strArg("key"), sizeArg("value"))},
	{name: "kv.delete", serve: (*seamHost).kvDelete, summary: summarize(strArg("key"))},
	{name: "report.emit", serve: (*seamHost).emit, summary: summarize(strArg("name"), sizeArg("content"))},
	{name: "schedule.create", authorizedBy: []string{schedule.CreateToolName}, serve: (*seamHost).scheduleCall, summary: summarize(strArg("target"))},
	{name: "schedule.list", authorizedBy: []string{schedule.ListToolName}, serve: (*seamHost).scheduleCall},
	{name: "schedule.cancel", authorizedBy: []string{schedule.CancelToolName}, serve: (*seamHost).scheduleCall, summary: summarize(strArg("id"))},
	{name: "job.start", authorizedBy: []string{"bash"}, serve: (*seamHost).jobCall, summary: summarize(strArg("command"))},
	{name: "job.poll", authorizedBy: []string{"job_poll"}, serve: (*seamHost).jobCall, summary: summarize(strArg("handle"))},
	{name: "job.list", authorizedBy: []string{"job_poll"}, serve: (*seamHost).jobCall},
	{name: "job.send", authorizedBy: []string{"job_send"}, serve: (*seamHost).jobCall, summary: summarize(strArg("handle"), sizeArg("input"))},
	{name: "job.kill", authorizedBy: []string{"job_kill"}, serve: (*seamHost).jobCall, summary: summarize(strArg("handle"))},
	{name: "execution.ready", serve: (*seamHost).executionCall},
	{name: "execution.register", serve: (*seamHost).executionCall, summary: summarize(strArg("endpoint"))},
	{name: "execution.receive", serve: (*seamHost).executionCall, summary: summarize(strArg("endpoint"))},
	{name: "lsp.definition", authorizedBy: []string{"fs_read"}, serve: lspSites((*lsp.Plane).Definition), summary: lspAt},
	{name: "lsp.references", authorizedBy: []string{"fs_read"}, serve: lspSites((*lsp.Plane).References), summary: lspAt},
	{name: "lsp.implementation", authorizedBy: []string{"fs_read"}, serve: lspSites((*lsp.Plane).Implementation), summary: lspAt},
	{name: "lsp.hover", authorizedBy: []string{"fs_read"}, serve: (*seamHost).lspHover, summary: lspAt},
	{name: "lsp.document_symbols", authorizedBy: []string{"fs_read"}, serve: (*seamHost).lspDocumentSymbols, summary: summarize(strArg("path"))},
	{name: "lsp.workspace_symbols", authorizedBy: []string{"fs_read"}, serve: (*seamHost).lspWorkspaceSymbols, summary: summarize(strArg("query"))},
	{name: "lsp.incoming_calls", authorizedBy: []string{"fs_read"}, serve: lspSites((*lsp.Plane).IncomingCalls), summary: lspAt},
	{name: "lsp.outgoing_calls", authorizedBy: []string{"fs_read"}, serve: lspSites((*lsp.Plane).OutgoingCalls), summary: lspAt},
	{name: "lsp.diagnostics", authorizedBy: []string{"fs_read"}, serve: (*seamHost).lspDiagnostics, summary: summarize(countArg("paths"))},
	{name: "lsp.code_actions", authorizedBy: []string{"fs_read"}, serve: (*seamHost).lspCodeActions, summary: summarize(strArg("path"), intArg("line"), intArg("end_line"))},
	{name: "lsp.rename", authorizedBy: []string{"fs_read"}, serve: (*seamHost).lspRename, summary: summarize(strArg("symbol"), strArg("path"), intArg("line"), strArg("ident"), strArg("new_name"))},
	{name: "lsp.apply", authorizedBy: []string{"fs_edit"}, serve: (*seamHost).lspApply, summary: summarize(countArg("files"))},

	{name: "notes.put", authorizedBy: []string{agent.NoteToolName}, serve: (*seamHost).notesCall, summary: summarize(strArg("key"))},
	{name: "notes.get", authorizedBy: []string{agent.NotesToolName}, serve: (*seamHost).notesCall, summary: summarize(strArg("key"))},
	{name: "notes.list", authorizedBy: []string{agent.NotesToolName}, serve: (*seamHost).notesCall, summary: summarize(strArg("prefix"))},
	{name: "notes.read", authorizedBy: []string{agent.NotesToolName}, serve: (*seamHost).notesCall, summary: summarize(strArg("path"))},

	{name: "strand.spawn", authorizedBy: []string{agent.SpawnToolName}, serve: (*seamHost).strandCall, summary: summarize(strArg("purpose"))},
	{name: "strand.send", authorizedBy: []string{agent.SendToolName}, serve: (*seamHost).strandCall, summary: summarize(strArg("to"))},
	{name: "strand.wait", authorizedBy: []string{agent.WaitToolName}, serve: (*seamHost).strandCall, summary: summarize(countArg("handles"))},
	{name: "strand.note", authorizedBy: []string{agent.NoteToolName}, serve: (*seamHost).notesCall, summary: summarize(strArg("key"))},
	{name: "strand.notes", authorizedBy: []string{agent.NotesToolName}, serve: (*seamHost).notesCall, summary: summarize(strArg("prefix"))},
	{name: "strand.roster", authorizedBy: []string{agent.RosterToolName}, serve: (*seamHost).strandCall},
	{name: "strand.map", authorizedBy: []string{agent.SpawnToolName, agent.WaitToolName}, serve: (*seamHost).strandCall, summary: summarize(countArg("items"))},
}

// capabilityByName finds a row of capabilities by its name.
var capabilityByName = func() map[string]*capability {
	m := make(map[string]*capability, len(capabilities))
	for i := range capabilities {
		c := &capabilities[i]
		if m[c.name] != nil {
			panic("codemode: capability " + c.name + " declared twice")
		}
		m[c.name] = c
	}
	return m
}()

// lookupCapability returns the row of name, or nil.
func lookupCapability(name string) *capability { return capabilityByName[name] }

// capabilityNames lists every capability a seam may serve, as a cap_call
// names it: the workspace seam's, then cap/notes', then cap/strand's. A
// seam serves those of its packages (Seam.Packages).
func capabilityNames() []string {
	out := make([]string, len(capabilities))
	for i, c := range capabilities {
		out[i] = c.name
	}
	return out
}

// workspaceCapabilities lists the capabilities of the workspace seam's
// own packages, as a cap_call names them (cap/notes', which the
// orchestration seam shares, are in capabilityNames).
func workspaceCapabilities() []string {
	var out []string
	orchestration := OrchestrationSeam()
	for _, c := range capabilities {
		if !orchestration.offers(c.name) {
			out = append(out, c.name)
		}
	}
	return out
}

// summaryPart renders one argument of a call for its summary; "" omits it.
type summaryPart func(m map[string]any) string

// summarize joins parts into a capability's summary.
func summarize(parts ...summaryPart) func(m map[string]any) []string {
	return func(m map[string]any) []string {
		out := make([]string, 0, len(parts))
		for _, p := range parts {
			out = append(out, p(m))
		}
		return out
	}
}

// strArg shows the string argument k, quoted and cut.
func strArg(k string) summaryPart {
	return func(m map[string]any) string {
		if s, ok := m[k].(string); ok {
			return k + "=" + quoteArg(s)
		}
		return ""
	}
}

// sizeArg shows only the size of the payload argument k.
func sizeArg(k string) summaryPart {
	return func(m map[string]any) string {
		switch v := m[k].(type) {
		case []byte:
			return fmt.Sprintf("%s=%d bytes", k, len(v))
		case string:
			return fmt.Sprintf("%s=%d bytes", k, len(v))
		}
		return ""
	}
}

// countArg shows only the length of the list argument k.
func countArg(k string) summaryPart {
	return func(m map[string]any) string {
		n, _ := m[k].([]any)
		return fmt.Sprintf("%s=%d", k, len(n))
	}
}

// intArg shows the integer argument k.
func intArg(k string) summaryPart {
	return func(m map[string]any) string {
		switch v := m[k].(type) {
		case int64:
			return fmt.Sprintf("%s=%d", k, v)
		case uint64:
			return fmt.Sprintf("%s=%d", k, v)
		}
		return ""
	}
}

// lspAt is the summary of a call at a position: the symbol, or the
// path, line and identifier.
var lspAt = summarize(strArg("symbol"), strArg("path"), intArg("line"), strArg("ident"))

// argvArg shows proc.run's argv as one quoted line.
func argvArg(m map[string]any) string {
	argv, ok := m["argv"].([]any)
	if !ok {
		return ""
	}
	words := make([]string, 0, len(argv))
	for _, w := range argv {
		if s, ok := w.(string); ok {
			words = append(words, s)
		}
	}
	return "argv=" + quoteArg(strings.Join(words, " "))
}

// summary is the call record's redacted summary of a call: what it is
// about, never a payload. An unknown capability has none.
func summary(cap string, m map[string]any) string {
	return summaryOf(lookupCapability(cap), m)
}

// summaryOf is the summary of a call of c (nil: none).
func summaryOf(c *capability, m map[string]any) string {
	if c == nil || c.summary == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.summary(m) {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}
