package broker

import "github.com/agentloom/loom/broker/internal/jail"

func init() { HelperMain() }

// HelperMain turns the current process into a jail helper when the broker
// started it as one, and returns immediately otherwise. A helper confines
// itself, execs the command it was given and never returns.
//
// The broker package calls HelperMain from its init, so a host that
// imports the package needs no extra call. A host whose main package
// does work in its own init functions before the broker's init runs (or
// that wants the helper to start as early as possible) may call
// HelperMain first thing in main; calling it twice is harmless.
func HelperMain() { jail.Main() }
