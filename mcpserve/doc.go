// Package mcpserve serves a tool.Registry to Model Context Protocol
// clients, with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// New lists every registered tool under its name, title (tool.Tool.Title,
// else its name spaced), description and input schema, with annotations
// stated from its declaration: readOnlyHint from tool.Tool.ReadOnly,
// idempotentHint for a read-only or ReplaySafe tool, the rest left to
// MCP's defaults. A tools/call request becomes one Registry.Dispatch with a
// tool.Call copied from the session template the host gave New, carrying
// fresh coordinates: the template's strand (DefaultStrand if none), an
// operation id "<prefix>/<n>" per request, step "1" and source index 0. Each
// request is a step of its own, so Tool.Mode does not serialise requests:
// an MCP client schedules its own calls. The Outcome becomes the result:
// Text a text block, Images image blocks, IsError the in-band tool error,
// Details the structured content when it encodes as a JSON object.
// Cancellation from the client cancels the tool's context. When the
// client sent a progress token, the rolling output tail a tool shows
// through Call.ObserveOutput is relayed as progress notifications, at most
// one per ProgressInterval and never after the result.
//
// With Options.ApproveWithElicitation, a refusal a tool raises for
// approval (tool.Call.RaiseRefusal: bash or code_mode asking for
// permissions beyond the session policy) becomes an MCP elicitation/create
// request to the client naming the tool, exactly the grants wanted and
// what runs: bash's command and directory, or the program code_mode read
// and built (its text, size and digest), every model-written value
// escaped (tool.RaisedRefusal.Describe). Only an
// explicit accept resumes the call, with exactly those grants, for that
// call only; decline, cancel, ApprovalTimeout, and a client that cannot
// be asked (no elicitation capability, or a protocol version that forbids
// requests from the server during a call) keep the refusal in band,
// saying why, with _meta[MetaApprovalKey] telling how the question ended.
// A session has at most one question open at a time, and a question's
// text is at most 4 KiB.
//
// ServeStdio serves one session over standard input and output through
// Transport, a newline-delimited JSON-RPC transport that answers a
// malformed line (not JSON, not JSON-RPC, a batch, over MaxMessageBytes)
// with a JSON-RPC error and keeps reading, where the SDK's stdio transport
// would end the session. At the end of input it finishes every request
// already read (each tool within its own deadline) and writes every
// answer before the session ends; the end of the context given to Run
// ends the session at once, cancelling what runs.
//
// This package owns the mapping between Loom's tool record and MCP. It
// does not own what the tools may touch (the session template's policy,
// broker and workspace, built by the host: see examples/mcpserver), and
// it offers no MCP resources, prompts or sampling, and asks the client
// for nothing but approvals.
//
// Invariants:
//   - A tool failure never becomes a protocol error: every Outcome,
//     including bad arguments and refusals, is a result with isError set.
//     Protocol errors are kept for what MCP defines them for (an unknown
//     tool name, malformed requests).
//   - Every served tool passed CheckTool: an MCP-valid name and a schema
//     github.com/google/jsonschema-go resolves, of type "object".
//   - Bad input over the wire never ends a Transport session; only the
//     end of input (once every request read is answered), Close, or the
//     end of the session's context does.
//   - No error answer echoes a large value back: a JSON-RPC error's
//     message is cut past 1 KiB and longer data dropped (tool
//     results are held to their bounds by the tools).
//   - The session template is never modified; each call gets its own copy.
//   - No approval widens a call beyond the grants its question named, nor
//     outlives the call: a grant is never remembered for later calls.
package mcpserve
