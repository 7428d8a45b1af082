package jail

import (
	"path/filepath"
	"slices"
)

// PrimedCommandMark is the phase mark a primed helper takes once its
// command's configuration came: a command a primed helper served has it
// in its trace (Config.Trace).
const PrimedCommandMark = "command"

// HostPaths lists every host path a helper confined for cfg's policy
// depends on, in a stable order, for the broker to compare before and
// after priming: the roots, the working directory, the protected paths,
// the secrets it would mask (the homes /etc/passwd names, cfg.Home, the
// system secrets' globs as they match now), the kernel files it masks,
// the resolver file, the host socket directories, the shared sockets,
// and where the resolver file and each socket directory resolve now (or
// the path with "\x00unresolved" appended when it does not resolve).
// A path listed may not exist. The host root's top-level links, which
// the policy root also depends on, are TopLevelLinks.
func HostPaths(cfg Config) []string {
	visible := slices.Concat(cfg.SystemRoots, cfg.ReadableRoots, cfg.WritableRoots)
	if cfg.LandlockABI <= 0 {
		visible = []string{"/"}
	}
	paths := slices.Concat(cfg.SystemRoots, cfg.ReadableRoots, cfg.WritableRoots, []string{cfg.Dir, "/etc/resolv.conf"},
		cfg.Protected, hostSocketDirs, cfg.Sockets,
		secretTargets(visible, hostHomes(cfg.Home()), globPaths), sysMaskTargets(visible))
	for _, d := range append([]string{"/etc/resolv.conf"}, hostSocketDirs...) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			paths = append(paths, r)
		} else {
			paths = append(paths, d+"\x00unresolved")
		}
	}
	return paths
}
