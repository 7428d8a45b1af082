package codemode

import "github.com/agentloom/loom/tool"

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
	// CodeRunCancelled: the host's context ended the execution.
	CodeRunCancelled tool.Code = "run_cancelled"
	// CodeNoProgram: the call gave neither program nor program_path, or
	// both. (A program_path that cannot be read is refused with the file
	// tools' code for the reason.)
	CodeNoProgram tool.Code = "no_program"

	// CodeUnknownCapability: a cap_call named no capability of the seam.
	CodeUnknownCapability tool.Code = "unknown_capability"
	// CodeCapabilityNotHeld: the calling strand does not hold the tool
	// that authorizes the capability (see AuthorizingTool).
	CodeCapabilityNotHeld tool.Code = "capability_not_held"
	// CodeInvalidCapabilityArguments: a capability's arguments are
	// missing, of the wrong type or out of bounds.
	CodeInvalidCapabilityArguments tool.Code = "invalid_capability_arguments"
	// CodeAdmissionCeiling: the execution reached a capability's lifetime
	// ceiling; waiting frees no slot.
	CodeAdmissionCeiling tool.Code = "admission_ceiling"
	// CodeCallTimeout: one capability call ran past MaxCallTimeout.
	CodeCallTimeout tool.Code = "call_timeout"
	// CodeTooManyCalls: the program already has MaxCallsInFlight calls
	// unanswered.
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
	// CodeArtifactTooLarge: report.emit content past MaxEmitBytes.
	CodeArtifactTooLarge tool.Code = "artifact_too_large"
	// CodeProcFailed: proc.run's command could not start (argv[0] not
	// found in the jail, the broker refused to clear it).
	CodeProcFailed tool.Code = "proc_failed"
)
