// Package mcpgen turns the tool list of an MCP server into the source of
// a cap package, cap/mcp/<server>, that a code-mode program imports: one
// Go function per tool, typed from the tool's JSON Schemas. It generates
// on the host, from the tool descriptions alone, and talks to no server.
//
// # The package
//
// Generate takes a server's name and its tools and returns a Package:
// one Go file, the package's import path and the capabilities it calls.
// The output depends on the set of tools only: the same tools in any
// order, with their schemas' properties in any order, give the same
// bytes. A tool whose schema is refused is left out, with its refusal in
// Package.Refused; the rest of the server is still offered.
//
// Each tool becomes
//
//	func Name(ctx context.Context, in NameInput) (NameOutput, error)
//
// where NameInput is the input schema as a struct, and NameOutput is the
// output schema as a struct when the tool declares one. A tool without an
// output schema returns Result: its structured content decoded into a
// map[string]any (nil when it sent none) and its text.
//
// # The API page
//
// Package.API is what a model reads of the package (fs_read
// cap://mcp/<server>): each function's signature under its tool's own
// description, then the types it names, each struct field on one line
// with its JSON name (unsaid when it is the field's own with the first
// letter lower-cased), whether it is optional, and its doc. It holds no
// struct tags, no generator's lines and no function bodies, so it is
// smaller than the source and, on real servers, than the tools' own
// JSON Schemas; it is rendered from the same generation, so it is as
// deterministic.
//
// # The calling convention
//
// Each tool is one capability, named "mcp.<package>.<function>": the
// package name, then the Go function's name in snake case
// ("mcp.github.create_issue" for github.CreateIssue), as "lsp.document_symbols"
// names lsp.DocumentSymbols. Both parts are ASCII identifiers without
// dots, so the name splits in three unambiguously, whatever the tool's
// own name holds (MCP allows dots, dashes and 128 bytes); the host maps
// it back with Package.Capabilities.
//
// The function marshals its input struct with encoding/json and sends one
// cap_call whose args are {"arguments": <the JSON object, as bin>}.
// DecodeArguments turns those args back into the JSON object the server's
// tools/call takes. The host answers, through Answer, either
// {"ok": {"structured": <JSON bytes or nil>, "text": <string>}} or, for a
// tool that reported failure (isError), an error with CodeToolError whose
// message is the tool's text.
//
// # Bounds
//
// A server name is at most MaxServerNameBytes, a tool name at most
// MaxToolNameBytes, a server at most MaxTools tools, a schema at most
// MaxSchemaBytes nested at most MaxSchemaDepth deep, a tool at most
// MaxTypesPerTool named types and MaxFieldsPerTool fields, a doc comment
// at most MaxDocBytes, and the source at most MaxSourceBytes. Past a
// bound, Generate refuses with an *Error whose code says which.
package mcpgen
