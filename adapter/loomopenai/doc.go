// Package loomopenai runs Loom's tool plane under the OpenAI Responses
// API (github.com/openai/openai-go/v3).
//
// It owns the conversion both ways and a tool loop: FunctionTools turns
// Loom's tool definitions (name, description, JSON Schema) into function
// tools; Dispatch turns a response's function calls into plane
// dispatches and their outcomes into function_call_output items; Agent
// runs the loop, and its Runner runs every sub-agent (agent_spawn) as
// its own loop over the tools the child holds, so the whole plane works
// under the Responses API.
//
// What the model sees. A function_call_output has no error flag: an
// error outcome's text starts with "error <code>: " (the outcome's
// tool.Code), then the text naming the cause and the fix. Images travel
// as input_image parts (base64 data URLs) after the text. An unknown
// tool, or one the strand does not hold, is answered in band like any
// other error. Outcomes are already bounded by the registry.
//
// Coordinates. The run is the operation (the call template's OpID), each
// model turn a step ("step-1", "step-2", ...), and a call's index its
// position among the turn's function calls; its call_id is the
// plane.ToolCall's ID. A turn's calls run as one plane batch through
// Plane.Dispatcher: Concurrent tools side by side, an Exclusive tool
// (bash, fs_edit, fs_write) alone among all of its strand's calls.
package loomopenai
