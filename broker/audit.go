package broker

import "github.com/agentloom/loom/sandbox"

// Audit hands e to Options.Audit, when the host set one. It is safe for
// concurrent use and never blocks on the broker's own locks; a host hook
// that panics is recovered, so an audit sink cannot break a command.
func (b *Broker) Audit(e sandbox.AuditEvent) {
	if b == nil || b.opts.Audit == nil {
		return
	}
	defer func() { _ = recover() }()
	b.opts.Audit(e)
}
