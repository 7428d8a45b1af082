package sandbox

// EmptyRootProgram is where an empty-root command's executable appears
// inside its jail, and what the helper execs: a read-only, nosuid,
// nodev bind of EmptyRoot.Program on a file of the jail's tmpfs root.
const EmptyRootProgram = "/program"

// EmptyRoot asks for a jail in which the command sees nothing of the
// host but its own executable: no system, readable or writable root, no
// socket, no /tmp, no writable path at all. Its root is a fresh tmpfs
// (read-only once built) holding EmptyRootProgram, a /dev of only null,
// zero, full, random and urandom (read-only), and /proc when Proc is set;
// the network is off. Landlock, where the kernel offers it, allows
// reading and executing EmptyRootProgram, reading /dev (and /proc with
// Proc) and writing only /dev/null, /dev/zero and /dev/full.
//
// An empty-root run requires the namespaces and empty_root layers: a jail
// refuses it (DenialLayerRequired) where user namespaces are missing, and
// when any step of the empty root fails; it never falls back to a view of
// the host. The policy must list no roots and keep the network off; the
// working directory is /.
type EmptyRoot struct {
	// Program is the absolute, clean host path of the executable (a
	// static one: no interpreter, loader or library is there for it). It
	// is opened without following any link; a link, a missing path or a
	// non-regular file makes the helper refuse the run.
	Program string `json:"program"`
	// Proc mounts a fresh /proc of the jail's pid namespace (its kernel
	// knobs read-only and kernel-wide files masked, as in every jail).
	// Without it there is no /proc at all.
	Proc bool `json:"proc,omitempty"`
}
