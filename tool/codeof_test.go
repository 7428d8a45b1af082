package tool_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/hashline"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/internal/search"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/mcpserve"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/todo"
	"github.com/agentloom/loom/tool"
)

// uncoded has a Code field but no ErrorCode method: what every coded
// error type was before tool.CodedError, and what CodeOf cannot read.
type uncoded struct{ Code tool.Code }

func (e *uncoded) Error() string { return string(e.Code) }

// TestCodeOfReadsEveryCodedError: for one error of every coded type of
// the module, wrapped once, tool.CodeOf answers its code. (The coded
// errors internal to codemode have their own rows there and in
// codemode/internal/wire; the root package's TestEveryCodedErrorHasErrorCode
// finds a coded type without ErrorCode.)
func TestCodeOfReadsEveryCodedError(t *testing.T) {
	tests := []struct {
		err  error
		want tool.Code
	}{
		{&tool.PathError{Code: tool.CodeOutsideRoots, Path: "/x", Entry: "/x"}, tool.CodeOutsideRoots},
		{&tool.ArgError{Code: tool.CodeUnknownProperty, Reason: "r"}, tool.CodeUnknownProperty},
		{&tool.RegisterError{Code: tool.CodeDuplicateName, Name: "n", Reason: "r"}, tool.CodeDuplicateName},
		{&tool.FileError{Code: tool.CodeNotFound, Message: "m"}, tool.CodeNotFound},
		{sandbox.NewDenial(sandbox.DenialStepAborted, "r", nil), tool.Code(sandbox.DenialStepAborted)},
		{&sandbox.PolicyError{Code: sandbox.PolicyRelativePath, Field: "f", Value: "v"}, tool.Code(sandbox.PolicyRelativePath)},
		{&hashline.HunkError{Code: hashline.CodeBadOp, Index: 0, Detail: "d"}, tool.Code(hashline.CodeBadOp)},
		{&hashline.StaleError{Code: hashline.CodeStaleDigest}, tool.Code(hashline.CodeStaleDigest)},
		{&hashline.RefError{Code: hashline.CodeBadRef, Input: "i", Reason: "r"}, tool.Code(hashline.CodeBadRef)},
		{&blob.Error{Code: blob.CodeNotFound, Op: "read"}, tool.Code(blob.CodeNotFound)},
		{&plane.Error{Code: plane.CodeWorkspaceRequired, What: "workspace", Err: errors.New("empty")}, plane.CodeWorkspaceRequired},
		{&job.Error{Code: job.CodeUnknownJob, Reason: "r"}, job.CodeUnknownJob},
		{&job.CursorError{Code: job.CodeInvalidCursor, Token: "t", Reason: "r"}, job.CodeInvalidCursor},
		{&job.LifetimeError{Code: job.CodeLifetimeRefused, Lifetime: "forever", Reason: "r"}, job.CodeLifetimeRefused},
		{&agent.Refusal{Code: agent.CodeDepthCap, Reason: "r"}, agent.CodeDepthCap},
		{&history.Refusal{Code: history.CodeIndexBusy, Message: "m"}, history.CodeIndexBusy},
		{&todo.Error{Code: todo.CodeInvalid, Reason: "r"}, todo.CodeInvalid},
		{&codemode.CapError{Code: codemode.CodeUnknownSeam, Message: "m"}, codemode.CodeUnknownSeam},
		{&codemode.VetError{}, codemode.CodeVetRefused},
		{&codemode.BuildError{Diagnostics: "d"}, codemode.CodeBuildRejected},
		{&codemode.BuilderError{Code: codemode.CodeBuildUnavailable, Reason: "r"}, codemode.CodeBuildUnavailable},
		{&search.ParseError{Reason: "r"}, "bad_ripgrep_event"},
		{&mcpserve.ToolError{Code: "bad_name", Tool: "t", Err: errors.New("e")}, "bad_name"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%T", tt.err), func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("no error constructed")
			}
			if got := tool.CodeOf(fmt.Errorf("wrap: %w", tt.err)); got != tt.want {
				t.Fatalf("CodeOf(wrap(%T)) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
	// Control: a coded type without ErrorCode is invisible to CodeOf.
	if got := tool.CodeOf(fmt.Errorf("wrap: %w", &uncoded{Code: tool.CodeNotFound})); got != "" {
		t.Fatalf("CodeOf read %q from a type without ErrorCode", got)
	}
}

// TestCodeOfOutermostWins: in a chain of coded errors CodeOf answers the
// outermost, so a refusal keeps its own code over its cause's; nil and an
// uncoded chain answer "".
func TestCodeOfOutermostWins(t *testing.T) {
	policy := &sandbox.PolicyError{Code: sandbox.PolicyRelativePath, Field: "readable_roots[0]", Value: "rel"}
	tests := []struct {
		name string
		err  error
		want tool.Code
	}{
		{"nil", nil, ""},
		{"uncoded", fmt.Errorf("wrap: %w", errors.New("plain")), ""},
		{"denial over policy", sandbox.NewDenial(sandbox.DenialInvalidPolicy, "r", policy), tool.Code(sandbox.DenialInvalidPolicy)},
		{"plane over policy", &plane.Error{Code: plane.CodePolicyInvalid, What: "policy", Err: policy}, plane.CodePolicyInvalid},
		{"job over denial", fmt.Errorf("w: %w", &job.Error{Code: job.CodeJobClearanceRefused, Reason: "r",
			Denial: sandbox.NewDenial(sandbox.DenialRequirementsNotCovered, "r", nil)}), job.CodeJobClearanceRefused},
		{"hunk over ref", &hashline.HunkError{Code: hashline.CodeMissingRef, Err: &hashline.RefError{Code: hashline.CodeBadRef}}, tool.Code(hashline.CodeMissingRef)},
		{"cause of an uncoded error", fmt.Errorf("w: %w", errors.Join(errors.New("plain"), policy)), tool.Code(sandbox.PolicyRelativePath)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tool.CodeOf(tt.err); got != tt.want {
				t.Fatalf("CodeOf(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
