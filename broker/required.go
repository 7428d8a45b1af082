package broker

import (
	"github.com/agentloom/loom/internal/errno"
	"github.com/agentloom/loom/sandbox"

	"errors"
	"slices"
)

// errNoLandlockABI is the skip reason of a Landlock the probe found no
// ABI for without an errno.
var errNoLandlockABI = errors.New("no Landlock ABI")

// layerRequired is the refusal for a required layer that is missing.
func layerRequired(m *sandbox.MissingLayer) *sandbox.Denial {
	return sandbox.NewDenial(sandbox.DenialLayerRequired, m.Error(), m)
}

// requiredLayers is every layer spec will not run without: the host's
// Options.RequiredLayers, the call's own CallSpec.RequiredLayers and,
// for an empty-root run, the namespaces and empty_root layers; sorted,
// each once.
func (b *Broker) requiredLayers(spec sandbox.CallSpec) []string {
	req := slices.Concat(b.opts.RequiredLayers, spec.RequiredLayers)
	if spec.EmptyRoot != nil {
		req = append(req, sandbox.LayerNamespaces, sandbox.LayerEmptyRoot)
	}
	slices.Sort(req)
	return slices.Compact(req)
}

// unavailableLayer returns the first of required that the probe already
// says the kernel cannot apply (a layer built in the jail's namespaces
// where they cannot be made, Landlock without an ABI, seccomp without
// its errno action), or nil: such a call is refused before any helper
// starts. Layers the probe cannot speak for are checked by the helper
// once it has applied what it could.
func unavailableLayer(required []string, p probeResult) *sandbox.MissingLayer {
	for _, name := range required {
		var err error
		switch name {
		case sandbox.LayerNamespaces, sandbox.LayerMounts, sandbox.LayerPolicyRoot, sandbox.LayerEmptyRoot, sandbox.LayerLoopback, sandbox.LayerNamespaceLimits:
			err = p.usernsErr
		case sandbox.LayerLandlock:
			if p.landlockABI <= 0 {
				err = p.landlockErr
				if err == nil {
					err = errNoLandlockABI
				}
			}
		case sandbox.LayerSeccomp:
			err = p.seccompErr
		}
		if err != nil {
			reason := errno.Name(err)
			if name != sandbox.LayerNamespaces && p.usernsErr != nil && err == p.usernsErr {
				reason = "no user namespace (" + reason + ")"
			}
			return &sandbox.MissingLayer{Layer: name, Reason: reason}
		}
	}
	return nil
}
