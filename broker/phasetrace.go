package broker

// phaseMark is one moment in a command's way from Clear to settlement,
// on the machine's monotonic clock (CLOCK_MONOTONIC, the same in the
// broker and its helpers), so marks taken in both processes line up. Only
// BenchmarkWarmPhases asks for them (helperConfig.Trace and
// Broker.test.tracePhases); no figure of it is a claim about confinement.
type phaseMark struct {
	Name string `json:"n"`
	NS   int64  `json:"t"`
}

// phaseLog collects marks while on; a nil or off log takes none.
type phaseLog struct {
	on    bool
	marks []phaseMark
}

// maxPhaseMarks bounds the marks one log keeps.
const maxPhaseMarks = 64

// mark notes that the phase called name ends now.
func (l *phaseLog) mark(name string) {
	if l == nil || !l.on || len(l.marks) >= maxPhaseMarks {
		return
	}
	l.marks = append(l.marks, phaseMark{name, monotonicNow()})
}

// helperPhases are the helper's own marks, taken from its start (before
// it knows whether its command asks for them) and reported only when
// helperConfig.Trace says so.
var helperPhases = phaseLog{on: true}
