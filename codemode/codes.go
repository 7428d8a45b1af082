package codemode

import (
	"github.com/agentloom/loom/codemode/internal/wire"
	"github.com/agentloom/loom/tool"
)

// The failure codes of code mode. A program's capability call that is
// refused gets one of the capability codes (or the code the tool behind
// it would answer, e.g. tool.CodeNotFound for fs.read of a missing file)
// in its error; the code_mode tool's own outcome gets one of the
// execution codes.
const (
	// CodeRunFailed: the program ran and exited non-zero or panicked; the
	// outcome carries its stderr tail.
	CodeRunFailed tool.Code = "run_failed"
	// CodeWallDeadline: the program was still running at within_ms.
	CodeWallDeadline tool.Code = "wall_deadline"
	// CodeRunJailUnavailable: the kernel cannot apply a layer the run
	// jail requires; no program runs unconfined.
	CodeRunJailUnavailable tool.Code = "run_jail_unavailable"
	// CodeRunCancelled: the host's context ended the execution, or its
	// owner cancelled it (mode cancel).
	CodeRunCancelled tool.Code = "run_cancelled"
	// CodeNoProgram: the call gave neither program nor program_path
	// (both is tool.CodeInvalidArguments; a program_path that cannot be
	// read is refused with the file tools' code for the reason).
	CodeNoProgram tool.Code = "no_program"

	// CodeUnknownCapability: a cap_call named no capability of the seam.
	CodeUnknownCapability tool.Code = "unknown_capability"
	// CodeInvalidCapabilityArguments: a capability's arguments are
	// missing, of the wrong type or out of bounds.
	CodeInvalidCapabilityArguments tool.Code = "invalid_capability_arguments"
	// CodeAdmissionCeiling: the execution reached a capability's lifetime
	// ceiling; waiting frees no slot.
	CodeAdmissionCeiling tool.Code = "admission_ceiling"
	// CodeSpawnCeiling: the execution reached its spawn ceiling
	// (Options.SpawnCeiling, DefaultSpawnCeiling); waiting frees no slot.
	CodeSpawnCeiling tool.Code = "spawn_ceiling"
	// CodeUnknownSeam: a Request (or Engine.VetOn) named a seam the
	// Engine does not serve; the refusal names those it does. (The
	// code_mode tool's schema lists the served seams as an enum, so a
	// tool call naming another is invalid_arguments.)
	CodeUnknownSeam tool.Code = "unknown_seam"
	// CodeCallTimeout: one capability call ran past MaxCallTimeout.
	CodeCallTimeout tool.Code = "call_timeout"
	// CodeTooManyCalls: the program already has MaxCallsInFlight calls
	// unanswered, or their frames hold MaxInFlightBytes.
	CodeTooManyCalls tool.Code = "too_many_calls"
	// CodeCallCancelled: the program cancelled the call (its context
	// ended).
	CodeCallCancelled tool.Code = "call_cancelled"
	// CodeExecutionEnding: the execution is ending (its deadline, the
	// host, a channel fault); no call is served any more.
	CodeExecutionEnding tool.Code = "execution_ending"
	// CodeEditNoMatch: an fs.edit find is absent from the file, or present
	// more than once; nothing was written.
	CodeEditNoMatch tool.Code = "edit_no_match"
	// CodeKVFull: a kv.set would pass the store's key or byte bound.
	CodeKVFull tool.Code = "kv_full"
	// CodeArtifactTooLarge: report.emit content past 1 MiB.
	CodeArtifactTooLarge tool.Code = "artifact_too_large"
	// CodeProcFailed: proc.run's command could not start (argv[0] not
	// found in the jail, the broker refused to clear it).
	CodeProcFailed tool.Code = "proc_failed"

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
	// CodeChannelFault: a frame from the program was malformed (bad
	// msgpack, a missing, extra or repeated key, a wrong type, a version
	// other than the protocol's, an unknown kind, past a size bound), or
	// the program broke the shared ring's rules; the channel cannot be
	// trusted and the execution ends. (The channel's codec, internal to
	// codemode, declares the word.)
	CodeChannelFault = wire.CodeChannelFault
	// CodeFrameTooLarge: a frame to write would exceed the channel's
	// frame bound (16 MiB); nothing was written. The prelude refuses an
	// oversized call with the same word.
	CodeFrameTooLarge = wire.CodeFrameTooLarge
	// CodeUnknownCapPackage: the name is not a capability package the
	// seam offers; the refusal lists those it does.
	CodeUnknownCapPackage tool.Code = "unknown_cap_package"
	// CodeInternalCapPackage: the name is under cap/internal, the
	// prelude's plumbing, which no program may import.
	CodeInternalCapPackage tool.Code = "internal_cap_package"
	// CodePreludeUndescribable: the prelude's source cannot be rendered
	// (it does not parse, or an exported declaration names an internal or
	// unexported identifier); a defect of the library, not of the call.
	CodePreludeUndescribable tool.Code = "prelude_undescribable"
)
