package agent

import (
	"slices"
	"time"
)

// Defaults of Limits. Each applies when the corresponding field is zero.
const (
	// DefaultDepthCap: children nest at most this deep below a root.
	DefaultDepthCap = 3
	// DefaultFanOut: running children of one parent at once.
	DefaultFanOut = 8
	// DefaultSessionStrands: running strands of the whole session at once.
	DefaultSessionStrands = 32
	// DefaultMaxWait: the longest single wait.
	DefaultMaxWait = 30 * time.Second
	// DefaultRunBudget: a run's deadline when the request names none.
	DefaultRunBudget = 10 * time.Minute
	// DefaultMaxRunBudget: the longest deadline a request may name.
	DefaultMaxRunBudget = time.Hour
)

// Bounds on requests. The tools check them before asking an Agency (see
// SpawnRequest.Check), and the reference Agency enforces them again.
const (
	// MaxPurposeBytes bounds a spawn's purpose.
	MaxPurposeBytes = 200
	// MaxPromptBytes bounds a spawn's prompt and a sent message.
	MaxPromptBytes = 64 << 10
	// MaxSpawnTools bounds an explicit tools list.
	MaxSpawnTools = 64
	// MaxToolNameBytes bounds one tool name in a tools list.
	MaxToolNameBytes = 64
	// MaxWaitHandles bounds the handles of one wait.
	MaxWaitHandles = 16
	// MaxInboxMessages bounds the messages queued for one strand.
	MaxInboxMessages = 64
	// MaxNoteBytes bounds one note's JSON value.
	MaxNoteBytes = 16 << 10
	// MaxNoteKeyBytes bounds a note's relative key.
	MaxNoteKeyBytes = 128
	// MaxNotesPerStrand bounds the notes one strand may write.
	MaxNotesPerStrand = 256
	// MaxNotesListed bounds the entries one Notes read returns.
	MaxNotesListed = 64
)

// Limits configures NewAgency. Zero fields take the Default constants.
type Limits struct {
	DepthCap       int
	FanOut         int
	SessionStrands int
	MaxWait        time.Duration
	RunBudget      time.Duration
	MaxRunBudget   time.Duration
	// Models are the catalogue names a spawn may ask for.
	Models []string
	// RootTools are the tools a root strand holds; nil means every tool.
	RootTools []string
	// ChildTools is a child's tool set when its spawn names none; nil
	// means the parent's own set without agent_spawn.
	ChildTools []string
}

func (l Limits) withDefaults() Limits {
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
	def(&l.DepthCap, DefaultDepthCap)
	def(&l.FanOut, DefaultFanOut)
	def(&l.SessionStrands, DefaultSessionStrands)
	defd(&l.MaxWait, DefaultMaxWait)
	defd(&l.RunBudget, DefaultRunBudget)
	defd(&l.MaxRunBudget, DefaultMaxRunBudget)
	if l.RunBudget > l.MaxRunBudget {
		l.RunBudget = l.MaxRunBudget
	}
	l.Models = slices.Clone(l.Models)
	l.RootTools = slices.Clone(l.RootTools)
	l.ChildTools = slices.Clone(l.ChildTools)
	return l
}
