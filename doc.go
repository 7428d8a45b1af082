// Package loom is the map of a Go library that gives a language-model
// agent a complete, safe tool plane. It holds no code: a host imports the
// packages below it.
//
//   - tool: the Tool record, Call, Outcome with its one failure Code, the
//     Registry, path discipline, and the file tools fs_read, fs_write,
//     fs_edit, working_directory and grep.
//   - sandbox: the jail's vocabulary, pure: Policy, Grant and Compose,
//     Denial, the budget ledger, CallSpec, Execution, Settled and the
//     Enforcement report.
//   - broker: the reference jail. Clear runs one command in a kernel jail
//     and reports every layer the kernel applied; *broker.Broker is the
//     tool.Broker the tools run commands through. broker/internal/jail is
//     the code that runs in the re-executed helper process (mounts,
//     Landlock, seccomp, rlimits); internal/gitguard is the git guard and
//     its allowlist, which the file tools use without a broker too.
//   - job: the Jobs seam, bash and the job_* tools, and a reference job
//     plane over the broker.
//   - history, history/sqlite: the History and Memory seams with
//     history_search and remember, and a SQLite reference index.
//   - agent: the Agency seam, the agent_* tools and todo, and a reference
//     in-process Agency.
//   - todo: a strand's task board, pure: the board, its steps and rules.
//   - hashline, blob: anchored editing and the content-addressed store,
//     pure leaves the tools stand on.
//   - codemode: code_mode, where the model submits one Go program that is
//     vetted, built in a jail and run in an empty jail, reaching the
//     workspace only through the cap/... packages, each capability call
//     served on the calling strand's authority.
//   - mcpserve: serves a Registry to MCP clients over stdio.
//   - mcpclient: the other way: MCP servers (the "mcpServers" JSON hosts
//     share) as model tools, mcp__<server>__<tool>, a stdio server run
//     jailed and everything it sends treated as hostile.
//   - toolchain: what go, npm and pip need inside the jail (variables,
//     read-only host directories, caches outside every workspace),
//     detected on the host.
//   - lsp: the language-server door: stdio language servers (gopls by
//     default) run jailed, one per workspace and server, whose
//     diagnostics fs_write and fs_edit append (the tool.Diagnostics seam).
//   - plane: assembles the whole plane from the reference
//     implementations (whole or in part) and dispatches one model turn's
//     batch of calls with their coordinates; the place a host starts.
//
// examples/quickstart, examples/codemode, examples/agent (a model loop over
// the Anthropic Messages API) and examples/mcpserver are runnable hosts.
//
// # Glossary
//
// Each term below is coined by Loom and used across packages with one
// meaning.
//
//   - Strand: one line of conversation with a model, the main one or a
//     sub-agent's; a Call names its strand, and a sub-agent's strand name
//     starts with tool.SubagentPrefix.
//   - Clear: to run one command through the jail (tool.Broker.Clear):
//     compose its policy, admit it against the budget, start it in a
//     jail. A command that was not cleared does not run.
//   - Settle: the end of a cleared command or a job, with its exit status
//     and what the broker did on the way out (sandbox.Settled). A
//     diagnosis that settled (tool.DiagnosticsSettled) is a language
//     server's answer for the content written.
//   - Attend: to start a command as a job the caller watches for a
//     window and may leave running (job.Jobs.Attend).
//   - Plane: a reference implementation behind a seam that runs many
//     units at once — the job plane runs background commands, lsp.Plane
//     the language servers. Package plane is the assembly of them all.
//   - Floor: the communication tools every sub-agent keeps whatever its
//     spawn granted (agent.FloorTools).
//   - Seam: an interface a host fills or takes the reference of (Jobs,
//     Agency, History, Memory). In code mode, the set of capability
//     packages a program may import (codemode.Seam): the workspace seam,
//     and with an Agency the orchestration seam.
//   - Capability: one call a program makes through a cap/... package
//     ("fs.read"), answered by the host over the program's channel.
//   - Profile: what one toolchain needs inside the jail
//     (toolchain.Profile).
//   - Minter: what separates several spawns made under one call site, so
//     their children get distinct names (agent.Minter: the zero value
//     for a model's call, agent.ProgramMinter for a program's).
package loom
