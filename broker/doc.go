// Package broker decides what a command may touch and runs it under that
// decision.
//
// It owns the policy vocabulary (Policy, Grant, Denial), composition of a
// session's base policy with a tool's requirements and an operator's
// grants, the budget ledger pooled per {operation, step}, and Clear, which
// runs one argv inside the Linux jail and reports every confinement layer
// as applied or skipped.
//
// It does not own what a tool means by its command, how output is shown to
// a model, or where output spills: those belong to package tool and blob.
//
// Invariants:
//   - The broker never restricts its own process; all confinement happens
//     in a re-executed helper child.
//   - A layer is reported applied only when the kernel applied it.
//   - An environment is built from Policy.EnvAllow only, never inherited.
//   - Every Execution settles exactly once, and by then the command's whole
//     process tree is gone (on Linux with the pid namespace layer; without
//     it, its process group).
//   - Output waits in a bounded queue: a slow consumer slows the command,
//     never grows host memory.
//   - A helper serves exactly one command. A warm helper (see below) holds
//     no policy and has confined nothing before its command is handed to
//     it; no namespace, mount or process outlives the command it served.
//
// # The Linux jail
//
// Clear re-executes the running program (/proc/self/exe, or
// Options.HelperPath) as a jail helper: argv[0] "loom-jail-helper" and
// LOOM_JAIL_HELPER=v1 in its environment, recognised by this package's
// init (or by an explicit HelperMain call at the top of main). The helper
// is born in new user, mount, pid, ipc, uts and (network off) network
// namespaces with an identity uid/gid map and, as ambient capabilities,
// only CAP_SYS_ADMIN, CAP_NET_ADMIN and CAP_SETPCAP. It reads its
// configuration from fd 3 and, on the thread that will exec: makes every
// mount private; mounts a fresh /proc (capping the namespace's pid_max, /proc/sys and
// the other kernel knobs read-only),
// a private tmpfs /tmp (roots under the host's /tmp bound back, read-only
// unless writable) and a small /dev; pins the directories above every
// protected path and binds the protected paths (and symlink targets)
// read-only; brings lo up; sets rlimits; clears every capability set and
// locks the securebits; sets no-new-privs; applies Landlock (read on the
// readable roots, everything on the writable roots, TCP denied with the
// network off, abstract unix sockets and signals scoped); installs a
// seccomp filter (ptrace, process_vm_*, io_uring, the mount API, bpf,
// keyrings, namespaces, module and kexec loading, x32, and with the
// network off every non-unix socket, all EPERM); reports on fd 4 (which
// closes at exec) and execs the command. A protected path that did not
// exist when the command started (a missing hooks directory) cannot be
// bound; if the command creates it, the broker moves it aside when the
// command's tree is gone (Settled.ProtectedCreated). Without a user
// namespace, Landlock refuses protected paths by splitting the writable
// roots around them; without Landlock, the mount namespace remounts
// everything outside the writable roots read-only. Every layer is probed directly
// once per Broker; a missing one is reported skipped with the kernel's
// errno, and Enforcement.Degraded is set. Outside Linux nothing confines a
// command and Clear refuses unless Options.AllowUnconfined.
//
// # Warm helpers
//
// Starting a helper (the clone into fresh namespaces and the Go runtime's
// start-up) is most of a jail's fixed cost. Once a command settles (or
// has run for 100 ms) the broker starts the next helper in the
// background, with the namespace flavour that command used, and keeps it
// blocked on its configuration for Options.WarmHelperIdle; the next
// command of that flavour is handed to it, so its latency is
// configuration, confinement and exec only. A command whose Stdin is an
// *os.File, one of another flavour, or one that finds the helper gone,
// stale or started under another host identity gets a helper started for
// it. Close discards the warm helper; a helper that no configuration
// reaches exits by itself.
//
// # The launcher
//
// A Go parent that clones a child into a new user namespace copies its
// own page tables (without CLONE_VM, so it can write the child's uid map
// while the child waits), stalling its allocating threads meanwhile; for a
// host of 1 GiB that cost ~40 ms per command. So warm helpers, and every
// helper of a host resident above 64 MiB, are started through a small
// launcher process the host vforks: the launcher makes the namespaces,
// reports the helper's pid (which the broker confirms and then signals
// only through a pidfd) and mirrors the helper's exit status, so nothing
// else changes.
package broker
