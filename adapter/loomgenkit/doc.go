// Package loomgenkit runs Loom's tool plane under Firebase Genkit
// (github.com/firebase/genkit/go): a strand's tools become Genkit tools
// (Toolset) that genkit.Generate's own tool loop calls, and Agent runs a
// strand as one Generate call, so its Runner makes agent_spawn run each
// child as Genkit's loop over the tools the child holds.
//
// Definitions. The model is offered each tool under its Loom name,
// description and JSON Schema: the Toolset's middleware puts Loom's
// schema on each definition. The Genkit tools themselves take any input,
// so Genkit never refuses arguments (which would abort the generation);
// Loom checks them and answers a bad call in band.
//
// What the model sees. A Genkit tool response has no error flag: an
// error outcome's output is its text prefixed by "error <code>: " (the
// outcome's tool.Code). Images follow as media parts (base64 data URLs).
// A call of a name the strand is not offered is answered in band too:
// Genkit's loop aborts on a name it does not know, so the middleware
// routes such a call to UnknownToolName and restores the model's name
// before the model reads the conversation again; Loom answers it as
// unknown (unknown_tool) or not held (tool_not_held).
//
// Coordinates. The run is the operation (the call template's OpID),
// each model turn a step ("step-1", ...), and a call's index its
// position among the turn's tool requests; its ID is the request's Ref.
// Genkit runs a turn's calls each on its own goroutine; every call goes
// through plane.Dispatcher.DispatchOne holding the plane's Fence, so an
// Exclusive tool (bash, fs_edit, fs_write) still runs alone among its
// strand's calls.
//
// Dependencies. Genkit v1.4.0 needs github.com/invopop/jsonschema
// v0.13.0, which anthropic-sdk-go v2.15.0 (v0.14.0) cannot share a
// build with: this module pins v0.13.0 with a replace and stays out of
// the repository's go.work; test it with GOWORK=off.
package loomgenkit
