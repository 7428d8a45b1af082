package history

import "github.com/agentloom/loom/tool"

// The codes of History refusals: a Refusal's Code, and the Outcome.Code of
// a history_search call the index refused. Each is declared once in the
// module and means only what its comment says.
const (
	// CodeIndexUnavailable: the index cannot be used at all (closed,
	// missing, corrupt, an I/O failure, or a schema newer than this
	// library). The host must act; the model cannot repair it.
	CodeIndexUnavailable tool.Code = "index_unavailable"
	// CodeIndexRefused: the request itself is wrong (a raw query FTS5
	// cannot parse, an unknown entry, a bound exceeded, an argument that
	// belongs to the other action). Change the call.
	CodeIndexRefused tool.Code = "index_refused"
	// CodeIndexNotReady: the index is still being prepared (recovering).
	// Transient.
	CodeIndexNotReady tool.Code = "index_not_ready"
	// CodeIndexBusy: another writer held the index past the busy timeout.
	// Transient. (A call whose own context ended is tool.CodeCancelled.)
	CodeIndexBusy tool.Code = "index_busy"
)

// The codes of Memory refusals: a Refusal's Code, and the Outcome.Code of
// a remember call the memory store refused.
const (
	// CodeMemoryBusy: another writer held the memory store past the busy
	// timeout. Transient. (A call whose own context ended is
	// tool.CodeCancelled.)
	CodeMemoryBusy tool.Code = "memory_busy"
	// CodeMemoryUnavailable: the memory store cannot be used at all
	// (closed, missing, an I/O failure, or the host keeps no memory).
	CodeMemoryUnavailable tool.Code = "memory_unavailable"
	// CodeMemoryNoteTooLong: the note's text exceeds 4000
	// characters after redaction.
	CodeMemoryNoteTooLong tool.Code = "memory_note_too_long"
	// CodeMemoryCeilingReached: the memory store already holds MaxNotes
	// notes, its lifetime ceiling; no more will ever be stored. (The job
	// plane's ceiling on live jobs is another code.)
	CodeMemoryCeilingReached tool.Code = "memory_ceiling_reached"
	// CodeNothingToRemember: the note's text is blank.
	CodeNothingToRemember tool.Code = "nothing_to_remember"
	// CodeMemoryFieldInvalid: a note's title, description, kind or
	// session breaks its rule, or its text is not valid UTF-8.
	CodeMemoryFieldInvalid tool.Code = "memory_field_invalid"
)

// Transient reports whether a refusal coded code is worth repeating
// unchanged: the request was fine and a later identical call may succeed.
// It is true for CodeIndexBusy, CodeIndexNotReady and CodeMemoryBusy only.
func Transient(code tool.Code) bool {
	return code == CodeIndexBusy || code == CodeIndexNotReady || code == CodeMemoryBusy
}
