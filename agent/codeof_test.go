package agent

import "github.com/agentloom/loom/tool"

// codeOf returns what tool.CodeOf reads from err (a Refusal's Code, a
// todo board's, any other tool.CodedError's), or CodeAgencyUnavailable
// for any other non-nil error (a host Agency that failed without saying
// why), or "" for nil: the code the agent tools answer err with.
func codeOf(err error) tool.Code {
	if c := tool.CodeOf(err); c != "" || err == nil {
		return c
	}
	return CodeAgencyUnavailable
}
