// Package broker is the reference jail: it runs one command under a
// composed policy and reports how it was confined.
//
// It owns Clear, which runs one argv inside the Linux jail and reports
// every confinement layer as applied or skipped, host-wide admission, the
// warm helpers, the git guard's watch over writable roots, and the audit
// hook. The vocabulary it speaks (Policy, Grant, Compose, Denial, the
// ledger, CallSpec, Execution, Settled, Enforcement) is package sandbox,
// so code that only names policies or reads settlements need not link a
// jail. *Broker implements tool.Broker.
//
// It does not own what a tool means by its command, how output is shown to
// a model, or where output spills: those belong to packages tool and blob.
//
// Invariants:
//   - The broker never restricts its own process. All confinement
//     happens in a helper child: the running program re-executed, or a
//     warm helper started ahead.
//   - A layer is reported applied only when the kernel applied it.
//   - An environment is built from Policy.EnvAllow only, never inherited.
//   - Every Execution settles exactly once, and by then the command's
//     whole process tree is gone.
//   - Output waits in a bounded queue: a slow consumer slows the command,
//     never grows host memory.
//   - A helper serves exactly one command. No namespace, mount or process
//     outlives the command it served.
//
// SECURITY.md at the module's root is the threat model: each layer of the
// jail, the part of the promise it keeps and the escape probe that attacks
// it, the bounds, and the residual risks a host must handle. This comment
// says only what a host needs to use the package.
//
// # The helper
//
// Clear re-executes the running program (/proc/self/exe, or
// Options.HelperPath) as a jail helper, recognised by this package's init
// or by an explicit HelperMain call at the top of main. Only a program
// that imports this package carries the helper and its init. The helper builds
// the jail on the thread that will exec: namespaces, the policy's root
// (or, with sandbox.CallSpec.EmptyRoot, a root holding only the program),
// protected binds, hidden sockets, masked secrets, namespace limits,
// rlimits, capabilities dropped, Landlock and seccomp. A layer
// Options.RequiredLayers or sandbox.CallSpec.RequiredLayers names that was not
// applied refuses the command before exec (sandbox.DenialLayerRequired). Outside
// Linux nothing confines a command and Clear refuses unless
// Options.AllowUnconfined. The host side of a jail is jail_linux.go;
// the helper side, everything that runs in the helper's process (and in
// the launcher and probe it may be started through), is package
// broker/internal/jail (its helper_linux.go in the order it runs). The
// broker writes it a jail.Config and reads back its jail.Report.
//
// sandbox.CallSpec.ExtraFile reaches the command at sandbox.ExtraFileFD; nothing else
// but fds 0 to 2 does.
//
// # Warm helpers
//
// A Broker keeps a pool of Options.WarmHelpers helpers started ahead, each
// retired after Options.WarmHelperIdle, so a command pays configuration,
// confinement and exec only. A warm helper may be primed with the policy
// of one of the last few commands; it then serves only a command with
// that very policy, and only once the broker has re-validated everything
// priming read from the host; otherwise it is retired. A command's stdin
// file (a job's pipe) and extra file reach a warm helper over its
// handoff socket. Warm helpers count against
// Options.MaxLiveCommands. Close discards them. Helpers started ahead, and
// every helper of a host resident above 64 MiB, are started through a
// small launcher process, so a command's cost does not grow with the
// host's heap.
//
// # What a command leaves behind
//
// A protected path a command created is moved aside once its tree is gone
// (sandbox.Settled.ProtectedCreated). The git guard (internal/gitguard) keeps
// every git configuration a command writes in its writable roots to an
// allowlist of inert keys and moves aside hooks and pointers it cannot
// trust (sandbox.Settled.GitNeutralised); GuardToolWrite does the same for a file a tool
// wrote on a model's behalf. Where the guard cannot act, the workspace is
// fenced (sandbox.DenialWorkspaceFenced) until Broker.Unfence succeeds. A host
// runs its own git on a workspace an agent touched with SafeGitEnvFor.
//
// # Bounds
//
// One command's output is bounded (sandbox.CallSpec.MaxOutputBytes, at most
// Options.MaxOutputBytes): at the bound the broker stops its tree and the
// execution settles with OutputLimited. A Broker runs at most
// Options.MaxLiveCommands at once and reserves each jail's scratch against
// Options.ScratchBudgetBytes; a command over either bound waits in arrival
// order within its deadline, then is refused with sandbox.DenialHostBusy. With
// Options.CgroupParent, each helper is born in a child cgroup bounded by
// the policy's Limits.
package broker
