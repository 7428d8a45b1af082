package agent

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/agentloom/loom/tool"
)

// maxSlugBytes caps the decorative half of a minted name. The slug never
// discriminates between children, so the cap can truncate it freely.
const maxSlugBytes = 24

// digestHexChars is the width of the discriminating half of a minted
// name: hex characters of SHA-256 over the call site.
const digestHexChars = 16

// fallbackSlug stands in for a purpose with no usable character.
const fallbackSlug = "agent"

// slug folds free text into the slug grammar: lower-case ASCII letters,
// digits and single '-' separators, no leading or trailing '-', at most
// maxSlugBytes, never empty. Every other character ('/', '#', '@', space,
// non-ASCII) becomes a separator, so a slug can never forge the structure
// of a name or a handle.
func slug(text string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(text) {
		if b.Len() > maxSlugBytes {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	s := b.String()
	if len(s) > maxSlugBytes {
		s = s[:maxSlugBytes]
	}
	s = strings.TrimRight(s, "-")
	if s == "" {
		return fallbackSlug
	}
	return s
}

// MinterKind says who inside one tool call minted a child.
type MinterKind int

const (
	// MintedByToolCall is a model's own agent_spawn call.
	MintedByToolCall MinterKind = iota
	// MintedByProgram is a code-mode program's Nth spawn, all of which
	// share the dispatching call's operation, step and source index.
	MintedByProgram
)

// Minter separates several spawns made under one call site. The zero
// value is a model's own agent_spawn.
type Minter struct {
	// Kind says who minted: a tool call (the zero value) or a program.
	Kind MinterKind
	// Ordinal numbers a program's spawns in admission order; it is
	// meaningful only for MintedByProgram.
	Ordinal int
}

// ProgramMinter is the Minter of a code-mode program's ordinal-th spawn.
func ProgramMinter(ordinal int) Minter { return Minter{Kind: MintedByProgram, Ordinal: ordinal} }

// callSiteDigest is the discriminating half of a minted name: the first
// digestHexChars hex characters of SHA-256 over the operation, the
// minting step, the source index and the minter, each length-prefixed so
// no two distinct call sites share an encoding. It takes no model text
// and no parent name; it has a constant width, so no cap can truncate it.
func callSiteDigest(operation, step string, sourceIndex int, m Minter) string {
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	num := func(v int) {
		binary.BigEndian.PutUint64(n[:], uint64(int64(v)))
		h.Write(n[:])
	}
	field("loom/agent/call-site/v1")
	field(operation)
	field(step)
	num(sourceIndex)
	num(int(m.Kind))
	if m.Kind == MintedByProgram {
		num(m.Ordinal)
	}
	return hex.EncodeToString(h.Sum(nil))[:digestHexChars]
}

// CallSite is the whole of what tells two children apart: the strand that
// spawned them and the digest of the call site that did. Two spawns with
// one CallSite are one child. An Agency reconciles a spawn by its
// CallSite, never by the whole minted name, whose slug follows the purpose
// text: a replay whose purpose differs lands on the child already made,
// under that child's first name.
type CallSite struct {
	// Parent is the spawning strand, as the Caller names it.
	Parent string
	// Digest is sixteen hex characters of SHA-256 over the caller's
	// operation, step, source index and Minter.
	Digest string
}

// SiteOf returns the CallSite of a spawn by c.
func SiteOf(c Caller) CallSite {
	return CallSite{Parent: c.Strand, Digest: callSiteDigest(c.OpID, c.StepID, c.SourceIndex, c.Minter)}
}

// MintName returns the strand name a first spawn by caller with the given
// purpose receives: "sub:{parent}/{slug}-{digest}", where parent is the
// caller's strand without its own "sub:" prefix (so a grandchild reads
// "sub:root/a-…/b-…"). The purpose only decorates: two names minted at one
// CallSite differ at most in their slugs, and an Agency keeps the first
// (see CallSite).
func MintName(c Caller, purpose string) string {
	parent := strings.TrimPrefix(c.Strand, tool.SubagentPrefix)
	return tool.SubagentPrefix + parent + "/" + slug(purpose) + "-" +
		callSiteDigest(c.OpID, c.StepID, c.SourceIndex, c.Minter)
}
