// Package tool is the record every Loom tool is, the registry a host
// dispatches model tool calls through, and the core tools: fs_read,
// fs_write, fs_edit, working_directory and grep.
//
// A host builds one Registry, registers the tools it offers, and hands
// Registry.Dispatch to its model loop. Each call carries a Call: the
// call's identity (strand, operation, step, source index), its session
// context (workspace, base policy and grants, environment, clock) and
// what every tool may share (the jail, blob store, output observer,
// escalation). A seam a tool needs beyond that (a job plane, an agency, a
// history index) is handed to the tool's constructor in the package that
// owns it: bash and the job tools in package job. ExampleRegistry_Dispatch
// is the smallest host.
//
// The jail is a seam too (Broker); this package links none. A host with
// only the file tools (FileTools, plus GrepTool, which FileTools leaves
// out) needs no Broker: a write is still refused under .git and guarded
// alone (GuardWriteAlone), and grep searches in the host.
//
// This package owns the model's half of every tool: argument schemas and
// decoding, clamps, path discipline for harness-side file access, and the
// wording of every outcome. It does not own confinement (packages sandbox
// and broker),
// content addressing (package blob), anchor arithmetic (package hashline)
// or commands and jobs (package job).
//
// Invariants:
//   - Dispatch is total. A tool never panics into the host and never
//     returns a Go error to it: bad arguments, unknown tool names, policy
//     refusals and stale anchors are Outcomes with IsError set, whose text
//     names what was wrong and what would be accepted. A panic inside a tool
//     is recovered into such an Outcome as a last line of defence.
//   - A tool's argument schema and its argument decoder are derived from
//     one Go struct (see Typed), so they cannot drift; unknown properties
//     are refused with the list of known ones.
//   - Every harness-side path goes through one resolver (Call.ResolveRead,
//     Call.ResolveWrite): symlinks resolved component by component, the
//     result contained in the workspace (or a readable root, for reads),
//     protected entries refused on the lexical and the resolved form.
//   - A file tool whose target lies outside those roots asks the host for
//     exactly that file through Call.Raise, at most once per call and
//     never for a protected entry; an approval lets that call alone open
//     that file, and joins neither the call's grants nor the session's
//     pins (fileaccess.go).
//   - File writes stage a temporary file beside the target and rename it
//     into place, so a reader sees the old file or the new one, never part.
//
// # Diagnostics
//
// fs_write and fs_edit take a Diagnostics seam in their constructors
// (WriteTool(d), EditTool(d); nil answers as before). Once a file has
// landed they ask it about the content written and append its answer:
// errors first, at most MaxDiagnosticsShown, each with its line's anchor;
// "clean" only when the server answered with none, "unsettled" when it had
// not within DiagnosticsWait (diagnostics.go). Package lsp is the
// reference seam; Call.DiagnoseWritten gives code mode's writes the same.
package tool
