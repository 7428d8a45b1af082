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
//   - A helper serves exactly one command. A warm helper (see below)
//     holds no policy before its command is handed to it, or is primed
//     with exactly one (the last command's of its flavour) and then
//     serves only a command with that very policy, once the broker has
//     re-validated everything its priming read from the host; a primed
//     helper that does not qualify is retired, never reused. No
//     namespace, mount or process outlives the command it served.
//
// # The Linux jail
//
// Clear re-executes the running program (/proc/self/exe, or
// Options.HelperPath) as a jail helper: argv[0] "loom-jail-helper" and
// LOOM_JAIL_HELPER=v1 in its environment, recognised by this package's
// init (or by an explicit HelperMain call at the top of main). The helper
// is born in new user, mount, pid, ipc, uts and (network off) network
// namespaces with an identity uid/gid map and, as ambient capabilities,
// only CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SETPCAP and CAP_SYS_RESOURCE
// (which it drops before exec), in a session of its
// own (no controlling terminal). It reads its configuration from fd 3
// and, on the thread that will exec:
//   - makes every mount private and the whole host view read-only (one
//     recursive mount_setattr, or a remount per mount before Linux 5.12);
//   - builds a new root out of the policy's roots only (the policy_root
//     layer): a fresh tmpfs holding the host root's top-level links
//     (merged-/usr's /bin -> usr/bin and the like) and binds of the
//     system and readable roots (read-only, nosuid, nodev), the
//     writable roots (read-write, nosuid, nodev), Policy.Sockets and the
//     file /etc/resolv.conf names, each opened without following links
//     (a root that is itself a link is carried as that link, which
//     resolves within the new root only; a root of / itself as /'s
//     entries; a root missing on the host is absent); the working
//     directory, when no
//     root covers it, as an empty directory; a fresh /proc (capping the
//     namespace's pid_max; /proc/sys and the other kernel knobs
//     read-only; kcore, keys, timer_list and the other kernel-wide files
//     hidden) and a small /dev without /dev/tty; then the tmpfs made
//     read-only, pivot_root, and the old root detached. Nothing outside
//     the roots exists for the command, so no host file or socket
//     elsewhere can be named, however or whenever it was made. Where the
//     kernel refuses a step before the pivot, the layer is reported
//     skipped with the reason and the jail keeps the read-only host view
//     with its own /proc and /dev over it and the writable roots bound
//     back read-write, nosuid and nodev;
//   - mounts one private scratch tmpfs serving /tmp and /dev/shm (roots
//     under the host's /tmp bound back);
//   - hides /run and /var/run, where the view shows them (in the host
//     view always; in the new root only under a root that covers them),
//     under empty tmpfs (roots beneath them, Policy.Sockets and the file
//     /etc/resolv.conf names are bound back) and masks every other
//     pathname socket the host had bound when the command started (its
//     /proc/net/unix) except Policy.Sockets, under empty read-only
//     stand-ins: in the new root that is the sockets under the granted
//     roots;
//   - masks the secrets MaskedSystemSecrets and MaskedHomeSecrets list
//     under every root it shows;
//   - pins and read-only-binds the protected paths (every git control
//     file DefaultProtected lists);
//   - writes small per-namespace limits (SysV and POSIX IPC, inotify
//     and fanotify, nested namespaces: the namespace_limits layer);
//   - brings lo up and sets rlimits (the report says what bounds
//     processes: RLIMIT_NPROC in the jail's user namespace, or, for uid
//     0, which the kernel exempts from it, the pid namespace's pid_max);
//   - clears every capability set, locks the securebits, sets
//     no-new-privs;
//   - applies Landlock: read on the system and readable roots,
//     everything on the writable roots, each rule's path opened without
//     following any link; TCP denied with the network off; abstract unix
//     sockets and signals scoped;
//   - installs a seccomp filter refusing ptrace, process_vm_*, io_uring,
//     the mount API, bpf, keyrings, namespaces, module and kexec loading,
//     x32, the terminal-injection ioctls (TIOCSTI, TIOCLINUX, TIOCSETD,
//     TIOCCONS, TIOCSCTTY), setuid or setgid bits on the chmod family and
//     on creation modes, and with the network off every non-unix socket,
//     all EPERM; clone3 and openat2 answer ENOSYS so callers fall back to
//     calls whose arguments the filter can read;
//   - refuses before exec when a layer Options.RequiredLayers or
//     CallSpec.RequiredLayers names was not applied (DenialLayerRequired,
//     wrapping a *MissingLayer that names it; a layer the probe already
//     found missing is refused by Clear before any helper starts);
//   - marks every descriptor but 0, 1, 2 and (with CallSpec.ExtraFile)
//     ExtraFileFD close-on-exec, so the command inherits nothing else;
//   - reports on fd 4 (which closes at exec) and execs the command.
//
// # The empty root
//
// With CallSpec.EmptyRoot the mount steps above are replaced: the jail's
// root is a fresh tmpfs holding only the command's executable (a
// read-only bind at EmptyRootProgram), a read-only /dev of the same
// device nodes and, with EmptyRoot.Proc, a fresh /proc; no system,
// readable or writable root, no /tmp, no socket, the network off; then
// pivot_root and the old root detached (the empty_root layer, reported
// in place of policy_root). Landlock reads only the program, /dev and
// /proc. Nothing falls back to a view of the host: a step that fails
// refuses the run, and an empty root requires the namespaces and
// empty_root layers. A static Go program starts with and without /proc.
//
// # The extra descriptor
//
// CallSpec.ExtraFile reaches the command at ExtraFileFD (5), open
// across exec: a helper started for the command inherits it there; a
// warm helper holds, from its birth, the helper's end of a handoff
// socket at that number (so nothing its runtime opens can take it) and
// receives the file over it (SCM_RIGHTS), which then replaces the
// socket. Without an ExtraFile nothing is open there in the command.
//
// Without a user namespace, Landlock refuses protected paths by splitting
// the writable roots around them, and the mounts and policy_root layers
// are reported skipped: nothing is read-only by mount, hidden or masked,
// and the whole host view is the command's. Every layer
// is probed directly once per Broker; a missing one is reported skipped
// with the kernel's errno (and, for user namespaces, the kernel setting
// that refuses them and what an operator can do), and Enforcement.Degraded
// is set. Outside Linux nothing confines a command and Clear refuses
// unless Options.AllowUnconfined.
//
// # What a command leaves behind
//
// A protected path that did not exist when the command started cannot be
// bound read-only; if the command creates it, the broker moves it aside
// once the command's tree is gone (Settled.ProtectedCreated). The git
// guard keeps every other git configuration a command writes in its
// writable roots from running a program in the host's later git, and
// GuardToolWrite does the same for a file a tool wrote on a model's
// behalf. Pointers (.git files and links, commondir) are read and resolved
// exactly as git reads them; one that cannot be followed with certainty,
// or that aims outside its root, is moved aside. Where the guard cannot
// act, the workspace is fenced (DenialWorkspaceFenced) until
// Broker.Unfence succeeds. SafeGitEnvFor (or SafeGitEnv) is the
// environment a host runs its own git with on a workspace an agent
// touched.
//
// # Bounds
//
// One command's output is bounded (CallSpec.MaxOutputBytes, at most
// Options.MaxOutputBytes, DefaultMaxOutputBytes by default): at the bound
// the broker stops its tree and the execution settles with
// OutputLimited. Across commands, a Broker runs at most
// Options.MaxLiveCommands at once (foreground commands, background jobs
// and warm helpers alike) and reserves each jail's in-memory scratch
// against Options.ScratchBudgetBytes; a command over either bound waits,
// in arrival order, within its own deadline and at most MaxHostBusyWait,
// then is refused with DenialHostBusy. With Options.CgroupParent, each
// helper is born in a child cgroup of it whose memory.max and pids.max
// come from the policy's Limits, killed and removed at settlement; the
// host's own process is never moved.
//
// # Warm helpers
//
// Starting a helper (the clone into fresh namespaces and the Go runtime's
// start-up) is most of a jail's fixed cost. Once a command settles (or
// has run for 100 ms) the broker fills a pool of Options.WarmHelpers
// helpers (DefaultWarmHelpers, at most MaxWarmHelpers) with the
// namespace flavour that command used, starting them one after another;
// while commands keep taking helpers back to back and one is left, it
// waits for a short lull first, so a helper's start does not compete
// with them. Each waits blocked on its configuration for at most
// Options.WarmHelperIdle; the next commands of that flavour, cleared one
// after another or together, are each handed one, so their latency is
// configuration, confinement and exec only; one with an ExtraFile too
// (see The extra descriptor). Before its configuration
// comes, a helper does only what no policy decides: it builds its JSON
// codecs' caches, makes the stand-ins its masks will be clones of (a
// small read-only tmpfs holding one empty file and one empty directory,
// detached, so nothing sees or writes it) and, in a network namespace of
// its own, brings lo up. A warm helper with namespaces also makes the
// skeleton of its policy root, detached from every mount table: the root
// tmpfs with the host root's top-level links and the mount points of
// /proc, /dev and /tmp, a fresh /proc with its kernel files masked and
// its kernel knobs read-only, the jail's /dev, and (through that /proc)
// every per-namespace limit but the count of mount namespaces, which the
// masks still need, and the pid namespace's pid_max, which the policy
// sets (both are written later through descriptors it opened before
// /proc/sys went read-only); it tells the
// broker once it has, and only then is it ready. When its command comes
// it checks that the host's top-level links and device nodes are still
// those the skeleton was made from (else it builds the root afresh) and
// builds everything a policy decides — the roots, opened then, the
// scratch, the hidden socket directories, the secrets found then, the
// host's sockets, the protected paths — exactly as a helper started for
// the command does, reporting the same layers.
//
// A warm helper with namespaces may, once ready, be primed with the
// policy of the last command of its flavour that had a policy root (not
// an empty root), writable roots and the git guard on: it builds that
// policy's whole mount table and applies its namespace limits, loopback,
// rlimits, capabilities, no-new-privs, Landlock and seccomp exactly as
// above, and waits for a command. Those cannot be undone, so a command
// with any other policy (the roots, protected paths, limits, required
// layers, working directory — everything but its argv, environment,
// stdin and extra file) is never handed it: a helper primed for a policy
// the pool no longer primes for is retired when a command of its flavour
// comes, and once a command found only helpers primed for another policy,
// the pool keeps one helper of the flavour unprimed. A primed helper is
// handed a command with its policy only when, at the handover: every host
// socket the command's start lists was masked by the priming; the git
// guard's watch of every writable root stood and noted no change since
// before priming; the identity (device, inode, type, link target) or
// absence of every host path priming depended on — every root, the
// working directory, every protected path, every secret it masks for the
// command's HOME, the kernel files it masks, the resolver file, the
// socket directories and the host root's top-level links — is what it
// was before priming, and every mount priming made is still in the
// helper's table (removing a path detaches the mask on it, even when the
// path comes back with its inode number) — neither looked at again when
// an inotify watch of those paths' directories (the masked sockets' and
// the secret globs' included) and of every ancestor, on local
// filesystems only, saw no entry made, removed or renamed since before
// priming looked, the command's HOME is the priming's and /etc/passwd
// has the same stamp; and no command with another policy that may write where
// those paths lie ran in the process since priming began (one could have
// changed a path and put the same inode back; a command with the same
// policy can change only the writable roots, which the git watches
// cover). Otherwise the helper is
// retired and the command gets one holding no policy, or one started for
// it. The primed helper reports the layers it applied, as any other.
// Changes made by other processes of the host between priming and the
// handover that leave every identity above as it was (a file's content,
// which the jail shows live anyway) are not looked for, nor are mounts
// the host makes meanwhile (no warm helper's mount table shows those).
//
// Warm helpers count against Options.MaxLiveCommands: one is started only
// while no command waits and another slot stays free for the next
// command, and when a command starts waiting every warm helper is
// discarded so the command gets the slot. A
// command of the other flavour makes room in a full pool for one helper
// of its own flavour at a time. A command whose Stdin is an *os.File, one
// of a flavour the pool lacks, or one that finds its helper gone, stale
// or started under another host identity gets a helper started for it.
// Close discards every warm helper; a helper that no configuration
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
// starting the helper as a child of the host's rather than its own
// (CLONE_PARENT), reports the helper's pid (which the broker confirms is
// its own child, and then signals only through a pidfd) and exits. The
// broker reaps the helper itself, so a command's end reaches it without
// a launcher in between.
package broker
