package jail

// ExtraFileFD is the descriptor number at which a command receives its
// extra file (broker.CallSpec.ExtraFile). The helper's own configuration
// and report take descriptors 3 and 4 (neither survives into the
// command), so the first number free for a caller's descriptor is 5.
const ExtraFileFD = 5

// Extra says what a helper holds at ExtraFileFD when its configuration
// arrives.
type Extra string

const (
	// ExtraNone: nothing of the command's; whatever is there (a warm
	// helper's handoff socket) is closed at exec.
	ExtraNone Extra = ""
	// ExtraInherited: the command's file itself, inherited at start.
	ExtraInherited Extra = "inherited"
	// ExtraHandoff: a unix socket the broker sends the command's file
	// over (SCM_RIGHTS) once the helper is chosen; it is replaced by
	// that file.
	ExtraHandoff Extra = "handoff"
)
