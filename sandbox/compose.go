package sandbox

import (
	"fmt"
	"slices"
	"strings"
)

// Compose returns the policy one command runs under: the meet of the
// session's base policy and a tool's requirements, widened by the grants
// an operator approved for this call.
//
// The meet, field by field:
//   - Roots: every required writable root must be covered (see Covers) by
//     a base writable root or a writable grant; every required readable
//     root by a base readable or writable root or a root grant of either
//     kind; every required system root by a base system, readable or
//     writable root or a root grant of either kind. A base system root
//     covers only required system roots, never a required readable
//     root: a root a host lists for programs to run is not one it listed
//     for reading on purpose. The result holds the required roots (each
//     in its own list), never base roots the requirements did not ask for.
//   - Sockets: every required socket must be covered by a base socket
//     (the same path, or a directory holding it). No grant kind widens
//     the sockets: a host shares a socket in its base or not at all. The
//     result holds the required sockets.
//   - Network: the lesser of the two ("off" < "full"; empty is "off").
//   - EnvAllow: the names both allow.
//   - WallMs and each Limits field: the tighter non-zero value.
//   - Protected: the union of both, sorted. No grant changes it.
//
// Grants are then applied: a root grant adds its root, GrantNetwork makes
// the network "full", GrantWall lifts the wall (WallMs becomes 0).
//
// A refusal is an error holding a *Denial (found with errors.As; never a
// nil *Denial in a non-nil error). When a required root or the network is
// not covered, that is a *Denial with Code DenialRequirementsNotCovered
// whose Wanted is exactly the minimal set of grants that covers the
// shortfall (sorted: writable roots, readable roots, network; a missing
// system root is wanted as a readable root), so Compose(base,
// requirements, append(grants, d.Wanted...)) succeeds. A required writable root at or under a
// protected entry, and a required socket the base does not share, can
// never be covered; the denial says so and wants nothing for them. An
// invalid base, requirements or grant (see Validate and ValidateGrant) is
// a *Denial with Code DenialInvalidPolicy wrapping the *PolicyError; so
// is a writable grant at or under a protected entry, since no grant lifts
// protection.
//
// Compose is total: it never panics, whatever its inputs. A policy it
// returns without a denial passes Validate, and is never wider than the
// base plus the grants.
func Compose(base, requirements Policy, grants []Grant) (Policy, error) {
	if err := Validate(base); err != nil {
		return Policy{}, NewDenial(DenialInvalidPolicy, "base policy: "+err.Error(), err)
	}
	if err := Validate(requirements); err != nil {
		return Policy{}, NewDenial(DenialInvalidPolicy, "requirements: "+err.Error(), err)
	}
	protected := normalizeSet(append(slices.Clone(base.Protected), requirements.Protected...))
	var grantRead, grantWrite []string
	grantNet, grantWall := false, false
	for i, g := range grants {
		field := fmt.Sprintf("grants[%d]", i)
		if err := ValidateGrant(field, g); err != nil {
			return Policy{}, NewDenial(DenialInvalidPolicy, err.Error(), err)
		}
		switch g.Kind {
		case GrantReadableRoot:
			grantRead = append(grantRead, g.Path)
		case GrantWritableRoot:
			if pr, ok := coveredBy(protected, g.Path); ok {
				err := &PolicyError{Code: PolicyWritableProtected, Field: field + ".path", Value: g.Path}
				return Policy{}, NewDenial(DenialInvalidPolicy, fmt.Sprintf("%v; protected entry %s cannot be lifted by a grant", err, pr), err)
			}
			grantWrite = append(grantWrite, g.Path)
		case GrantNetwork:
			grantNet = true
		case GrantWall:
			grantWall = true
		}
	}

	writeCover := append(slices.Clone(base.WritableRoots), grantWrite...)
	readCover := slices.Concat(base.ReadableRoots, base.WritableRoots, grantRead, grantWrite)
	systemCover := slices.Concat(base.SystemRoots, readCover)

	var missWrite, missRead, unliftable []string
	for _, w := range requirements.WritableRoots {
		if pr, ok := coveredBy(protected, w); ok {
			unliftable = append(unliftable, fmt.Sprintf("writable root %s lies under protected entry %s, which no grant lifts", w, pr))
			continue
		}
		if _, ok := coveredBy(writeCover, w); !ok {
			missWrite = append(missWrite, w)
		}
	}
	missWrite = normalizeRoots(missWrite)
	for _, r := range requirements.ReadableRoots {
		if _, ok := coveredBy(readCover, r); ok {
			continue
		}
		if _, ok := coveredBy(missWrite, r); ok {
			continue // the writable grant wanted above covers it
		}
		missRead = append(missRead, r)
	}
	for _, r := range requirements.SystemRoots {
		if _, ok := coveredBy(systemCover, r); ok {
			continue
		}
		if _, ok := coveredBy(missWrite, r); ok {
			continue
		}
		missRead = append(missRead, r)
	}
	missRead = normalizeRoots(missRead)
	for _, sk := range requirements.Sockets {
		if _, ok := coveredBy(base.Sockets, sk); !ok {
			unliftable = append(unliftable, fmt.Sprintf("socket %s is not one the session policy shares, and no grant shares a socket", sk))
		}
	}
	missNet := netRank(requirements.Network) > netRank(base.Network) && !grantNet

	if len(missWrite) > 0 || len(missRead) > 0 || missNet || len(unliftable) > 0 {
		var wanted []Grant
		var parts []string
		for _, w := range missWrite {
			wanted = append(wanted, Grant{Kind: GrantWritableRoot, Path: w})
			parts = append(parts, "writable root "+w)
		}
		for _, r := range missRead {
			wanted = append(wanted, Grant{Kind: GrantReadableRoot, Path: r})
			parts = append(parts, "readable root "+r)
		}
		if missNet {
			wanted = append(wanted, Grant{Kind: GrantNetwork})
			parts = append(parts, "full network access")
		}
		reason := ""
		if len(parts) > 0 {
			reason = "the command needs " + strings.Join(parts, ", ") + ", which the session policy does not give"
		}
		if len(unliftable) > 0 {
			if reason != "" {
				reason += "; "
			}
			reason += strings.Join(unliftable, "; ")
		}
		return Policy{}, &Denial{Code: DenialRequirementsNotCovered, Reason: reason, Wanted: wanted}
	}

	out := Policy{
		SystemRoots:   normalizeRoots(requirements.SystemRoots),
		ReadableRoots: normalizeRoots(append(slices.Clone(requirements.ReadableRoots), grantRead...)),
		WritableRoots: normalizeRoots(append(slices.Clone(requirements.WritableRoots), grantWrite...)),
		Protected:     protected,
		Sockets:       normalizeRoots(requirements.Sockets),
		Unguarded:     normalizeRoots(base.Unguarded),
		Network:       NetworkOff,
		EnvAllow:      intersect(base.EnvAllow, requirements.EnvAllow),
		WallMs:        tighter(base.WallMs, requirements.WallMs),
		Limits: Limits{
			CPUSeconds:    tighter(base.Limits.CPUSeconds, requirements.Limits.CPUSeconds),
			MemoryBytes:   tighter(base.Limits.MemoryBytes, requirements.Limits.MemoryBytes),
			Processes:     tighter(base.Limits.Processes, requirements.Limits.Processes),
			FileSizeBytes: tighter(base.Limits.FileSizeBytes, requirements.Limits.FileSizeBytes),
			OpenFiles:     tighter(base.Limits.OpenFiles, requirements.Limits.OpenFiles),
		},
	}
	if grantNet || (base.Network == NetworkFull && requirements.Network == NetworkFull) {
		out.Network = NetworkFull
	}
	if grantWall {
		out.WallMs = 0
	}
	return out, nil
}

// coveredBy returns the first root in roots covering p.
func coveredBy(roots []string, p string) (string, bool) {
	for _, r := range roots {
		if Covers(r, p) {
			return r, true
		}
	}
	return "", false
}

// normalizeRoots sorts roots and drops duplicates and any root covered by
// another, so the result says the same with the fewest entries.
func normalizeRoots(roots []string) []string {
	if len(roots) == 0 {
		return nil
	}
	s := slices.Clone(roots)
	slices.Sort(s) // a covering root sorts before everything it covers
	out := s[:0]
	for _, r := range s {
		if _, ok := coveredBy(out, r); ok {
			continue
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

// normalizeSet sorts and drops exact duplicates only.
func normalizeSet(xs []string) []string {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return slices.Clip(slices.Compact(s))
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return normalizeSet(out)
}

func tighter[T int | uint64](a, b T) T {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	default:
		return min(a, b)
	}
}

func netRank(n Network) int {
	if n == NetworkFull {
		return 1
	}
	return 0
}
