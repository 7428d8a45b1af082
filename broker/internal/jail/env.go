package jail

import "time"

// EnvName is the name of the variable that marks a helper's own
// environment (never a command's: the broker drops it from every
// command's environment).
const EnvName = "LOOM_JAIL_HELPER"

// helperEnv is the marker itself: EnvName with this wire's version.
const helperEnv = EnvName + "=v1"

// MaxWarmIdle is the longest a broker keeps a helper started ahead
// waiting for its command (broker.MaxWarmHelperIdle).
const MaxWarmIdle = 5 * time.Minute

// helperIdleTimeout is how long a helper waits for its configuration
// before exiting by itself: a backstop for a host that stopped retiring
// it (frozen, say). It outlasts every idle allowance, so the broker
// never hands a command to a helper about to leave.
const helperIdleTimeout = MaxWarmIdle + time.Minute

// ProcessEnv returns the helper's own environment (never the command's):
// the marker, and GOMAXPROCS=2. A helper runs one thread of work and then
// execs, but that thread spends its time in system calls (mounts), and
// with a single P the runtime hands the P away during each long one and
// the thread waits to get it back; a second, idle P spares it that
// (measured: a cold command 5-20% faster, at the same CPU time). Setting
// it at all spares the runtime its start-up sizing.
func ProcessEnv() []string { return []string{helperEnv, "GOMAXPROCS=2"} }
