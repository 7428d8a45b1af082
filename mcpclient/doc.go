// Package mcpclient is Loom's door to Model Context Protocol servers: it
// runs each configured server (a stdio command inside the broker's jail,
// or a streamable-HTTP endpoint), lists its tools and calls them, over
// the official Go SDK's client (github.com/modelcontextprotocol/go-sdk),
// and registers them as model tools (Register).
//
// # What it owns
//
//   - Configuration (Server, Grant, ParseConfig): the "mcpServers" JSON
//     every MCP host reads, parsed totally and bounded; a Grant (network,
//     a writable workspace, further roots) is the host's, never the
//     file's.
//   - A server's life (Client): started at the first request, restarted
//     after it ends at most MaxRestarts times, each at the next request,
//     shut down by Close (its input closed, killed past StopTimeout).
//   - The stdio transport: newline-delimited JSON-RPC over the jailed
//     execution's input and output, a line at most MaxMessageBytes, a
//     write past WriteTimeout a hung server.
//   - Its tools: listed once per incarnation and again after
//     notifications/tools/list_changed; a change without that
//     announcement, a duplicate name, a result that does not match a
//     declared output schema is refused in band, each with its Code.
//
// # Guarantees
//
//   - A stdio server runs in the jail only: the session's system and
//     readable roots, the workspace readable (writable only with
//     Grant.WriteWorkspace), its own home and TMPDIR under
//     Options.TempDir (outside the workspace) its one writable place, its
//     toolchain's profile where its command is a toolchain's (npx: npm's
//     cache), its executable file alone when no root covers it; no
//     network unless granted, no host socket, none of the session's
//     environment but PATH, LANG and TERM.
//   - Everything a server sends is hostile input: a line is refused past
//     MaxMessageBytes before it is held, a line that is not one JSON-RPC
//     message or a batch stops the server (CodeProtocol); tool lists are
//     bounded (MaxTools, MaxListPages, MaxSchemaBytes,
//     MaxDescriptionBytes) and every schema must resolve with no loader; a
//     result's blocks are each accounted for, its text bounded by the
//     caller (a registered tool spills past blob.OverflowThreshold); _meta
//     is never read nor passed on. Nothing a server sends makes the
//     package panic or reaches the host's standard error.
//   - Every failure is a *Error with one Code; a registered tool answers
//     each in band.
//   - A call never outlives its context (CallTimeout without a
//     deadline); a server's goroutines end with its incarnation.
//
// # What it refuses to own
//
// It decides no approval (a server's annotations are hints, turned into
// replay safety and scheduling only), offers a server no sampling, roots
// or elicitation, and runs no server in the host process.
package mcpclient
