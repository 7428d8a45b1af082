package broker

import (
	"sync"
)

// Options configure a Broker.
type Options struct {
	// Ledger pools budgets per {operation, step}; nil gives the broker a
	// private ledger. Share one Ledger between brokers (and with the
	// host's abort paths) to pool across them.
	Ledger *Ledger
	// AllowUnconfined accepts running commands with no confinement layer
	// at all when the host offers none (and always on platforms without
	// a jail). Without it such a Clear is refused with
	// DenialUnconfinedRefused. A partially confined run is never refused;
	// its Enforcement says Degraded.
	AllowUnconfined bool
	// HelperPath is the executable re-run as the jail helper; it must be
	// a program that imports this package (or calls HelperMain). Empty
	// means /proc/self/exe, the running program itself.
	HelperPath string
}

// Broker clears commands: it checks a call's policy and budget, then runs
// the command inside the jail. A Broker is safe for concurrent use; it
// holds no state about commands beyond the ledger.
type Broker struct {
	opts   Options
	ledger *Ledger

	probeOnce sync.Once
	probe     probeResult
}

// New returns a Broker. It does not touch the kernel until the first
// Clear (or Available), which probes each confinement layer once.
func New(opts Options) *Broker {
	l := opts.Ledger
	if l == nil {
		l = NewLedger(nil)
	}
	if opts.HelperPath == "" {
		opts.HelperPath = selfExe
	}
	return &Broker{opts: opts, ledger: l}
}

// Ledger returns the ledger the broker admits clearances into.
func (b *Broker) Ledger() *Ledger { return b.ledger }

// Available reports which layers this host offers, as probed: each is
// applied (available) or skipped with the kernel's reason. It is what a
// command's Enforcement will say before per-command failures.
func (b *Broker) Available() Enforcement {
	return availability(b.probed())
}

func (b *Broker) probed() probeResult {
	b.probeOnce.Do(func() { b.probe = probeLayers(b.opts.HelperPath) })
	return b.probe
}
