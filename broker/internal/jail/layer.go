package jail

// Names of the layers a helper applies or skips, as its report carries
// them (broker.Enforcement re-exports each under the same name).
const (
	LayerNamespaces   = "namespaces"   // user, mount, network, pid and ipc namespaces
	LayerMounts       = "mounts"       // private root, read-only protected binds, fresh /proc
	LayerPolicyRoot   = "policy_root"  // the jail's root holds the policy's roots only (pivot_root)
	LayerLoopback     = "loopback"     // lo up inside a private network namespace
	LayerCapabilities = "capabilities" // bounding, ambient, effective, permitted, inheritable all cleared
	LayerNoNewPrivs   = "no_new_privs" // PR_SET_NO_NEW_PRIVS
	LayerLandlock     = "landlock"     // filesystem, TCP and scope rules
	LayerSeccomp      = "seccomp"      // syscall filter returning EPERM
	LayerRlimits      = "rlimits"      // processes, memory, file size, open files, CPU, message queues, no core dumps
	// LayerNamespaceLimits: the per-namespace kernel ceilings written into
	// the jail's own IPC and user namespaces before /proc/sys goes
	// read-only (broker.LayerNamespaceLimits says what each bounds);
	// applied only when every limit the kernel offers was written, its
	// Params the values set, its Reason every one refused and why.
	LayerNamespaceLimits = "namespace_limits"
	// LayerEmptyRoot: an empty-root run's root is a fresh tmpfs holding
	// only the command's executable, a minimal /dev and, when asked for, a
	// fresh /proc (pivot_root, the old root detached); applied only once
	// the pivot succeeded.
	LayerEmptyRoot = "empty_root"
)

// Layer is one confinement mechanism and what became of it. Applied is
// true only when the kernel accepted it; otherwise Reason says why it was
// skipped (an errno name or a short sentence).
type Layer struct {
	Name    string `json:"name"`
	Applied bool   `json:"applied"`
	// Detail is a short qualifier the compact line shows in parentheses,
	// e.g. "abi 6" for Landlock.
	Detail string `json:"detail,omitempty"`
	// Params are the layer's parameters for the full report (which
	// namespaces, how many protected paths); the compact line omits them.
	Params string `json:"params,omitempty"`
	// Reason says why a layer was skipped; empty when applied.
	Reason string `json:"reason,omitempty"`
}

// MissingLayer is the cause a DenialLayerRequired wraps (found with
// errors.As): the first required layer that was not applied, and why.
// Layer is one of the Layer* names; Reason is the kernel's errno name or
// a short sentence, never a claim that the layer holds.
type MissingLayer struct {
	Layer  string `json:"layer"`
	Reason string `json:"reason"`
}

// Error renders "required layer <layer> not applied: <reason>".
func (m *MissingLayer) Error() string {
	return "required layer " + m.Layer + " not applied: " + m.Reason
}

// MissingRequired returns the first layer of required that layers (plus
// the namespaces layer, applied when namespaces) does not hold applied,
// with the reason it was skipped, or nil when every one was applied.
func MissingRequired(required []string, namespaces bool, layers []Layer) *MissingLayer {
	for _, name := range required {
		if name == LayerNamespaces && namespaces {
			continue
		}
		reason := "not applied"
		ok := false
		for _, l := range layers {
			if l.Name == name {
				ok = l.Applied
				if l.Reason != "" {
					reason = l.Reason
				}
			}
		}
		if !ok {
			return &MissingLayer{Layer: name, Reason: reason}
		}
	}
	return nil
}
