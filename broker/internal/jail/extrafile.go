package jail

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
