package plane

import (
	"fmt"

	"github.com/agentloom/loom/tool"
)

// The codes New fails with: an *Error's Code, read with tool.CodeOf. They
// reach the host, never a model.
const (
	// CodeWorkspaceRequired: Config.Workspace is empty.
	CodeWorkspaceRequired tool.Code = "workspace_required"
	// CodeWorkspaceUnusable: the workspace cannot be resolved or is not a
	// directory.
	CodeWorkspaceUnusable tool.Code = "workspace_unusable"
	// CodeStoreInWorkspace: the blob store, the history index or a
	// toolchain cache would lie in the workspace (or hold it), where a
	// jailed command could replace it or a repository would take it in;
	// or a toolchain cache, which commands write, would hold a store or
	// lie in one.
	CodeStoreInWorkspace tool.Code = "store_in_workspace"
	// CodePolicyInvalid: the session's base policy fails sandbox.Validate,
	// or leaves the scratch directory unwritable; the chain holds the
	// broker's *sandbox.PolicyError where it has one.
	CodePolicyInvalid tool.Code = "policy_invalid"
	// CodeSetupFailed: a directory, the blob store, the history index or
	// the registry could not be made; the chain holds the cause.
	CodeSetupFailed tool.Code = "plane_setup_failed"
)

// Error is why New failed: a stable Code, what it concerns, and the
// cause.
type Error struct {
	// Code is one of this package's codes.
	Code tool.Code
	// What names what failed, for the message ("workspace", "blob store",
	// "history index", ...).
	What string
	// Err is the cause; Unwrap returns it.
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("plane: %s: %v", e.What, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns e.Code as a string, so tool.CodeOf reads it (see
// tool.CodedError).
func (e *Error) ErrorCode() string { return string(e.Code) }

func fail(code tool.Code, what string, err error) *Error {
	return &Error{Code: code, What: what, Err: err}
}
