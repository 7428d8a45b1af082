package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentloom/loom/todo"
)

// Agency is the seam between the agent tools and whatever runs agents.
// The tools own the model's half (schemas, clamps, wording); an Agency
// owns everything with teeth: the addressing rule, the caps, deadlines,
// the lineage ledger, the blackboard. A host plugs its own runtime in or
// takes NewAgency.
//
// Every method judges its request against the Caller, which the host
// builds from the call's own coordinates. Every failure is returned as an
// error whose chain holds a *Refusal (tool.CodeOf reads its code);
// implementations must be safe for concurrent use.
type Agency interface {
	// Spawn starts a child of c.Strand, named by MintName(c, purpose). A
	// repeated call site (SiteOf(c)) reconciles onto the child it already
	// minted, whatever the purpose: that child, its first name and its
	// first purpose, with Reconciled set.
	Spawn(ctx context.Context, c Caller, req SpawnRequest) (Spawned, error)
	// Send delivers a message to a descendant of c.Strand: into its inbox
	// if it is running, or as the prompt of a new run if it is idle.
	Send(ctx context.Context, c Caller, req SendRequest) (Delivery, error)
	// Wait waits for every handle against one deadline, at most wait
	// long, and answers one Waited per handle in the order asked. Every
	// handle must name a run of a descendant of c.Strand. A wait longer
	// than MaxWaitMs is refused with CodeWaitTooLong.
	Wait(ctx context.Context, c Caller, handles []Handle, wait time.Duration) ([]Waited, error)
	// Note writes value under "agent/{c.Strand}/{key}". Keys are
	// write-once: writing the same value again succeeds, a different
	// value is refused with CodeNoteExists.
	Note(ctx context.Context, c Caller, key string, value json.RawMessage) (Note, error)
	// Notes reads the session blackboard: entries whose full key starts
	// with prefix, which must itself start with NotesNamespace.
	Notes(ctx context.Context, c Caller, prefix string) (NotesPage, error)
	// Todos runs step on c.Strand's todo board under compare-and-set,
	// retrying when a concurrent writer got there first, and returns the
	// board that landed. step must be pure: it may run more than once.
	Todos(ctx context.Context, c Caller, step func(todo.Board) (todo.Board, error)) (todo.Board, error)
	// Roster lists the descendants of c.Strand.
	Roster(ctx context.Context, c Caller) ([]Peer, error)
	// Holds answers nil when c.Strand holds the named tool right now, a
	// Refusal with tool.CodeToolNotHeld when it does not, and another code on
	// a fault.
	Holds(ctx context.Context, c Caller, tool string) error
	// MaxWaitMs is the longest wait the Agency accepts, in milliseconds;
	// agent_wait's schema and clamp state it.
	MaxWaitMs() int
	// ModelNames lists the catalogue names a spawn may ask for; empty
	// means spawns keep host routing.
	ModelNames() []string
}

// NotesNamespace begins every blackboard key.
const NotesNamespace = "agent/"

// ResultNoteKey is the relative note key under which a child records the
// value its result contract asks for.
const ResultNoteKey = "result"

// todoNoteKey is the relative note key of a strand's todo board cell.
const todoNoteKey = "todo"

// NoteKey returns the full blackboard key of strand's relative key.
func NoteKey(strand, key string) string { return NotesNamespace + strand + "/" + key }
