// Package lsp is Loom's language-server door: it runs stdio language
// servers (gopls first) inside the broker's jail, one long-lived process
// per workspace and configured server, and asks them about the files the
// tools write.
//
// # What it owns
//
//   - Configuration (Server, FilePattern, Detect, Gopls): a server is a
//     name, a command and the base-name patterns of the files it owns,
//     each with the language identifier it knows them by; nothing in it
//     is particular to one language, so pyright, typescript-language-server
//     or rust-analyzer plug in by configuration. Detect finds gopls on the
//     commands' PATH, in $GOBIN or in $GOPATH/bin.
//   - The servers' lives (Plane): each is started through broker.Clear at
//     the first diagnosis that needs it, restarted after it ends (crashed,
//     hung, broke the protocol) at most MaxRestarts times, each restart at
//     the next diagnosis, then refused with CodeRestartsExhausted; Close
//     shuts every one down (shutdown, exit, then a kill past stopTimeout).
//   - Diagnostics after a write (Plane.Diagnose, the tool.Diagnostics seam
//     fs_write and fs_edit take): the server is first told what changed
//     on disk since it last heard (a bounded scan of the workspace's
//     metadata, as workspace/didChangeWatchedFiles, closing any document
//     Loom holds open that changed), then the written content as a new
//     version (didOpen, or didChange with the full text). The diagnosis
//     settles on the server's answer to a pull (textDocument/diagnostic)
//     when it offers pulls, which is the state of exactly what it holds;
//     else, and for a document it answers no pull for, on its
//     publication carrying exactly that version. Until then, or when the
//     server ends, it says so. A document just opened that the server
//     finds clean is asked once more as a change to the same text (gopls
//     answers a module's first Go file as clean until a change has loaded
//     its package).
//   - The language operations, asked of the same running servers through
//     the same request path (Plane.Definition, References, Hover,
//     DocumentSymbols, WorkspaceSymbols, Implementation, IncomingCalls,
//     OutgoingCalls, CodeActions, Rename), each first telling the server
//     what changed on disk. A place is a Position: a file and a line, then
//     a column or an identifier on that line, or a symbol's name
//     ("pkg.Type.Method") found through workspace/symbol, an ambiguous
//     one refused with its candidates (CodeSymbolAmbiguous). Every site an
//     answer names carries its workspace-relative path, 1-based line and
//     column (in characters), and its line's hashline anchor, read from
//     the file through a root the workspace is opened as (never following
//     a link out of it). Sites outside the workspace are dropped and
//     counted (Sites.Outside), never read; malformed ones likewise
//     (Sites.Malformed); lists are cut to MaxSites with their total.
//   - Edits as previews, and their landing: Rename and a code action's
//     edit are planned against each file's content as read (an Edit
//     carries each file's hashline digest) and write nothing; an edit
//     touching a file outside the workspace, or creating, renaming or
//     deleting one, is refused whole. Plane.Apply lands a preview through
//     a tool.Call's file API (fs_write's path discipline, its staged
//     write and rename), all or nothing: every file read and checked against its
//     digest, every change planned, before anything is written; a file
//     changed since the preview refuses the whole edit (CodeStaleEdit).
//   - The base protocol's framing (codec), with its bounds: Content-Length
//     at most MaxMessageBytes, header lines at most maxHeaderLineBytes and
//     maxHeaders of them, only Content-Length and a UTF-8 Content-Type
//     accepted, bodies valid JSON within maxJSONDepth and maxJSONValues.
//     github.com/sourcegraph/jsonrpc2 correlates requests and responses
//     over it.
//
// # What it refuses to own
//
// It renders nothing a model reads (package tool renders a diagnosis,
// with each line's hashline anchor) and decides no policy beyond the
// servers' own jail. It runs no server in the host process: rule zero.
// It applies no edit a server proposes on its own (workspace/applyEdit
// is answered "not applied") and runs no server command a code action
// names; it lands only an Edit its caller previewed and hands to Apply.
// Code mode's cap/lsp is not here: it is built on Plane's operations.
//
// # Guarantees
//
//   - A server runs in the jail only: the workspace readable and never
//     writable; the session's system and readable roots; its writable
//     roots but the workspace (the scratch directory, the toolchain
//     profiles' caches); the server's executable file alone as a system
//     root when nothing covers it, never the directory it is in; the
//     session's environment; no network, no host socket.
//   - Everything a server sends is hostile input. Framing past a bound is
//     refused before it is allocated, and the server stopped
//     (CodeProtocol). A publication is read only for a document a
//     diagnosis waits on, only for the version it sent, and only when its
//     URI is a file URI under the workspace; lists and counts are Loom's
//     own (maxKeptDiagnostics kept, every element counted), messages cut
//     to maxMessageKeptBytes; an operation's answer is decoded into
//     Loom's own small structs, element by element, ranges checked (no
//     negative or huge line, no start after its end), every element
//     counted and at most a bound kept; nothing a server sends makes the
//     package panic, and nothing reaches the host's standard error.
//   - A diagnosis never outlives its context (settleWait without a
//     deadline), never fails the write it follows, and says which of
//     settled, unsettled or unavailable it is, with the server's name.
//   - Host memory per server is bounded: one message (MaxMessageBytes)
//     being read, the kept diagnostics, maxOpenDocuments documents'
//     versions (not their text), and a scan's records (maxWatchedFiles).
package lsp
