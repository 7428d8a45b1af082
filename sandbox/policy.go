package sandbox

import (
	"os"
)

// Network says what a jailed command may reach over the network.
type Network string

const (
	// NetworkOff gives the command a fresh network namespace holding only
	// a loopback interface of its own; non-unix sockets are refused where
	// the kernel allows it. It is the zero policy's network.
	NetworkOff Network = "off"
	// NetworkFull leaves the command in the host's network namespace.
	NetworkFull Network = "full"
)

// Policy is what one jailed command may touch. Every path is absolute and
// clean (Validate refuses anything else). A writable root is readable too.
// Protected entries stay read-only (jail) and unreadable and unwritable
// (harness-side file tools) even under a writable or readable root, and no
// Grant ever changes them.
type Policy struct {
	// SystemRoots are read-only roots a jailed command needs to run
	// programs (binaries, libraries, configuration; see
	// SystemReadableRoots). They reach the jail only: harness-side tools
	// (fs_read, grep's in-host engine) never read through them.
	SystemRoots []string `json:"system_roots,omitempty"`
	// ReadableRoots are roots a host lists on purpose: the jail and the
	// harness-side tools may read them.
	ReadableRoots []string `json:"readable_roots,omitempty"`
	WritableRoots []string `json:"writable_roots,omitempty"`
	Protected     []string `json:"protected,omitempty"`
	Network       Network  `json:"network,omitempty"`
	// EnvAllow names the environment variables a command may receive;
	// anything else is dropped even if a caller supplies it.
	EnvAllow []string `json:"env_allow,omitempty"`
	// WallMs bounds a command's wall-clock time in milliseconds; 0 means
	// the caller's own deadline alone bounds it.
	WallMs int    `json:"wall_ms,omitempty"`
	Limits Limits `json:"limits,omitempty"`
	// Sockets are host pathname sockets the jail may reach (a socket the
	// host means to share, or a directory of them); no other host
	// pathname socket is reachable. Compose carries a required socket
	// only when the base lists it: no Grant shares a socket.
	Sockets []string `json:"sockets,omitempty"`
	// Unguarded are roots the git guard leaves alone: stores beneath a
	// writable root that the host never runs git or any program in, such
	// as toolchain caches (sweeping one would walk every directory of a
	// module cache, and a plant there could fence every later session).
	// Compose carries them from the base only, never from requirements or
	// grants.
	Unguarded []string `json:"unguarded,omitempty"`
}

// GrantKind names one of the closed set of widenings an operator may approve.
type GrantKind string

const (
	// GrantReadableRoot adds Path to the readable roots.
	GrantReadableRoot GrantKind = "readable_root"
	// GrantWritableRoot adds Path to the writable (and readable) roots.
	GrantWritableRoot GrantKind = "writable_root"
	// GrantNetwork raises the network to NetworkFull.
	GrantNetwork GrantKind = "network"
	// GrantWall lifts the wall limit (WallMs becomes 0: the caller's
	// deadline alone bounds the command).
	GrantWall GrantKind = "wall"
)

// Grant is one approved widening of a policy. Only Path is meaningful for
// the root kinds; the other kinds carry no argument. No Grant can touch
// Policy.Protected.
type Grant struct {
	Kind GrantKind `json:"kind"`
	Path string    `json:"path,omitempty"`
}

// systemRootCandidates are the directories a shell and ordinary
// toolchains read outside the workspace: binaries, shared libraries,
// configuration (resolv.conf, passwd, ld.so.cache, certificates) and
// vendor installs. /proc, /dev and /tmp are not here: the jail mounts its
// own.
var systemRootCandidates = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc", "/opt", "/nix/store",
}

// SystemReadableRoots returns the system directories a shell needs
// readable (/usr, /bin, /sbin, /lib, /lib32, /lib64, /libx32, /etc, /opt,
// /nix/store), filtered to those that exist on this host, in that order.
// Tools put them in their requirements' SystemRoots, and a base policy
// that should let shells run lists them in its own SystemRoots, never in
// ReadableRoots: that keeps them jail-only, so harness-side tools (fs_read,
// grep's in-host engine) do not read /etc.
func SystemReadableRoots() []string {
	var out []string
	for _, p := range systemRootCandidates {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
