package broker

import (
	"sync"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/internal/gitguard"
	"github.com/agentloom/loom/sandbox"
)

// Bounds on warm helpers.
const (
	// defaultWarmHelperIdle is how long a helper started ahead of the next
	// command waits for one before the broker retires it, when
	// Options.WarmHelperIdle is zero.
	defaultWarmHelperIdle = 30 * time.Second
	// maxWarmHelperIdle caps Options.WarmHelperIdle. A helper nobody
	// configured leaves by itself a minute past it.
	maxWarmHelperIdle = jail.MaxWarmIdle
	// defaultWarmHelpers is how many helpers the broker keeps started
	// ahead of the next commands when Options.WarmHelpers is zero: enough
	// for a batch whose exclusive calls run one after another, or whose
	// concurrent calls are cleared at once, to find a helper ready for
	// each of its first four commands.
	defaultWarmHelpers = 4
	// MaxWarmHelpers caps Options.WarmHelpers. Every warm helper holds a
	// process and one of Options.MaxLiveCommands' slots, so the pool stays
	// a small share of defaultMaxLiveCommands.
	MaxWarmHelpers = 8
)

// Options configure a Broker.
type Options struct {
	// Ledger pools budgets per {operation, step}; nil gives the broker a
	// private ledger. Share one Ledger between brokers (and with the
	// host's abort paths) to pool across them.
	Ledger *sandbox.Ledger
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
	// WarmHelperIdle is how long the broker keeps a helper started ahead
	// of the next command (see WarmHelpers) before retiring it. A
	// helper's process start, its fresh namespaces and its runtime's
	// initialisation then happen after the previous command settled (or
	// once it has run a while), not in the next command's latency; a
	// warm helper holds no policy and has confined nothing until a
	// command is handed to it, and each helper serves exactly one
	// command. Zero means 30 s; values above
	// maxWarmHelperIdle are capped; a negative value turns prestarting
	// off, so every command starts its helper when it is cleared. Close
	// discards every warm helper.
	WarmHelperIdle time.Duration
	// WarmHelpers is how many helpers the broker keeps started ahead of
	// the next commands (the warm pool): commands cleared one right after
	// another, or together, each find one ready while the pool lasts, and
	// the broker starts replacements, one at a time, as commands settle
	// (or once they have run a while). Warm helpers count against
	// MaxLiveCommands but never take a slot a command needs: one is
	// started only while no command waits and another slot stays free
	// for the next command (so a broker bounded to one live command
	// prestarts none), and when a command starts waiting every warm
	// helper is discarded so its slot goes to the command. Zero means
	// 4; values above MaxWarmHelpers are capped; a
	// negative value keeps none, as a negative WarmHelperIdle does.
	WarmHelpers int
	// Audit, when set, sees every quarantine, neutralisation, fenced
	// workspace, degraded run and tool escalation (see AuditEvent). It is
	// called synchronously from the goroutine that did the work; keep it
	// quick. Nil means no audit.
	Audit func(sandbox.AuditEvent)
	// RequiredLayers names layers (LayerNamespaces, LayerLandlock, ...)
	// the host will not run a command without: a Clear whose report
	// skips one of them is refused with DenialLayerRequired instead of
	// running degraded. Empty means every available layer is applied and
	// a partial jail runs with Enforcement.Degraded set.
	RequiredLayers []string
	// MaxOutputBytes lowers every command's output bound
	// (CallSpec.MaxOutputBytes, 256 MiB when a call sets
	// none) to at most this many bytes of stdout and stderr together; a
	// host that spools output to disk sets what one command may write
	// there. Zero or less leaves each call's bound as it is.
	MaxOutputBytes int64
	// MaxLiveCommands bounds how many commands this Broker runs at once:
	// foreground commands, background jobs and the helpers prestarted for
	// the next commands all count (a warm helper never takes a slot a
	// command waits for, and is discarded to make room for one). A
	// command over the bound waits, first come first served, within its
	// own deadline (its context, Timeout, the policy's WallMs, the step's
	// wall budget; at most maxHostBusyWait) inside Clear, then is refused
	// with DenialHostBusy; its waiting counts against its Timeout. Zero
	// or less
	// means 32. The bound is per Broker: a host
	// running several shares one Broker to bound them together.
	MaxLiveCommands int
	// ScratchBudgetBytes bounds the in-memory scratch (the private /tmp
	// and /dev tmpfs, ScratchBytes plus a little for /dev) that the jails
	// of live commands may hold together. Each jail with a mount
	// namespace reserves its scratch's full size from the budget before
	// it starts, or waits like a command over MaxLiveCommands. Zero or
	// less means half the host's physical memory; any value is raised to
	// at least one
	// jail's scratch, so a command can always run on an idle host.
	ScratchBudgetBytes int64
	// CgroupParent is a cgroup v2 directory the host created and
	// delegated to Loom (writable by the host's uid, with the memory and
	// pids controllers enabled in its own parent's cgroup.subtree_control,
	// and no process of its own: cgroup v2 enables controllers only for
	// the children of a cgroup that holds none).
	// The broker enables those controllers for its children, makes one
	// child cgroup per helper (<CgroupParent>/loom-<pid>-<n>), starts the
	// helper inside it (CLONE_INTO_CGROUP: the host's own process is never
	// moved), writes memory.max and pids.max from the command's Limits
	// before the command is handed over, and kills and removes the child
	// once the command's tree is gone (so where the jail has no pid
	// namespace, processes that left the command's process group die with
	// it too). The Enforcement report carries a cgroup layer saying what
	// was bounded, skipped (and the run Degraded) when nothing could be.
	// To bound all jails together, the host sets memory.max and pids.max
	// on CgroupParent itself. Empty means no cgroup (Linux only; ignored
	// elsewhere).
	CgroupParent string
}

// Broker clears commands: it checks a call's policy and budget, then runs
// the command inside the jail. A Broker is safe for concurrent use; it
// holds no state about commands beyond the ledger.
type Broker struct {
	opts   Options
	ledger *sandbox.Ledger

	probeOnce sync.Once
	probe     probeResult

	pool warmPool        // the helpers started ahead of the next commands
	git  gitguard.Fences // the git guard (internal/gitguard)

	hostOnce sync.Once
	host     *hostBound // admission against the host-wide bounds

	cgOnce        sync.Once
	cg            *cgroupParent // the delegated cgroup, or nil
	cgErr         error         // why CgroupParent is unusable
	helperCgroups sync.Map      // *jailProcess -> *helperCgroup, until claimed

	// test holds switches only this package's tests set.
	test testHooks
}

// testHooks are switches only this package's tests set. The zero value is
// production behaviour. A field that turns a protection off exists for a
// control that shows what the protection stops.
type testHooks struct {
	// onSpawn is told the pid of every helper process the broker starts
	// (a launched one's own, once its launcher named it), and whether it
	// was started ahead.
	onSpawn func(pid int, warm bool)
	// policyRootOff keeps every jail in the host view (the policy_root
	// layer skipped).
	policyRootOff bool
	// launchAboveRSS overrides largeHostRSS: negative means always start
	// helpers through a launcher.
	launchAboveRSS int64
	// tracePhases makes every Execution keep its phase marks (see
	// jail.PhaseMark), for BenchmarkWarmPhases; phases holds them
	// (*Execution → *jail.PhaseLog).
	tracePhases bool
	phases      sync.Map
	// noPrime keeps every warm helper unprimed; primeCheckOff hands a
	// primed helper its command without re-validating what its priming
	// read; primeTaintOff hands it over even when a command with another
	// policy ran since it was primed; primeMountsOff even when a mount of
	// its priming was detached since.
	noPrime, primeCheckOff, primeTaintOff, primeMountsOff bool
	// hostBusyWait overrides maxHostBusyWait.
	hostBusyWait time.Duration
	// socketsUnder, when set, narrows the host sockets every jail masks
	// (and every priming records) to those under it, so that sockets
	// other processes bind and close meanwhile do not change what a
	// primed helper may serve.
	socketsUnder string
}

// New returns a Broker. It does not touch the kernel until the first
// Clear (or Available), which probes each confinement layer once.
func New(opts Options) *Broker {
	l := opts.Ledger
	if l == nil {
		l = sandbox.NewLedger(nil)
	}
	if opts.HelperPath == "" {
		opts.HelperPath = selfExe
	}
	b := &Broker{opts: opts, ledger: l}
	b.git.Audit = func(e gitguard.Event) { b.Audit(gitAudit(e)) }
	return b
}

// Close discards every helper kept warm for the next commands, stops
// prestarting and the git guard's watches of idle roots, and returns once
// those helpers have exited; commands already cleared run on. The Broker
// stays usable after Close, starting each command's helper when it is
// cleared and sweeping a root whole when a command there settles. Close
// always returns nil.
func (b *Broker) Close() error {
	b.closeWarm()
	b.pool.work.wait()
	b.git.Close()
	return nil
}

// warmIdle is the effective Options.WarmHelperIdle; zero or less means
// no prestarting.
func (b *Broker) warmIdle() time.Duration {
	switch d := b.opts.WarmHelperIdle; {
	case d == 0:
		return defaultWarmHelperIdle
	case d < 0:
		return 0
	default:
		return min(d, maxWarmHelperIdle)
	}
}

// warmHelpers is the effective Options.WarmHelpers: how many helpers
// the pool keeps ready, 0 when prestarting is off.
func (b *Broker) warmHelpers() int {
	switch n := b.opts.WarmHelpers; {
	case b.warmIdle() <= 0 || n < 0:
		return 0
	case n == 0:
		return defaultWarmHelpers
	default:
		return min(n, MaxWarmHelpers)
	}
}

// Ledger returns the ledger the broker admits clearances into.
func (b *Broker) Ledger() *sandbox.Ledger { return b.ledger }

// Available reports which layers this host offers, as probed: each is
// applied (available) or skipped with the kernel's reason. It is what a
// command's Enforcement will say before per-command failures.
func (b *Broker) Available() sandbox.Enforcement {
	return availability(b.probed())
}

func (b *Broker) probed() probeResult {
	b.probeOnce.Do(func() { b.probe = probeLayers(b.opts.HelperPath, b.hostIsLarge()) })
	return b.probe
}

// tracePhases returns the log that keeps ex's phase marks when the test
// hook asks for them, and nil otherwise (marks on nil are dropped).
func (b *Broker) tracePhases(ex *sandbox.Execution) *jail.PhaseLog {
	if !b.test.tracePhases {
		return nil
	}
	l := &jail.PhaseLog{On: true}
	b.test.phases.Store(ex, l)
	return l
}

// phasesOf returns the phase marks traced for ex (none unless the test
// hook traced them).
func (b *Broker) phasesOf(ex *sandbox.Execution) []jail.PhaseMark {
	if l, ok := b.test.phases.Load(ex); ok {
		return l.(*jail.PhaseLog).Marks
	}
	return nil
}
