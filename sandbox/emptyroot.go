package sandbox

// EmptyRootProgram is where an empty-root command's executable appears
// inside its jail, and what the helper execs: a read-only, nosuid,
// nodev bind of EmptyRoot.Program on a file of the jail's tmpfs root.
const EmptyRootProgram = "/program"

// EmptyRoot asks for a jail in which the command sees nothing of the
// host but its own executable (broker.EmptyRoot documents the whole
// contract): a fresh tmpfs root, read-only once built, holding
// EmptyRootProgram, a /dev of only null, zero, full, random and urandom,
// and /proc when Proc is set. The helper refuses the run when any step
// of it fails; it never falls back to a view of the host.
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
