package jail

// PhaseMark is one moment in a command's way from Clear to settlement,
// on the machine's monotonic clock (CLOCK_MONOTONIC, the same in the
// broker and its helpers), so marks taken in both processes line up. Only
// BenchmarkWarmPhases asks for them (Config.Trace and the broker's
// test.tracePhases); no figure of it is a claim about confinement.
type PhaseMark struct {
	Name string `json:"n"`
	NS   int64  `json:"t"`
}

// PhaseLog collects marks while On; a nil or off log takes none, and
// one takes at most maxPhaseMarks.
type PhaseLog struct {
	On    bool
	Marks []PhaseMark
}

// maxPhaseMarks bounds the marks one log keeps.
const maxPhaseMarks = 64

// Mark notes that the phase called name ends now.
func (l *PhaseLog) Mark(name string) {
	if l == nil || !l.On || len(l.Marks) >= maxPhaseMarks {
		return
	}
	l.Marks = append(l.Marks, PhaseMark{name, monotonicNow()})
}

// helperPhases are the helper's own marks, taken from its start (before
// it knows whether its command asks for them) and reported only when
// Config.Trace says so.
var helperPhases = PhaseLog{On: true}
