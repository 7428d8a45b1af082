// Package tool is the record every Loom tool is, the registry a host
// dispatches model tool calls through, and the core tools: fs_read,
// fs_write, fs_edit, working_directory, bash and grep.
//
// A host builds one Registry, registers the tools it offers, and hands
// Registry.Dispatch to its model loop with a Call carrying the seams a tool
// may touch (workspace, coordinates, policy, broker, blob store, observers).
//
// This package owns the model's half of every tool: argument schemas and
// decoding, clamps, path discipline for harness-side file access, and the
// wording of every outcome. It also declares the seam bash starts
// background jobs through (Jobs, with opaque Cursors) and the rolling
// output window both use (Tail); package job implements the seam and
// serves job_poll, job_kill and job_send. It does not own confinement
// (package broker), content addressing (package blob), anchor arithmetic
// (package hashline) or job lifetimes (package job).
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
//   - File writes stage a temporary file beside the target and rename it
//     into place, so a reader sees the old file or the new one, never part.
package tool
