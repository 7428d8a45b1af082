package codemode

import (
	"github.com/agentloom/loom/codemode/internal/wire"
	"github.com/agentloom/loom/tool"
)

// The codes a host meets: the code_mode tool's outcome carries one, and
// so does every error an Engine method returns (read with tool.CodeOf).
// A program's refused capability call carries a capability code instead
// (see CallEntry.Code).
const (
	// CodeRunFailed: the program ran and exited non-zero or panicked; the
	// outcome carries its stderr tail.
	CodeRunFailed tool.Code = "run_failed"
	// CodeWallDeadline: the program was still running at within_ms.
	CodeWallDeadline tool.Code = "wall_deadline"
	// CodeRunJailUnavailable: the kernel cannot apply a layer the run
	// jail requires (namespaces, empty_root, no_new_privs, capabilities,
	// seccomp, rlimits); no program runs less confined.
	CodeRunJailUnavailable tool.Code = "run_jail_unavailable"
	// CodeRunCancelled: the host's context ended the execution, or its
	// owner cancelled it (mode cancel).
	CodeRunCancelled tool.Code = "run_cancelled"
	// CodeChannelFault: a frame from the program was malformed (bad
	// msgpack, a missing, extra or repeated key, a wrong type, a version
	// other than the protocol's, an unknown kind, past a size bound), or
	// the program broke the shared ring's rules. The channel cannot be
	// trusted, so the execution ends; RunResult.Fault says why.
	CodeChannelFault = wire.CodeChannelFault
	// CodeNoProgram: the call gave neither program nor program_path.
	// Both is tool.CodeInvalidArguments; a program_path that cannot be
	// read is refused with the file tools' code for the reason.
	CodeNoProgram tool.Code = "no_program"
	// CodeUnknownSeam: a Request (or Engine.VetOn) named a seam the
	// Engine does not serve; the refusal names those it does. The
	// code_mode tool's schema lists the served seams as an enum, so a
	// tool call naming another is invalid_arguments.
	CodeUnknownSeam tool.Code = "unknown_seam"

	// CodeVetRefused is the code of every *VetError: the program was
	// refused before it was built.
	CodeVetRefused tool.Code = "vet_refused"
	// CodeToolchainUnavailable: no usable Go toolchain (absent, older than
	// Go 1.26, or missing its compile, link or go binary); the message
	// names what to install.
	CodeToolchainUnavailable tool.Code = "toolchain_unavailable"
	// CodeBuildUnavailable: the builder could not prepare or run a build
	// for a reason outside the program (the archives failed to build, the
	// cache directory is unusable, no broker was given). The program was
	// not judged.
	CodeBuildUnavailable tool.Code = "build_unavailable"
	// CodeBuildRejected: the program did not compile or link, or the
	// linked result was not a static executable; a *BuildError carries
	// the diagnostics.
	CodeBuildRejected tool.Code = "build_rejected"

	// CodeUnknownExecution: the handle names no execution of the calling
	// strand (never minted, another strand's, or forgotten); the refusal
	// lists the strand's handles.
	CodeUnknownExecution tool.Code = "unknown_execution"
	// CodeExecutionLost: the handle was minted by an earlier instance of
	// the host (before a restart); its execution ended with it.
	CodeExecutionLost tool.Code = "execution_lost"
	// CodeExecutionCeiling: the strand already has 8 launched executions
	// running; one ending frees a slot.
	CodeExecutionCeiling tool.Code = "execution_ceiling"
	// CodeExecutionNotReady: a send before the program called
	// execution.Ready.
	CodeExecutionNotReady tool.Code = "execution_not_ready"
	// CodeExecutionEnded: a send to an execution that has ended.
	CodeExecutionEnded tool.Code = "execution_ended"
	// CodeUnknownEndpoint: the endpoint is not among those the program
	// registered; the refusal lists them.
	CodeUnknownEndpoint tool.Code = "unknown_endpoint"
	// CodeInboxFull: 64 inputs are already waiting to be received.
	CodeInboxFull tool.Code = "inbox_full"
	// CodeEngineClosed: a launch after Engine.Close.
	CodeEngineClosed tool.Code = "engine_closed"

	// CodeUnknownCapPackage: an fs_read of cap:// named no capability
	// package the seam offers; the refusal lists those it does.
	CodeUnknownCapPackage tool.Code = "unknown_cap_package"
	// CodeInternalCapPackage: an fs_read of cap:// named a package under
	// cap/internal, the prelude's plumbing, which no program may import.
	CodeInternalCapPackage tool.Code = "internal_cap_package"
	// CodePreludeUndescribable: the prelude's source cannot be rendered
	// (it does not parse, or an exported declaration names an internal or
	// unexported identifier); a defect of the library, not of the call.
	CodePreludeUndescribable tool.Code = "prelude_undescribable"
)

// The capability codes: a refused capability call is answered to the
// program in band with one of these, with wire.CodeFrameTooLarge for an
// answer past the channel's 16 MiB frame bound, or with the code the tool
// behind it would answer (tool.CodeNotFound for fs.read of a missing
// file). The cap packages' docs (fs_read cap://) state them to the
// program; the host sees them only in the call record (CallEntry.Code).
const (
	// codeUnknownCapability: a cap_call named no capability of the seam.
	codeUnknownCapability tool.Code = "unknown_capability"
	// codeInvalidCapabilityArguments: a capability's arguments are
	// missing, of the wrong type or out of bounds.
	codeInvalidCapabilityArguments tool.Code = "invalid_capability_arguments"
	// codeAdmissionCeiling: the execution reached a capability's lifetime
	// ceiling (ceilings.go); waiting frees no slot.
	codeAdmissionCeiling tool.Code = "admission_ceiling"
	// codeSpawnCeiling: the execution reached its spawn ceiling
	// (Options.SpawnCeiling, defaultSpawnCeiling); waiting frees no slot.
	codeSpawnCeiling tool.Code = "spawn_ceiling"
	// codeCallTimeout: one capability call ran past maxCallTimeout, or
	// an MCP tool's call past mcpCallTimeout.
	codeCallTimeout tool.Code = "call_timeout"
	// codeMCPPackageClash: two MCP servers' names give one package name;
	// the later server is left out.
	codeMCPPackageClash tool.Code = "mcp_package_clash"
	// codeMCPToolUnauthorized: an MCP tool no model tool authorizes (or a
	// server none of whose tools is registered) is left out.
	codeMCPToolUnauthorized tool.Code = "mcp_tool_unauthorized"
	// codeMCPFailed: an MCP server failed without a code of its own.
	codeMCPFailed tool.Code = "mcp_failed"
	// codeTooManyCalls: the program already has maxCallsInFlight calls
	// unanswered, or their frames hold maxInFlightBytes.
	codeTooManyCalls tool.Code = "too_many_calls"
	// codeCallCancelled: the program cancelled the call (its context
	// ended).
	codeCallCancelled tool.Code = "call_cancelled"
	// codeExecutionEnding: the execution is ending (its deadline, the
	// host, a channel fault); no call is served any more.
	codeExecutionEnding tool.Code = "execution_ending"
	// codeEditNoMatch: an fs.edit find is absent from the file, or present
	// more than once; nothing was written.
	codeEditNoMatch tool.Code = "edit_no_match"
	// codeKVFull: a kv.set would pass the store's key or byte bound.
	codeKVFull tool.Code = "kv_full"
	// codeArtifactTooLarge: report.emit content past 1 MiB.
	codeArtifactTooLarge tool.Code = "artifact_too_large"
	// codeProcFailed: proc.run's command could not start (argv[0] not
	// found in the jail, the broker refused to clear it).
	codeProcFailed tool.Code = "proc_failed"
	// codeNotBackground: execution.receive in a foreground run, where
	// nothing can send.
	codeNotBackground tool.Code = "not_background"
)
