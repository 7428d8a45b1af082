// Package loomeino hands Loom's tool plane to cloudwego/eino: a strand's
// tools as eino tools (Toolset), and a sub-agent Runner that runs each
// child with eino's own ReAct agent (Runner), so the whole plane,
// agent_spawn included, works inside eino. Where the other adapters'
// Runners take a Client, this one's Model is a function returning the
// eino chat model of a turn: an eino model is its own client.
//
// # What it owns
//
// Only the translation. Tool definitions come from the plane's registry
// (name, description, JSON Schema); scheduling stays the plane's: every
// call goes through plane.Dispatcher.DispatchOne, whose Fence keeps an
// Exclusive tool (bash, fs_edit, fs_write) alone among its strand's
// calls although eino's tools node runs a turn's calls in parallel.
// Outcomes are the registry's, already bounded.
//
// # What the model sees
//
// eino's tool messages carry no error flag, and a tool that returns an
// error aborts the graph. So a tool here never returns an error: the
// model reads an error outcome as its text prefixed by "error <code>: ",
// its tool.Code, as under openai-go and Genkit. Tool (an EnhancedInvokableTool) answers with a
// text part and one image part per image; TextTool (an InvokableTool)
// leaves images out and says how many. A call to a name the toolset does
// not offer is answered in band with the registry's refusal
// (Toolset.Unknown, set by Toolset.Config). An outcome's Details are not
// shown, as with every provider.
//
// # The turn limit
//
// Runner.MaxTurns bounds a run's model replies. When the last allowed
// reply still calls tools, those calls are not run and Run returns a
// *agent.TurnLimitError (code turn_limit), as in every Loom adapter. A host
// running its own ReAct agent over a Toolset sets eino's MaxStep itself.
//
// # Coordinates
//
// The run is the operation (Toolset.Call.OpID, Turn.Operation for a
// child). With the run's model wrapped by Toolset.Model, the Nth model
// reply is step "step-N" and a call's index its position in that reply;
// otherwise a call's step is its tool-call ID and its index 0.
package loomeino
