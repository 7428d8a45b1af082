package jail

import "github.com/agentloom/loom/sandbox"

// MissingRequired returns the first layer of required that layers (plus
// the namespaces layer, applied when namespaces) does not hold applied,
// with the reason it was skipped, or nil when every one was applied.
func MissingRequired(required []string, namespaces bool, layers []sandbox.Layer) *sandbox.MissingLayer {
	for _, name := range required {
		if name == sandbox.LayerNamespaces && namespaces {
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
			return &sandbox.MissingLayer{Layer: name, Reason: reason}
		}
	}
	return nil
}
