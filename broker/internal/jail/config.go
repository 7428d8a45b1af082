package jail

import (
	"strings"

	"github.com/agentloom/loom/sandbox"
)

// Config is everything a helper needs to confine and exec one command:
// what the broker writes to it, as one line of JSON on its
// configuration descriptor (3). Its JSON form is the wire between the
// broker and the helper, which is the same program; a field added here is
// read by every helper the broker starts.
type Config struct {
	Argv          []string       `json:"argv"`
	Env           []string       `json:"env"`
	Dir           string         `json:"dir"`
	Namespaces    bool           `json:"namespaces"` // the helper was cloned into new namespaces
	NetworkOff    bool           `json:"network_off"`
	SystemRoots   []string       `json:"system_roots,omitempty"`
	ReadableRoots []string       `json:"readable_roots"`
	WritableRoots []string       `json:"writable_roots"`
	Protected     []string       `json:"protected"`
	LandlockABI   int            `json:"landlock_abi"` // 0: skip Landlock
	LandlockSkip  string         `json:"landlock_skip,omitempty"`
	Seccomp       bool           `json:"seccomp"`
	SeccompSkip   string         `json:"seccomp_skip,omitempty"`
	Limits        sandbox.Limits `json:"limits"`
	// NullStdin: the command reads /dev/null, not the stdin pipe.
	NullStdin bool `json:"null_stdin,omitempty"`
	// StdinHandoff: the command's stdin is a file of the broker's that
	// arrives over the handoff socket at ExtraFileFD (before any extra
	// file) and replaces fd 0, as a helper started for the command
	// inherits it there.
	StdinHandoff bool `json:"stdin_handoff,omitempty"`
	// Sockets are host sockets the policy shares: bound back where a
	// hidden directory covers them, never masked.
	Sockets []string `json:"sockets,omitempty"`
	// MaskSockets are host pathname sockets under the jail's roots (from
	// the broker's /proc/self/net/unix) to hide.
	MaskSockets []string `json:"mask_sockets,omitempty"`
	// TestHookPolicyRootOff is a test hook: it keeps the host view
	// instead of the policy's root, set only by tests whose control shows
	// what the policy_root layer stops (the broker's test.policyRootOff).
	TestHookPolicyRootOff bool `json:"test_hook_policy_root_off,omitempty"`
	// Required are the layers the host will not run without
	// (broker.Options.RequiredLayers and the call's own): when one is not
	// applied the helper refuses before exec.
	Required []string `json:"required,omitempty"`
	// HostViewByRemount makes the host view read-only one mount at a
	// time, as on kernels without mount_setattr (set only by the
	// benchmark comparing the two).
	HostViewByRemount bool `json:"host_view_by_remount,omitempty"`
	// Extra says what the helper holds at ExtraFileFD: nothing for the
	// command (ExtraNone), the command's file itself (ExtraInherited), or
	// the handoff socket the file arrives on (ExtraHandoff).
	Extra Extra `json:"extra,omitempty"`
	// EmptyRoot, when set, builds the empty root instead of the policy's
	// (see EmptyRoot); the command is EmptyRootProgram.
	EmptyRoot *sandbox.EmptyRoot `json:"empty_root,omitempty"`
	// Trace asks for the helper's phase marks in its last report (set only
	// by BenchmarkWarmPhases).
	Trace bool `json:"trace,omitempty"`
	// Prime: this configuration carries a policy and no command; the
	// helper confines itself for it (see confine), says Primed, and then
	// reads the command's configuration, which must carry the same policy
	// (PrimeKey).
	Prime bool `json:"prime,omitempty"`
}

// Report is one message from a helper (or its launcher), one line of
// JSON on its report descriptor (4), which the broker reads to its end:
// the layers it applied, then (only if it never exec'd) what went wrong.
type Report struct {
	Layers []sandbox.Layer `json:"layers,omitempty"`
	// Fatal: confinement could not be completed; the command never ran.
	Fatal string `json:"fatal,omitempty"`
	// Exec: confinement was complete but the command could not start.
	Exec string `json:"exec,omitempty"`
	// Refused names a layer the host required that was not applied (and
	// why); the command never ran.
	Refused *sandbox.MissingLayer `json:"refused,omitempty"`
	// JailPid is the helper's pid in the host's pid namespace, sent by the
	// launcher that started it.
	JailPid int `json:"jail_pid,omitempty"`
	// Prepared: a helper started ahead (HelperArgs' stage) has prepared what
	// it does before its configuration; its first line.
	Prepared bool `json:"prepared,omitempty"`
	// Phases are the helper's phase marks (with Config.Trace).
	Phases []PhaseMark `json:"phases,omitempty"`
	// Primed: a helper given a Prime configuration applied every layer
	// it decides and waits for its command.
	Primed bool `json:"primed,omitempty"`
}

// Home is the HOME the command's environment names, or "": the home
// whose secrets are masked even when /etc/passwd does not list it.
func (c Config) Home() string { return envValue(c.Env, "HOME") }

// envValue is the value of name in env ("NAME=value" entries; the last
// one counts), or "".
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, name+"="); ok {
			v = rest
		}
	}
	return v
}
