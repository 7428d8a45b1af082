// Package jail is the jail helper: the code that runs in the process the
// broker starts to confine one command and exec it, and in the small
// launcher and namespace probe it may start first. The broker re-executes
// its host's own program for it; Main, called from package broker's init,
// recognises such a start and never returns from one.
//
// # What it owns
//
//   - The helper's main path (Main): it reads one Config as a line of
//     JSON on descriptor 3 (a warm helper waits for it up to a minute
//     past MaxWarmIdle, then leaves), confines its locked thread for
//     it, reports on descriptor 4 as lines of JSON (Report), and execs
//     the command. A primed helper confines for a Config that carries a
//     policy and no command, says Primed, and then serves only a command
//     whose PrimeKey is the same.
//   - Every layer it applies, in the order it applies them: the mount
//     table (the policy's root, or the host view read-only; the empty
//     root for an EmptyRoot), hidden socket directories, masked secrets,
//     sockets and kernel files, protected binds, the per-namespace
//     limits, loopback, rlimits, capabilities and securebits,
//     no-new-privs, Landlock and seccomp; and the command's descriptors
//     (ExtraFileFD, stdin, every other descriptor closed at exec).
//   - The vocabulary of its report, which package broker re-exports
//     under the same names: Layer and the Layer* names, MissingLayer,
//     Limits, EmptyRoot, the bounds it sets (ScratchBytes, the SysV,
//     POSIX queue and notification ceilings, MaxCarveEntries), and the
//     secrets it masks (SystemSecrets, HomeSecrets).
//   - How a helper is started (HelperArgs, LauncherArgs, SysProcAttr,
//     ProcessEnv, SelfExe) and the kernel probes the broker runs before
//     starting any (LandlockABI, SeccompAvailable, ProbeNamespaces).
//   - What priming depends on, for the broker to re-validate before it
//     hands a primed helper its command (PrimeKey, SocketsCovered,
//     HostPaths, TopLevelLinks, SecretGlobs).
//
// # What it refuses to own
//
// Policy: what a command may touch is decided by package broker (Policy,
// Compose, Validate) and arrives settled in a Config; the helper neither
// widens nor second-guesses it. No admission, no budgets, no warm pool,
// no git guard, no cgroup, no reaping: those are the broker's, in the
// host process. Outside Linux only the shared vocabulary compiles; there
// is no helper.
//
// # Invariants
//
//   - Config and Report are the wire between the broker and its helper,
//     which is the same program: their JSON field names do not change.
//   - A layer is reported applied only when the kernel applied it; a
//     layer Config.Required names that was not applied refuses the
//     command before exec (Report.Refused), and a step whose failure
//     would leave the jail weaker than its report ends the helper before
//     exec (Report.Fatal). The command never runs on a partial report.
//   - Everything is applied on the one locked thread that execs, and the
//     helper restricts only itself: nothing here runs in the broker's
//     process but the pure vocabulary, the probes' starts and priming's
//     reads of the host.
//   - A helper serves exactly one command (or, primed, exactly one
//     policy and then one command with it), and holds nothing the
//     command did not ask for: its environment is the Config's, its
//     descriptors 0 to 2 and, with an extra file, ExtraFileFD.
package jail
