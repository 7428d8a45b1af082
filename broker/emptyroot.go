package broker

import (
	"path/filepath"

	"github.com/agentloom/loom/sandbox"
)

// checkEmptyRoot refuses an empty-root spec that asks for anything the
// empty root cannot hold: a roots-bearing policy, the network, a working
// directory other than /, or a program path that is not absolute and
// clean. It returns nil when spec has no EmptyRoot.
func checkEmptyRoot(spec sandbox.CallSpec) *sandbox.Denial {
	e := spec.EmptyRoot
	if e == nil {
		return nil
	}
	bad := func(why string) *sandbox.Denial {
		return sandbox.NewDenial(sandbox.DenialInvalidPolicy, "empty root: "+why, nil)
	}
	p := spec.Policy
	switch {
	case e.Program == "" || !filepath.IsAbs(e.Program) || filepath.Clean(e.Program) != e.Program:
		return bad("Program must be an absolute, clean path")
	case len(p.SystemRoots)+len(p.ReadableRoots)+len(p.WritableRoots)+len(p.Protected)+len(p.Sockets) > 0:
		return bad("the policy may list no roots, protected paths or sockets")
	case p.Network == sandbox.NetworkFull:
		return bad("the network must be off")
	case spec.Dir != "" && spec.Dir != "/":
		return bad("the working directory is /")
	}
	return nil
}
