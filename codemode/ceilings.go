package codemode

import (
	"fmt"
	"sync"
)

// Lifetime admission ceilings of one execution. Each counts the calls
// admitted since the program started, whatever became of them; a call
// past its ceiling is refused in band, and since nothing ever frees an
// admission, waiting does not help.
const (
	// defaultSpawnCeiling is the spawns (strand.spawn, and each item of
	// strand.map) one execution may make when Options.SpawnCeiling is
	// zero. A spawn past it is refused with codeSpawnCeiling.
	defaultSpawnCeiling = 32
	// maxSends is the strand.send calls one execution may make.
	maxSends = 128
	// maxNoteWrites is the note writes one execution may make:
	// strand.note and notes.put share it.
	maxNoteWrites = 256
	// maxNoteReads is the note reads one execution may make:
	// strand.notes, notes.get, notes.list and notes.read share it.
	maxNoteReads = 64
	// maxEmits is the report.emit calls one execution may make.
	maxEmits = 64
)

// admission is one kind of call an execution's tally counts.
type admission int

const (
	admitSpawn admission = iota
	admitSend
	admitNoteWrite
	admitNoteRead
	admitEmit
	admissionKinds
)

// admissions is one execution's lifetime tally, one count per kind. Its
// zero value works, with defaultSpawnCeiling.
type admissions struct {
	spawnCeiling int // 0: defaultSpawnCeiling

	mu sync.Mutex
	n  [admissionKinds]int
}

// ceiling is kind's bound.
func (a *admissions) ceiling(kind admission) int {
	switch kind {
	case admitSpawn:
		if a.spawnCeiling > 0 {
			return a.spawnCeiling
		}
		return defaultSpawnCeiling
	case admitSend:
		return maxSends
	case admitNoteWrite:
		return maxNoteWrites
	case admitNoteRead:
		return maxNoteReads
	}
	return maxEmits
}

// admit counts one call of cap against kind's ceiling and returns its
// admission number (0 for the first of its kind), or the refusal once the
// ceiling is reached.
func (a *admissions) admit(kind admission, cap string) (int, error) {
	limit := a.ceiling(kind)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n[kind] >= limit {
		return 0, ceilingError(kind, cap, limit)
	}
	a.n[kind]++
	return a.n[kind] - 1, nil
}

// ceilingError is the refusal at a lifetime admission ceiling: the
// capability, the number, and that waiting frees no slot; spawns under
// codeSpawnCeiling, every other kind under codeAdmissionCeiling.
func ceilingError(kind admission, cap string, n int) error {
	code, what := codeAdmissionCeiling, "calls"
	switch kind {
	case admitSpawn:
		code, what = codeSpawnCeiling, "spawns"
	case admitNoteWrite:
		what = "note writes (strand.note and notes.put together)"
	case admitNoteRead:
		what = "note reads (strand.notes, notes.get, notes.list and notes.read together)"
	}
	return &CapError{Code: code, Message: fmt.Sprintf("%s reached its ceiling of %d %s for this execution; waiting frees no slot, so do without it or submit a new program", cap, n, what)}
}
