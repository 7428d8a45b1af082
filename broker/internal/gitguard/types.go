package gitguard

import "path/filepath"

// QuarantineSuffix marks where the guard moved a file aside:
// <name><QuarantineSuffix>-<unix nanoseconds>.
const QuarantineSuffix = ".loom-quarantine"

// Action is one piece of repository-controlled execution the guard
// disarmed in a writable root: the entries off the allowlist of inert
// keys removed from a git config a command created or changed (or made
// git use, or a core.worktree whose directory it re-aimed), or a hook,
// pointer or config moved aside whole. The broker reports it as a
// Neutralisation.
type Action struct {
	// Path is the file (absolute).
	Path string
	// Removed names the config entries taken out (dotted, as `git config
	// --list` prints them, in file order); empty when the file was moved
	// aside whole.
	Removed []string
	// MovedTo is where the file was moved aside, when it was.
	MovedTo string
	// Err says why it could not be done; the workspace is then fenced.
	Err string
}

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

// covers reports whether path is root or lies beneath it (both absolute
// or both relative).
func covers(root, path string) bool {
	if root == "" || path == "" || filepath.IsAbs(root) != filepath.IsAbs(path) {
		return false
	}
	root, path = filepath.Clean(root), filepath.Clean(path)
	if root == path || root == string(filepath.Separator) {
		return true
	}
	return len(path) > len(root) && path[len(root)] == filepath.Separator && path[:len(root)] == root
}
