package jail

import (
	"encoding/json"
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

// PrimeKey is the part of cfg a primed helper was confined for: all of
// it but the command (argv, environment), its stdin and extra file, the
// phase trace, the host sockets and Prime itself. Of those, the sockets
// and the HOME the environment names (which adds a home whose secrets are
// masked) decide what is confined too, and are checked apart
// (SocketsCovered, and HostPaths for the secrets of the command's HOME).
// A primed helper serves only a command whose PrimeKey is its priming's.
func PrimeKey(cfg Config) []byte {
	k := cfg
	k.Argv, k.Env, k.MaskSockets = nil, nil, nil
	k.Trace, k.NullStdin, k.StdinHandoff, k.Prime, k.Extra = false, false, false, false, ExtraNone
	b, _ := json.Marshal(k)
	return b
}

// SocketsCovered says whether every socket in want is in have: whether
// a helper that masked have masked every socket a command lists in
// want.
func SocketsCovered(want, have []string) bool {
	for _, s := range want {
		if !slices.Contains(have, s) {
			return false
		}
	}
	return true
}
