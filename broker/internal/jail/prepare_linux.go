package jail

import (
	"encoding/json"
	"os"
	"slices"

	"github.com/agentloom/loom/sandbox"
	"golang.org/x/sys/unix"
)

// helperPrepared is what prepareHelper did before the configuration
// came: whether it brought lo up (loopbackDone) and how that went, and
// the masker whose stand-ins it made (none when the helper has no user
// namespace to make them in; maskAll makes them then, or says why not).
var helperPrepared struct {
	loopbackDone bool
	loopbackErr  error
	masker       masker
	// skeleton is the policy root's skeleton (with helperStageArg), or
	// nil; skeletonErr says why there is none when one was asked for.
	skeleton    *skeleton
	skeletonErr error
	// limits are the namespace ceilings the skeleton's /proc was used to
	// set ahead, file to value (see prepareNamespaceLimits).
	limits map[string]string
}

// prepareHelper does, before a helper reads its configuration, the work
// that no command's policy decides, so a warm helper spends it while it
// waits instead of in its command's latency:
//   - unless its configuration is waiting already (a helper started for
//     its command), it warms the JSON codecs (warmCodecs);
//   - in a network namespace of its own (helperNetArg), it brings lo up,
//     which every command of that flavour gets: its network is off, and
//     the namespace holds nothing but lo;
//   - it makes the masks' stand-ins (masker.standins: a small read-only
//     tmpfs holding one empty file and one empty directory, detached, so
//     nothing can see or write it), which every mask of every command is
//     a clone of; a helper serves one command, so no two commands share
//     them;
//   - started ahead with namespaces (helperStageArg), it makes its
//     policy root's skeleton (see skeleton), which is detached until its
//     command's root is built from it, and says so on the report fd.
//
// Nothing here depends on a policy, and no layer is reported from here:
// runHelper reports what it did (helperLoopbackUp, and through
// setNamespaceLimits and buildPolicyRoot what the skeleton did) when the
// configuration asks for it. Of the host's files, only the skeleton reads
// any: the top-level links and device nodes, which buildPolicyRoot checks
// again when the command comes.
func prepareHelper() {
	if !configWaiting() {
		warmCodecs()
		helperPhases.Mark("p.codecs")
	}
	if slices.Contains(os.Args[1:], helperNetArg) {
		helperPrepared.loopbackErr = loopbackUp()
		helperPrepared.loopbackDone = true
		helperPhases.Mark("p.loopback")
	}
	// An error leaves the masker empty: maskAll tries again and reports it.
	helperPrepared.masker.standins()
	if slices.Contains(os.Args[1:], helperStageArg) {
		helperPrepared.skeleton, helperPrepared.skeletonErr = prepareSkeleton(&helperPrepared.masker)
		if helperPrepared.skeleton != nil {
			helperPhases.Mark(SkeletonMadeMark)
		}
	}
}

// warmCodecs runs the JSON decoder over a configuration with every field
// set and the encoder over a report, so the codecs' per-type caches are
// built before the configuration comes.
func warmCodecs() {
	one := []string{"/"}
	sample, _ := json.Marshal(Config{Argv: one, Env: one, SystemRoots: one, ReadableRoots: one,
		WritableRoots: one, Protected: one, Sockets: one, MaskSockets: one, Required: one})
	var cfg Config
	json.Unmarshal(sample, &cfg)
	json.Marshal(Report{Layers: []sandbox.Layer{{Name: sandbox.LayerMounts, Applied: true}}})
}

// configWaiting reports whether the configuration fd is readable now: a
// helper started for its command finds it so (the broker writes it as
// soon as the helper exists), and warming the codecs ahead would only
// add to the command's latency (the first decode builds what the decoder
// needs, and the configuration's encoder is never used).
func configWaiting() bool { return readableNow(helperConfigFd) }

// readableNow reports whether fd is readable (data, or the other end
// closed) without waiting.
func readableNow(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// helperLoopbackUp brings lo up in the jail's network namespace, or says
// how prepareHelper's doing so went.
func helperLoopbackUp() error {
	if helperPrepared.loopbackDone {
		return helperPrepared.loopbackErr
	}
	return loopbackUp()
}
