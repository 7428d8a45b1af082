// Package loomgenkit hands Loom's tool plane to Firebase Genkit
// (github.com/firebase/genkit/go): a strand's tools as Genkit tools
// (Toolset) that genkit.Generate's own tool loop calls, and a Runner that
// runs a strand as one Generate call over them, so the whole plane,
// agent_spawn included, works inside Genkit. Where the other adapters'
// Runners take a Client, this one takes the *genkit.Genkit that holds
// the models: Genkit reaches a provider through its plugins.
//
// # What it owns
//
// Only the translation. The model is offered each tool under its Loom
// name, description and JSON Schema: the Toolset's middleware puts
// Loom's schema on each definition. The Genkit tools themselves take any
// input, so Genkit never refuses arguments (which would abort the
// generation); Loom checks them and answers a bad call in band.
// Scheduling stays the plane's: Genkit runs a turn's calls each on its
// own goroutine, and every call goes through
// plane.Dispatcher.DispatchOne holding the plane's Fence, so an
// Exclusive tool (bash, fs_edit, fs_write) still runs alone among its
// strand's calls.
//
// # What the model sees
//
// A Genkit tool response has no error flag: the model reads an error
// outcome as its text prefixed by "error <code>: ", its tool.Code, as
// under eino and openai-go. Images follow as media parts (base64 data
// URLs). A call of a name the strand is not offered is answered in band
// too: Genkit's loop aborts on a name it does not know, so the
// middleware routes such a call to UnknownToolName and restores the
// model's name before the model reads the conversation again; Loom
// answers it as unknown (unknown_tool) or not held (tool_not_held).
//
// # The turn limit
//
// Runner.MaxTurns bounds a run's model replies. When the last allowed
// reply still calls tools, those calls are not run and Run returns a
// *agent.TurnLimitError (code turn_limit), as in every Loom adapter: the
// Toolset's middleware refuses that reply before Genkit's own limit
// (which fails one reply later, with Genkit's error) is reached.
//
// # Coordinates
//
// The run is the operation (Toolset.Call.OpID, Turn.Operation for a run
// of Runner), each model turn a step ("step-1", ...), and a call's index
// its position among the turn's tool requests; its ID is the request's
// Ref.
//
// # Dependencies
//
// Genkit v1.4.0 needs github.com/invopop/jsonschema v0.13.0, which
// anthropic-sdk-go v2.15.0 (v0.14.0) cannot share a build with: this
// module pins v0.13.0 with a replace and stays out of the repository's
// go.work; test it with GOWORK=off.
package loomgenkit
