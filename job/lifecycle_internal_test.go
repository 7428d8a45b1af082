package job

import "testing"

var allStates = []State{Starting, Running, Exited, Killed, Lost, Refused}

var allEvents = []event{evCleared, evNeverRan, evExited, evKilled, evLost}

// TestAdvanceIsALifecycle checks the transition function's shape for
// every state and event: terminal states are final, nothing returns to
// Starting, Running is reached only by clearance, and every terminal
// state is reachable from Starting.
func TestAdvanceIsALifecycle(t *testing.T) {
	reached := map[State]bool{Starting: true}
	frontier := []State{Starting}
	for len(frontier) > 0 {
		s := frontier[0]
		frontier = frontier[1:]
		for _, e := range allEvents {
			next, ok := advance(s, e)
			if !ok {
				if next != s {
					t.Errorf("refused advance(%s, %d) moved to %s", s, e, next)
				}
				continue
			}
			if !s.Pending() {
				t.Errorf("terminal %s advanced to %s on %d", s, next, e)
			}
			if next == Starting {
				t.Errorf("advance(%s, %d) returned to starting", s, e)
			}
			if next == Running && (s != Starting || e != evCleared) {
				t.Errorf("advance(%s, %d) reached running", s, e)
			}
			if !reached[next] {
				reached[next] = true
				frontier = append(frontier, next)
			}
		}
	}
	for _, s := range allStates {
		if !reached[s] {
			t.Errorf("%s is unreachable", s)
		}
	}
}
