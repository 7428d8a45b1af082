// Package loomanthropic hands Loom's tool plane to the Anthropic Go SDK's
// tool runner (anthropic-sdk-go/v2, Beta.Messages.NewToolRunner): a
// strand's tools as the runner's tools (Toolset), and a sub-agent Runner
// that runs each child with the SDK's tool runner (Runner), so the whole
// plane, agent_spawn included, works over the Anthropic API.
//
// # What it owns
//
// Only the translation. Tool definitions come from the plane's registry
// (name, description, JSON Schema as input_schema); scheduling stays the
// plane's: every call goes through plane.Dispatcher.DispatchOne, whose
// Fence keeps an Exclusive tool (bash, fs_edit, fs_write) alone among its
// strand's calls although the runner executes a turn's calls in
// parallel. Outcomes are the registry's, already bounded.
//
// # What the model sees
//
// A successful outcome is a tool_result of its text and its images. The
// runner sets is_error only for a tool that returns an error, and then
// sends text alone: an error outcome is a tool_result with is_error set
// and the text "Error: <code>: <text>", its tool.Code first; images of
// an error outcome are left out and counted. A call to a name the
// runner was not given (an unknown tool, or one the strand does not
// hold) is answered by the SDK itself, in band: is_error with
// "Error: Tool '<name>' not found". An outcome's Details are not shown.
//
// # The turn limit
//
// Runner.MaxTurns bounds a run's model replies. When the last allowed
// reply still calls tools, those calls are not run and Run returns a
// *agent.TurnLimitError (code turn_limit), as in every Loom adapter, where the
// SDK's runner would run them and end with that reply.
//
// # Coordinates
//
// The run is the operation (Toolset.Call.OpID, Turn.Operation for a
// child). The SDK gives a tool its input only; a Toolset bound to its
// runner (Bind) names the Nth reply's calls step "step-N" and finds each
// call's index in that reply (see Toolset).
package loomanthropic
