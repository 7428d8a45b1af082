package agent

import (
	"slices"
	"time"
)

// Defaults of Options: each applies when its field is zero or less.
const (
	defaultDepthCap       = 3
	defaultFanOut         = 8
	defaultSessionStrands = 32
	defaultMaxWait        = 30 * time.Second
	defaultRunBudget      = 10 * time.Minute
	defaultMaxRunBudget   = time.Hour
)

// Bounds on requests. The tools check them before asking an Agency (see
// SpawnRequest.Check), and the reference Agency enforces them again.
const (
	// maxPurposeBytes bounds a spawn's purpose.
	maxPurposeBytes = 200
	// maxPromptBytes bounds a spawn's prompt and a sent message.
	maxPromptBytes = 64 << 10
	// maxSpawnTools bounds an explicit tools list.
	maxSpawnTools = 64
	// maxToolNameBytes bounds one tool name in a tools list.
	maxToolNameBytes = 64
	// MaxWaitHandles bounds the handles of one wait.
	MaxWaitHandles = 16
	// maxInboxMessages bounds the messages queued for one strand.
	maxInboxMessages = 64
	// MaxNoteBytes bounds one note's JSON value as agent_note writes it
	// and as the agent tools show it (agent_notes, agent_wait), and any
	// strand's result note (ResultNoteKey) however written.
	MaxNoteBytes = 16 << 10
	// MaxProgramNoteBytes bounds one note's JSON value as a code-mode
	// program writes it (cap/notes), and so any note an Agency stores. A
	// value over MaxNoteBytes is shown by agent_notes as its size and the
	// note:// path fs_read reads it at.
	MaxProgramNoteBytes = 1 << 20
	// maxStrandNoteBytes bounds the bytes of the notes one strand writes
	// in all.
	maxStrandNoteBytes = 16 << 20
	// maxNoteKeyBytes bounds a note's relative key.
	maxNoteKeyBytes = 128
	// maxNotesPerStrand bounds the notes one strand may write.
	maxNotesPerStrand = 256
	// MaxNotesListed bounds the entries one Notes read returns.
	MaxNotesListed = 64
)

// Options configures NewAgency. It is passed by value and its zero value
// works: a field left zero or negative takes the default it states.
type Options struct {
	// DepthCap is how deep children nest below a root strand (a root's
	// child is at depth 1); a deeper spawn is refused with CodeDepthCap.
	// Zero means 3.
	DepthCap int
	// FanOut bounds the running children of one parent; a spawn past it
	// is refused with CodeFanOut. Zero means 8.
	FanOut int
	// SessionStrands bounds the running strands of the whole session; a
	// spawn or a continuation past it is refused with CodeSessionStrands.
	// Zero means 32.
	SessionStrands int
	// MaxWait is the longest single wait (MaxWaitMs); agent_wait clamps
	// to it and the Agency refuses a longer one with CodeWaitTooLong.
	// Zero means 30 s.
	MaxWait time.Duration
	// RunBudget is a run's deadline when its spawn or send names none,
	// at most MaxRunBudget. Zero means 10 minutes.
	RunBudget time.Duration
	// MaxRunBudget is the longest deadline a spawn or send may name;
	// longer ones are clamped to it. Zero means an hour.
	MaxRunBudget time.Duration
	// Models are the catalogue names a spawn may ask for (ModelNames).
	// Nil or empty means the host offers no choice: a spawn naming a
	// model is refused with CodeUnknownModel.
	Models []string
	// RootTools are the tools a root strand holds. Nil means every tool;
	// an empty, non-nil list means none.
	RootTools []string
	// ChildTools is a child's tool set when its spawn names none: the
	// listed tools its parent holds, without agent_spawn, plus the floor
	// (FloorTools) its parent holds. Nil means the parent's own set
	// without agent_spawn; a parent holding every tool (a root while
	// RootTools is nil) passes every tool on.
	ChildTools []string
}

func (l Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.DepthCap, defaultDepthCap)
	def(&l.FanOut, defaultFanOut)
	def(&l.SessionStrands, defaultSessionStrands)
	defd(&l.MaxWait, defaultMaxWait)
	defd(&l.RunBudget, defaultRunBudget)
	defd(&l.MaxRunBudget, defaultMaxRunBudget)
	if l.RunBudget > l.MaxRunBudget {
		l.RunBudget = l.MaxRunBudget
	}
	l.Models = slices.Clone(l.Models)
	l.RootTools = slices.Clone(l.RootTools)
	l.ChildTools = slices.Clone(l.ChildTools)
	return l
}
