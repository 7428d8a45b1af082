package gitguard

import (
	"errors"

	"github.com/agentloom/loom/sandbox"
)

// QuarantineSuffix marks where the guard moved a file aside:
// <name><QuarantineSuffix>-<unix nanoseconds>.
const QuarantineSuffix = ".loom-quarantine"

// Moved is a protected path that was missing when a command started and
// that the command created, moved aside. The broker reports it as a
// Quarantine.
type Moved struct {
	Path string
	// MovedTo is where it was renamed; empty when it could not be.
	MovedTo string
	// Err says why it could not be moved.
	Err string
}

// EventKind says what an Event records.
type EventKind uint8

const (
	// EventNeutralised: the guard acted on (or could not act on) a file.
	EventNeutralised EventKind = iota + 1
	// EventFenced: a workspace was fenced, or its fence lifted.
	EventFenced
	// EventQuarantined: a protected path a command created was moved aside.
	EventQuarantined
)

// Event is one thing the guard did, for the host's audit.
type Event struct {
	Kind      EventKind
	Workspace string
	Path      string
	Detail    string
}

// Error refuses a command or a tool write.
type Error struct {
	// Fenced says the workspace is fenced, or cannot be guarded; false:
	// the request itself is invalid (a path not beneath its root).
	Fenced bool
	// Msg says why, and what the host must do.
	Msg string
	// Err is the cause, when there is one.
	Err error
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Err }

func fenced(msg string, err error) *Error { return &Error{Fenced: true, Msg: msg, Err: err} }

// Refusal is the guard's error as a Denial: a fenced workspace
// (DenialWorkspaceFenced), or a request the guard cannot take, such as a
// path outside its root (DenialInvalidPolicy).
func Refusal(err error) *sandbox.Denial {
	var e *Error
	switch {
	case !errors.As(err, &e):
		return sandbox.NewDenial(sandbox.DenialWorkspaceFenced, err.Error(), err)
	case e.Fenced:
		return sandbox.NewDenial(sandbox.DenialWorkspaceFenced, e.Msg, e.Err)
	default:
		return sandbox.NewDenial(sandbox.DenialInvalidPolicy, e.Msg, e.Err)
	}
}
