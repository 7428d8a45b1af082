// Package loomopenai hands Loom's tool plane to the OpenAI Responses API
// (github.com/openai/openai-go/v3): a strand's tools as Responses
// function tools (Toolset), and a Runner that runs a strand as a tool
// loop over them, so the whole plane, agent_spawn included, works under
// the Responses API.
//
// # What it owns
//
// Only the translation, and a tool loop: openai-go has none of its own,
// so Runner is the loop a host runs its own strand with, as well as the
// plane's sub-agent Runner. Tool definitions come from the plane's
// registry (name, description, JSON Schema); scheduling stays the
// plane's: a response's calls run as one plane batch through
// plane.Dispatcher, Concurrent tools side by side, an Exclusive tool
// (bash, fs_edit, fs_write) alone among all of its strand's calls.
// Outcomes are the registry's, already bounded.
//
// # What the model sees
//
// A function_call_output has no error flag: the model reads an error
// outcome as its text prefixed by "error <code>: ", its tool.Code, as
// under eino and Genkit. Images travel as input_image parts (base64 data
// URLs) after the text. An unknown tool, or one the strand does not
// hold, is answered in band like any other error.
//
// # The turn limit
//
// Runner.MaxTurns bounds a run's model replies. When the last allowed
// reply still calls tools, those calls are not run and Run returns a
// *agent.TurnLimitError (code turn_limit), as in every Loom adapter.
//
// # Coordinates
//
// The run is the operation (Toolset.Call.OpID, Turn.Operation for a
// run of Runner), the Nth response handed to Toolset.Dispatch is step
// "step-N", and a call's index its position among the response's
// function calls; its call_id is the plane.ToolCall's ID.
package loomopenai
