// Package agent lets a model hand work to sub-agents: spawn them, talk to
// them, wait for them against a deadline, read what they wrote, demand a
// typed result, and keep a task list. It holds the Agency seam, the tools
// that are thin shells over it (agent_spawn, agent_send, agent_wait,
// agent_note, agent_notes, agent_roster and todo), the vocabulary that
// crosses the seam, and Reference, an in-process Agency a host may use as
// is (NewAgency).
//
// Beside them sit three tools over seams only a host can fill, each with
// a reference a host may take:
//
//   - advise (AdviseTool over Advice): an advisor strand's whole outward
//     surface. A verdict (quiet, nudge with text, block with text) is
//     decoded as one pair (DecodeVerdict) and answered with what the host
//     did with it (Ack), never a bare acknowledgement. Guard is the
//     reference emission guard: a block within DefaultBlockCooldown of
//     the last one is downgraded to a nudge, repeated advice is dropped.
//   - context_remaining (ContextTool over Gauge): the calling strand's
//     window, context size, tokens in use as the host's threshold counts
//     them, next checkpoint (Boundary) and notes written.
//   - propose (ProposeTool over Proposals): a queued change to the
//     host's rules or configuration file, with no path argument.
//     ProposalQueue is the reference queue a host reviews (List, Accept,
//     Reject), in memory for a session.
//
// They sit here because they are a strand's dealings with its host, as
// the others are its dealings with its children: the strand is the
// call's, and notes are this package's. The plane registers them only
// when a host opts in (plane.FamilyHost).
//
// # What it owns
//
//   - The name and handle grammar. A child's strand name is minted as
//     "sub:{parent}/{slug}-{digest}" (MintName). The slug only decorates;
//     the parent and the digest of the call site (CallSite) tell two
//     children apart, so a replay reconciles onto the child its call site
//     minted. No model text reaches the digest. A handle
//     "{strand}#{operation}" names one run; ParseHandle is total.
//   - Result contracts: ParseResultSchema accepts only the subset of JSON
//     Schema it can enforce and refuses the rest; Judge reports a verdict
//     (NoResultAsked, valid, missing, mismatched) beside the prose report.
//   - The todo tool and where each strand's board lives (Agency.Todos,
//     under compare-and-set); the board's rules are package todo's.
//   - The note:// views of the blackboard (ReadNoteView; NoteScheme
//     serves them through fs_read, read-only, to a strand holding
//     agent_notes): a listing of keys and sizes, or one note's value as
//     indented JSON, a large one spilled to the call's blob store.
//   - The model's half of each tool: schemas (derived from the argument
//     structs), clamps, wording, and in-band refusals with stable codes.
//   - The agent vocabulary's codes: tool.Code constants (CodeDepthCap,
//     CodeNotDescendant, ...), each declared once in the module. The
//     strand-name prefix of a sub-agent is tool's (tool.SubagentPrefix,
//     tool.IsSubagent), which the job plane reads too.
//
// # Configuration
//
// NewAgency takes the host's Runner and an Options value. Options is
// passed by value and its zero value works: each field left zero takes
// the default it states (DepthCap 3, FanOut 8, ...). The tools take their
// seam at construction (Tools(agency)); a nil Agency gives tools that
// refuse every call with CodeAgencyUnavailable.
//
// # What it refuses to own
//
// Running a model. The host's Runner runs one child turn and returns its
// final text; the host dispatches the child's tool calls itself, with a
// tool.Call whose Strand and OpID are the child's. Remote orchestrators
// are not modelled: an "@suffix" on a handle is read and ignored. The
// agent tools ask the broker for nothing.
//
// # Continuation
//
// agent_send to a child whose run ended starts a new run of the same
// strand. The child must answer knowing what it did, and a Runner handed
// only the new message could not, so Turn carries the strand's earlier
// runs (Turn.Earlier): each run's prompt, the messages it drained and
// its report, oldest first, as many of the newest as fit in
// MaxEarlierBytes, with the count of older ones left out. The Agency
// carries them, rather than the Runner contract telling every host to
// keep them, because it is the one party that already records every run
// (the ledger keeps each report to answer agent_wait): a host that forgot
// a strand, restarted, or runs children elsewhere still gives a
// continued child its past, and the contract is held by this package's
// tests rather than by each host's care. The record is the
// conversation's skeleton, not its tool calls: a host that keeps whole
// transcripts keyed by Turn.Strand (examples/agent does) shows those
// instead and falls back on Earlier when it has none.
//
// # Invariants
//
//   - Identity comes from the call, never from arguments: CallerOf builds
//     the Caller from tool.Call's Strand, OpID, StepID and SourceIndex. A
//     model cannot become another strand, choose its child's name, or
//     write outside "agent/{its strand}/".
//   - A strand addresses only its descendants (send, wait, roster); a
//     handle of any other strand is refused with CodeNotDescendant, an
//     invented one with CodeUnknownHandle.
//   - Reference holds DepthCap, FanOut (running children per parent) and
//     SessionStrands (running strands per session) under any sequence of
//     calls; a run past its deadline is aborted (AbortBudgetExpired); a
//     run's undetached children are aborted when it ends
//     (AbortParentFinished).
//   - Notes are write-once and bounded: MaxNoteBytes (16 KiB) from
//     agent_note and for a result note, MaxProgramNoteBytes (1 MiB) from
//     a code_mode program, 256 notes and 16 MiB per strand. The agent
//     tools never carry a value over MaxNoteBytes: agent_notes shows its
//     size and the note:// path that reads it. The todo cell is updated
//     by compare-and-set with bounded retries.
//   - A strand runs only the tools it holds, once the host ties its
//     registry to the Agency (Reference.Govern). A child's set is fixed at
//     spawn, never more than its parent holds. A call by a strand that
//     does not hold the tool, and a spawn naming a tool its parent lacks,
//     are refused with tool.CodeToolNotHeld; a spawn naming a tool the
//     registry does not register, with CodeUnknownSpawnTool.
//   - Every failure crosses the seam as an error whose chain holds a
//     *Refusal, its code in Refusal.Code (read it with tool.CodeOf or
//     errors.As). The tools turn it into an IsError outcome whose Code is
//     the refusal's and whose Details (RefusalDetails) hold the reason,
//     never the code again. A pending wait is a success.
//   - agent_send is tool.ReplayNever (a replay would deliver twice); the
//     other tools are tool.ReplaySafe: a replayed spawn reconciles onto the
//     child its call site already minted, and says so when the purpose it
//     carries was not taken.
package agent
