package job

// event is something that happens to a job, in the order the plane can
// observe it.
type event int

const (
	// evCleared: the broker cleared the command and it runs.
	evCleared event = iota
	// evNeverRan: the command was admitted but never ran.
	evNeverRan
	// evExited: the command ended by itself.
	evExited
	// evKilled: the harness ended the command (owner, wall, abort,
	// shutdown).
	evKilled
	// evLost: the plane can no longer vouch for the command.
	evLost
)

// advance is the job lifecycle: Starting goes to Running or straight to a
// terminal state; Running goes to a terminal state; a terminal state is
// final. It reports false, leaving s as it was, for an event that cannot
// happen in s.
func advance(s State, e event) (State, bool) {
	switch s {
	case Starting:
		switch e {
		case evCleared:
			return Running, true
		case evNeverRan:
			return Refused, true
		case evKilled:
			return Killed, true
		case evLost:
			return Lost, true
		}
	case Running:
		switch e {
		case evExited:
			return Exited, true
		case evKilled:
			return Killed, true
		case evLost:
			return Lost, true
		}
	}
	return s, false
}
