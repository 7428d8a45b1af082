package broker

import "github.com/agentloom/loom/broker/internal/jail"

// probeLayers asks the kernel which layers exist: the Landlock ABI
// version, seccomp's errno action, and a trial clone of the helper at
// helperPath (in probe mode, which exits at once) into the jail's
// namespaces — through a launcher when viaLauncher, as a large host
// starts helpers.
func probeLayers(helperPath string, viaLauncher bool) probeResult {
	var p probeResult
	p.landlockABI, p.landlockErr = jail.LandlockABI()
	p.seccompErr = jail.SeccompAvailable()
	p.usernsErr = jail.ProbeNamespaces(helperPath, viaLauncher)
	return p
}
