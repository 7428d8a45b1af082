package broker

import (
	"path/filepath"

	"github.com/agentloom/loom/broker/internal/jail"
)

// EmptyRootProgram is where an empty-root command's executable appears
// inside its jail, and what the helper execs: a read-only, nosuid,
// nodev bind of EmptyRoot.Program on a file of the jail's tmpfs root.
const EmptyRootProgram = jail.EmptyRootProgram

// EmptyRoot asks for a jail in which the command sees nothing of the
// host but its own executable: no system, readable or writable root, no
// socket, no /tmp, no writable path at all. Its root is a fresh tmpfs
// (read-only once built) holding EmptyRootProgram, a /dev of only null,
// zero, full, random and urandom (read-only; its fd, stdin, stdout and
// stderr links name /proc, so they resolve only with Proc), and /proc
// when Proc is set; the network is off. Landlock, where the kernel
// offers it, allows reading and executing EmptyRootProgram, reading
// /dev (and /proc with Proc) and writing only /dev/null, /dev/zero and
// /dev/full. The pid namespace's pid_max and the per-namespace limits
// are set through a /proc that, without Proc, is unmounted before the
// command runs.
//
// An empty-root run requires the namespaces and empty_root layers: Clear
// refuses it with DenialLayerRequired where user namespaces are not
// available, and the helper refuses it when any step of the empty root
// fails; it never falls back to a view of the host. The command's
// environment is built as always (CallSpec.Env filtered by
// Policy.EnvAllow) and its working directory is /.
//
// Program is the absolute, clean host path of the executable (a static
// one: no interpreter, loader or library is there for it). It is opened
// without following any link; a link, a missing path or a non-regular
// file makes the helper refuse the run. Proc mounts a fresh /proc of the
// jail's pid namespace (its kernel knobs read-only and kernel-wide files
// masked, as in every jail); without it there is no /proc at all.
type EmptyRoot = jail.EmptyRoot

// checkEmptyRoot refuses an empty-root spec that asks for anything the
// empty root cannot hold: a roots-bearing policy, the network, a working
// directory other than /, or a program path that is not absolute and
// clean. It returns nil when spec has no EmptyRoot.
func checkEmptyRoot(spec CallSpec) *Denial {
	e := spec.EmptyRoot
	if e == nil {
		return nil
	}
	bad := func(why string) *Denial {
		return NewDenial(DenialInvalidPolicy, "empty root: "+why, nil)
	}
	p := spec.Policy
	switch {
	case e.Program == "" || !filepath.IsAbs(e.Program) || filepath.Clean(e.Program) != e.Program:
		return bad("Program must be an absolute, clean path")
	case len(p.SystemRoots)+len(p.ReadableRoots)+len(p.WritableRoots)+len(p.Protected)+len(p.Sockets) > 0:
		return bad("the policy may list no roots, protected paths or sockets")
	case p.Network == NetworkFull:
		return bad("the network must be off")
	case spec.Dir != "" && spec.Dir != "/":
		return bad("the working directory is /")
	}
	return nil
}
