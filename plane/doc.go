// Package plane assembles Loom's whole tool plane from the reference
// implementations, the one obvious way: the file tools and grep (package
// tool), bash and the job tools over a job plane (package job), the
// history_search and remember tools over a SQLite index (packages history
// and history/sqlite), the agent tools and todo over an in-process
// Agency (package agent), and code_mode (package codemode: programs on the
// workspace seam, and with the agent tools on the orchestration seam too;
// FamilyCodeMode, Plane.CodeMode). A host takes it whole (New(Config{Workspace:
// dir})) or in part (Config.Families), and brings its own implementation
// of any seam instead of the reference (Config.Jobs, Config.History,
// Config.Memory, Config.Agency, Config.Broker, Config.Blobs). One family
// is opt-in, left out of the zero Families: FamilyHost, the tools over
// seams only a host can fill (advise, context_remaining and propose over
// Config.Advice, Config.Gauge and Config.Proposals).
//
// Beside the registry it holds the batch dispatcher (Dispatcher): a host
// hands it one model turn's tool calls and gets the outcomes back in
// order, each dispatched with its coordinates (operation, step, and its
// position in the batch as source index), Concurrent calls run in
// parallel and Exclusive calls fencing the batch, so no host
// re-implements that scheduling. A framework that runs each call on its
// own goroutine dispatches them one at a time (Dispatcher.DispatchOne)
// through the plane's Fence, which keeps a strand's Exclusive calls
// alone across batches and single calls.
//
// What it owns: the defaults a session needs before a model runs a
// command (DefaultPolicy, DefaultEnv, a session scratch directory outside
// the workspace, a blob store and a history index in the user cache
// directory), the order tools are registered in, tying the registry to
// the reference Agency (agent.Reference.Govern), the per-strand shell
// directory (CallFor), and tearing everything down in order (Close).
//
// What it refuses to own: running a model (the host's loop, as in
// examples/agent), what goes into the history index (the host indexes
// its session log with Plane.Store.Index as it grows), and any tool's
// behaviour (each tool's own package).
//
// Invariants:
//   - Config is passed by value and its zero value works but for
//     Workspace, which is required: every other field left zero takes the
//     default it documents.
//   - Nothing the plane keeps lives in the workspace, where a jailed
//     command could replace it: New refuses a blob store or a history
//     index inside it (CodeStoreInWorkspace).
//   - Every failure of New is an *Error whose Code is one of this
//     package's codes; errors.As finds it, and its chain holds the cause.
//   - Dispatcher.Dispatch is total: it returns exactly one Result per
//     call, in the order given, never panics and never returns a Go error;
//     an Exclusive call never overlaps another call of its batch, nor,
//     through Plane.Dispatcher's Fence, another call of its strand.
package plane
