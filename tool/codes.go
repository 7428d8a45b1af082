package tool

import "errors"

// Code says why a call failed. It is a stable snake_case word, declared
// once as a documented constant in the package whose tool refuses with
// it, and it means the same thing wherever it appears: Outcome.Code, an
// error type's Code field, the MCP bridge's result metadata, a code-mode
// program's error. Hosts and programs switch on codes; the text beside a
// code is for the model and may change between releases.
//
// Packages below tool (broker, hashline, blob) keep their own typed
// codes; a tool that surfaces one converts it (Code(d.Code)), so the
// values of every code type in the module are distinct words.
type Code string

// The registry's codes: what Dispatch and Typed refuse with before a
// tool's own logic runs.
const (
	// CodeUnknownTool: no tool of that name is registered; the text lists
	// the registered names.
	CodeUnknownTool Code = "unknown_tool"
	// CodeToolNotHeld: a gated registry's strand does not hold the tool.
	CodeToolNotHeld Code = "tool_not_held"
	// CodeToolPanicked: the tool panicked; Dispatch recovered it. A bug
	// in the tool, never in the arguments.
	CodeToolPanicked Code = "tool_panicked"
	// CodeToolMisconfigured: the tool's argument struct has no schema, so
	// it refuses every call.
	CodeToolMisconfigured Code = "tool_misconfigured"
	// CodeCancelled: the call's context ended before or while it ran.
	CodeCancelled Code = "cancelled"
)

// The registration codes: a RegisterError's Code, returned to the host by
// Registry.Register (never to a model).
const (
	// CodeEmptyName: a tool without a name.
	CodeEmptyName Code = "empty_name"
	// CodeDuplicateName: a second tool of a registered name.
	CodeDuplicateName Code = "duplicate_name"
	// CodeNoRun: a tool without a Run function.
	CodeNoRun Code = "no_run"
	// CodeBadSchema: a Schema that is not a JSON object schema.
	CodeBadSchema Code = "bad_schema"
)

// The argument codes: an ArgError's Code.
const (
	// CodeArgumentsTooLarge: the raw arguments exceed MaxArgumentBytes.
	CodeArgumentsTooLarge Code = "arguments_too_large"
	// CodeArgumentsNotObject: the arguments are not one JSON object.
	CodeArgumentsNotObject Code = "arguments_not_object"
	// CodeUnknownProperty: a property the schema does not name.
	CodeUnknownProperty Code = "unknown_property"
	// CodeInvalidArguments: a property's value is missing, of the wrong
	// type or out of range.
	CodeInvalidArguments Code = "invalid_arguments"
)

// The path codes: a PathError's Code.
const (
	// CodeOutsideRoots: the resolved path is not under the workspace (or
	// a readable root, for reads).
	CodeOutsideRoots Code = "outside_roots"
	// CodeOutsideWritableRoots: a shell directory resolves outside the
	// workspace and every writable root.
	CodeOutsideWritableRoots Code = "outside_writable_roots"
	// CodeNotADirectory: a shell directory is not an existing directory.
	CodeNotADirectory Code = "not_a_directory"
	// CodeProtectedPath: the path is at or under a protected entry.
	CodeProtectedPath Code = "protected_path"
	// CodeProtectionMisconfigured: a protected entry is not absolute, so
	// nothing can be trusted and every path is refused.
	CodeProtectionMisconfigured Code = "protection_misconfigured"
	// CodeJailReplaced: a read under a directory the jail replaces with
	// its own (sandbox.ReplacedRoots) outside the workspace and every
	// root inside it.
	CodeJailReplaced Code = "jail_replaced"
	// CodeBlobStore: a read in the blob store of anything but a blob (the
	// root, a shard, a staged file).
	CodeBlobStore Code = "blob_store"
	// CodeRootChanged: a root of the session (the workspace, a readable
	// or writable root) no longer resolves to the directory it did when
	// the session first used it, or another directory stands there:
	// something (a running command, typically) replaced it or a directory
	// above it. Nothing is read or written under it.
	CodeRootChanged Code = "root_changed"
	// CodeTooManyLinks: more than 40 symbolic links (maxLinkFollows).
	CodeTooManyLinks Code = "too_many_links"
	// CodePathTooLong: more than 4096 bytes, the kernel's PATH_MAX
	// (maxPathBytes).
	CodePathTooLong Code = "path_too_long"
	// CodeInvalidPath: empty, or containing a NUL byte.
	CodeInvalidPath Code = "invalid_path"
)

// The file codes: what the file tools refuse with once a path is
// authorised.
const (
	// CodeNotFound: the file does not exist.
	CodeNotFound Code = "not_found"
	// CodePermissionDenied: the filesystem refused access.
	CodePermissionDenied Code = "permission_denied"
	// CodePathChanged: something replaced a component of the path
	// between its check and its use (a running command, typically);
	// nothing was read or written.
	CodePathChanged Code = "path_changed"
	// CodeNotARegularFile: a FIFO, device, socket or the like.
	CodeNotARegularFile Code = "not_a_regular_file"
	// CodeFileTooLarge: the file, or what a write would make, exceeds
	// MaxFileBytes.
	CodeFileTooLarge Code = "file_too_large"
	// CodeBinaryFile: fs_read met NUL bytes in a file that is no image.
	CodeBinaryFile Code = "binary_file"
	// CodeInvalidWindow: a negative offset or limit.
	CodeInvalidWindow Code = "invalid_window"
	// CodeOffsetPastEnd: a window starting past the file's last line.
	CodeOffsetPastEnd Code = "offset_past_end"
	// CodeUnknownScheme: a scheme:// path of a namespace the host does
	// not serve.
	CodeUnknownScheme Code = "unknown_scheme"
	// CodeReadOnlyNamespace: fs_write or fs_edit named a scheme:// path
	// (job://, note://, cap://, ...): those are views fs_read serves, and
	// nothing writes them; nothing was written.
	CodeReadOnlyNamespace Code = "read_only_namespace"
	// CodeIsADirectory: a read named a directory.
	CodeIsADirectory Code = "is_a_directory"
	// CodeReadFailed: any other read failure.
	CodeReadFailed Code = "read_failed"
	// CodeWriteFailed: any other write failure; nothing was replaced.
	CodeWriteFailed Code = "write_failed"
	// CodeInvalidHunks: fs_edit's hunks cannot apply (a hashline code
	// names the hunk's fault where there is one).
	CodeInvalidHunks Code = "invalid_hunks"
	// CodeGitControlPath: fs_write or fs_edit refused because the path (as
	// given or resolved) has a component git takes as its own directory
	// (.git in any case, and the spellings case-insensitive or Windows
	// filesystems fold to it); only git itself, run as a command, changes
	// those.
	CodeGitControlPath Code = "git_control_path"
	// CodeGitGuardFailed: the broker's git guard could not check what a
	// write changed; the workspace is fenced until the host clears it.
	CodeGitGuardFailed Code = "git_guard_failed"
	// CodeSpillFailed: an answer too long to show whole could not be
	// stored in the blob store, so it is not returned.
	CodeSpillFailed Code = "spill_failed"
	// CodeNoShellDirectory: working_directory was asked to change a shell
	// directory this host does not keep (its Call has no Shell).
	CodeNoShellDirectory Code = "no_shell_directory"
	// CodeNoBroker: the host runs no commands (its Call has no broker).
	CodeNoBroker Code = "no_broker"
	// CodeDiagnosticsFailed: the Diagnostics seam of fs_write or fs_edit
	// panicked; the write landed, and its diagnosis says so in this code.
	CodeDiagnosticsFailed Code = "diagnostics_failed"
)

// CodedError is an error that carries a failure code: a stable
// snake_case word a program switches on. Every error type of the module
// that carries a code implements it with a pointer receiver, beside the
// typed Code field (or method) its package documents; the packages below
// this one (broker, hashline, blob) implement it without importing it, and
// so can a host's own errors.
type CodedError interface {
	error
	// ErrorCode returns the code. It is never empty.
	ErrorCode() string
}

// CodeOf returns the code of the first CodedError in err's chain,
// converted to a Code, or "" when there is none (or err is nil). It is
// the one way to read a code from an error anywhere in the module: the
// outermost coded error wins, so a refusal that wraps another's keeps its
// own code.
func CodeOf(err error) Code {
	var ce CodedError
	if errors.As(err, &ce) {
		return Code(ce.ErrorCode())
	}
	return ""
}
