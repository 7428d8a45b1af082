// Package codemode runs a whole Go program a model writes instead of one
// tool call per turn. The program loops, branches and fans out with
// goroutines, and reaches the workspace only through the capability
// packages it imports (cap/fs, cap/search, cap/proc, cap/kv, cap/report,
// cap/job, cap/notes, cap/lsp, cap/execution, cap/schedule, and
// cap/mcp/<name> for each configured MCP server). The host serves each call on the calling
// strand's authority. Engine.Execute takes one Request (source,
// seam, wall deadline, permissions) through every stage.
//
// # Seams
//
// A program is vetted against one seam (Seam): the workspace seam
// (WorkspaceSeam) or, on an Engine with an Agency, the orchestration seam
// (OrchestrationSeam: cap/strand, cap/notes, cap/report, cap/execution).
// An orchestration program directs sub-agents and reaches neither the
// disk, the network nor a process. Its strand.* and notes.* calls are
// served onto the Agency closures the agent_* tools call, under the
// Caller of the code_mode call itself (agent.CallerOf), never from the
// program; they ask the broker for nothing.
//
// An Engine serving several seams takes code_mode's seam argument
// (absent: the first); one serving one seam has no seam argument in the
// tool's schema. A binary carries the seam it was vetted on (Binary.Seam),
// and the router serves that seam's packages only, whatever a cap_call
// names. By default (Options.Seams nil) a seam leaves out a cap package
// every call of which needs a tool the registry lacks, so a host without
// bash offers no cap/proc.
//
// Every spawn of one execution carries its admission number as an
// agent.ProgramMinter ordinal, so its children get distinct names and a
// replayed execution (same call, same source) reconciles onto the same
// ones. Each execution's admissions are counted for its lifetime:
// Options.SpawnCeiling spawns (32 when zero), 128 sends, 256 note writes,
// 64 note reads and 64 report.emit calls. A call past a ceiling is
// refused in band (spawn_ceiling, admission_ceiling).
//
// # The pipeline
//
// Each stage is a plain step a host may drive itself, and all three sit
// behind the code_mode tool (Engine.Tool):
//
//   - Vetting (Engine.Vet, Engine.VetOn) parses the one file (at most
//     256 KiB, parse only). It refuses, in one pass, every import not
//     byte-identical to the seam's allowlist (StdPackages, audited to
//     reach no file, process or environment, plus the seam's cap
//     packages), every comment the compiler would honour (//go:…,
//     //line), build constraints, cgo and functions without a body.
//     A refused import says how to repair it: why it is denied, why the
//     seam leaves it out, or for an unknown cap/ package the seam's ones
//     and the nearest; the allowlist is listed only for an import none
//     of these covers. The code_mode tool then type-checks a refused program that parsed
//     (go/types on the host, against the archives of its allowed
//     imports, the refused ones stubbed; one at a time, bounded in wall
//     time), so one answer carries the refusal and the compile errors.
//   - Build (Engine.Build) compiles and links the program in one broker
//     jail (network off, only the build root writable). It calls the
//     toolchain's compile and link directly, against archives built once
//     per toolchain, prelude and import set (on first use, the program's
//     imports and their dependencies alone; Engine.Warm builds the whole
//     allowlist's up front), with a compile importcfg that is itself the
//     allowlist. The result must be a static executable, and is kept
//     by content hash so a resubmission skips the build. A failure whose
//     every error is an unused import, variable or label is repaired once.
//   - Run (Engine.Run) runs the binary alone in an empty-root jail:
//     nothing readable but itself, no writable root, no network, an
//     environment of GOMAXPROCS, GOMEMLIMIT and GOTRACEBACK only, a 4 GiB
//     address-space bound and a bound of 256 processes. Its namespaces,
//     empty_root, no_new_privs, capabilities, seccomp and rlimits layers
//     are required: where the kernel cannot apply one, nothing runs
//     (CodeRunJailUnavailable names it).
//     The Engine serves the program's capability calls over one socketpair
//     at sandbox.ExtraFileFD (or the shared ring the program asks for on
//     it) until it exits, its wall deadline passes, the host's context
//     ends or the channel faults; every path kills the process tree.
//
// # The capability channel
//
// Frames are a 4-byte length and one msgpack map {v, id, kind, body} of
// at most 16 MiB. The codec (codemode/internal/wire) and the transport
// (codemode/internal/transport: the socket and the shared ring) are
// internal: a host never speaks the channel, the Engine does.
//
// The host treats the program as hostile. Decoding is total, and a
// malformed frame or a duplicate in-flight id is a channel fault that
// ends the execution. Every call is bounded to 120 s; a program has at
// most 256 calls unanswered, holding at most 64 MiB of arguments, and at
// most 8 of those with large answers routed or being written at once. The host's terminal
// outcome frame is written under a deadline, so a program that stops
// reading cannot hold it. Calls are recorded (CallRecord: the first 128
// itemised, exact counters beyond).
//
// A program may first ask to move the channel onto a shared memory ring
// pair (a ring frame), which the prelude always does. The same frames then
// pass through memory both ends map, and the socket carries only the
// doorbell bytes that wake a sleeping reader, so a loop of calls pays no
// system call while both ends are awake. The host creates the memory
// file and seals it at its size (a program cannot shrink it under the
// host's mapping). It keeps its own read and write positions and never
// reads them back. It checks each position the program publishes against
// them, and copies the program's bytes out before decoding them: a forged
// position or a stray socket byte is a channel fault.
//
// # Authority
//
// A program can do only what its strand could do with one tool call. A
// capability that writes, runs, reaches a job or directs a sub-agent is
// authorized by a tool, checked with the registry's holds
// (tool.Registry.Holds; a refusal is tool.CodeToolNotHeld, as
// Dispatch's):
//
//   - fs.write by fs_write, fs.edit by fs_edit;
//   - every lsp.* but lsp.apply by fs_read (a language server reads the
//     workspace), lsp.apply by fs_edit, as fs.edit; cap/lsp is offered
//     only by an Engine with Options.LanguageServers;
//   - proc.run and job.start by bash; job.poll and job.list by job_poll,
//     job.send by job_send, job.kill by job_kill;
//   - notes.put and strand.note by agent_note; notes.get, notes.list,
//     notes.read and strand.notes by agent_notes;
//   - strand.spawn by agent_spawn, strand.send by agent_send, strand.wait
//     by agent_wait, strand.roster by agent_roster, strand.map by both
//     agent_spawn and agent_wait;
//   - schedule.create by schedule_create, schedule.list by
//     schedule_list, schedule.cancel by schedule_cancel, served through
//     those tools (the host's schedule.Schedules behind them) after the
//     router refuses a request without exactly one timing; cap/schedule
//     is offered only where the registry registers them;
//   - each mcp.<package>.<function> by the model tool calling that MCP
//     tool directly (MCPTool.ModelTool, mcp__<server>__<tool>).
//
// Reads, searches, kv.*, report.emit and cap/execution are open to any
// strand that holds code_mode. A gated capability is served through the
// same code as its tool: the file API's path discipline, protected paths
// and git guard (tool.Call.ReadFile, WriteFile, ListDir, Glob, Grep),
// bash's policy and environment for proc.run (job.CommandPolicy), bash's
// background mode for job.start. A refusal a capability call meets is
// answered to the program in band and never raised to the host's
// escalation plane; nothing a program does widens a grant.
//
// # Approvals
//
// A code_mode call may declare permissions (Permissions: bash's
// readable_roots, writable_roots and network, plus wall_s 0 for
// job.StartForSession). They are composed as bash composes them, after
// the build and before the program starts. A shortfall is raised through
// tool.Call.Raise at most once for the whole execution; on a resume the
// program starts once with the grants (nothing ran before, so nothing is
// replayed). The grants act only on the program's capability calls:
// proc.run's policy, the roots fs.* reaches, job.start. The build and the
// run jail are never widened. Execution.Widening (Details.Grants) says
// which grants composed, or which way none did, beside the enforcement
// reports and never inside them. A sub-agent may not declare wall_s.
//
// # MCP servers
//
// Each of Options.MCPServers is the package cap/mcp/<name> (name: the
// server's name, letters and digits lower-cased), one function per tool,
// typed from its schemas (package codemode/internal/mcpgen). New lists
// the tools and generates the package once; the same tools give the same
// source, so the same binary key. The package is vetted (its name, its
// three imports, no compiler directive) and offered on the workspace
// seam; a server whose name gives another's package name, that cannot be
// listed, or none of whose tools the Registry registers, is left out and
// vetting refuses its import saying why. The package is compiled, in the
// build jail, only into a program that imports it, and kept (by archive
// key, path and source) for the next such program: every other build is
// unchanged. Its capabilities are rows looked up after the table's, by
// the "mcp." prefix; a call is gated by the tool's model tool, bounded to
// 30 s (mcpCallTimeout, then call_timeout), recorded with the server and
// tool, and a tool reporting failure is mcp_tool_error. The description
// names each server with its tool count only; fs_read cap://mcp lists
// them and what was left out, cap://mcp/<name> shows a package's API and
// cap://mcp?q=<words> finds tools by name and description
// (Engine.ReadMCP).
//
// # Background executions
//
// code_mode's mode "launch" vets and builds as "run" does, then starts the
// program and answers a handle at once. The program runs under a broker
// step of its own ({operation, <step>/execution-<epoch>-<n>}: no two
// Engines sharing a Broker share one), on a context the Engine owns, with
// a copy of the launching call. The handle is minted from the call site
// and the Engine's epoch, never from model text. "check", "send", "join"
// and "cancel" take only a handle (and send's endpoint and input, the
// waits' wait_ms), so no interaction replaces the source, moves the
// deadline or widens a grant.
//
// A handle is owner-checked against the calling strand: another strand's
// is refused exactly as one never minted (CodeUnknownExecution), and one
// of an earlier Engine (before a restart) is CodeExecutionLost. A strand
// has at most 8 executions running (CodeExecutionCeiling). The program's
// side is cap/execution (Ready, Register, Receive); a send before Ready
// is CodeExecutionNotReady. Send answers at once. A check with wait_ms
// waits (at most 120 s) until the program is ready or has ended. A join
// waits wait_ms (30 s when absent, at most 120 s); it answers an
// ExecutionDetails, not an error, when the program still runs, and
// renders an ended one's result as run does, without the call record.
//
// Cancel and Engine.Close abort the execution's own step (the program and
// its proc.run commands) and wait for them to be reaped. A job the
// program started through cap/job runs in the job plane's own step and is
// left to it. Options.Notify is told when an execution ends on its own.
//
// # Examples
//
// ExampleEngine_Execute drives the stages without the tool. The Examples
// of package plane (example_codemode_test.go) drive the code_mode tool
// through Registry.Dispatch: launch, check, send and join; permissions
// with and without an escalation plane; the orchestration seam.
// examples/codemode and examples/subagents are runnable programs.
//
// # What it does not own
//
// The jail itself (package broker), the file tools' path rules (package
// tool), the job plane (package job), sub-agents and notes (package
// agent's Agency).
//
// # Invariants
//
//   - No model-influenced code runs in the host's process: vetting,
//     building and describing parse source, and a refused program is
//     only type-checked; compile and link run in the build jail; the
//     program runs in the run jail.
//   - Every result ends with the enforcement line (a run's, then its
//     grants line): each jailed stage's layers by name, DEGRADED when
//     one was skipped, or why a stage has no report (Details holds the
//     full reports). A pointer at a cap
//     package's API (fs_read cap://<pkg>) comes once, right before the
//     grants and enforcement lines, and only for a compile error or a
//     failed call the API docs help with, never a policy refusal.
//   - Every bound is a named constant, stated in the tool's description
//     where the model needs it.
//   - Every failure is in band with a stable code (codes.go): a
//     capability call's to the program, an execution's to the model.
package codemode
