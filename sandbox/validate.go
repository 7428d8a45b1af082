package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"
)

// PolicyErrorCode is the stable reason a policy or grant was refused: a
// PolicyError's Code, a snake_case word no other code of the module uses.
type PolicyErrorCode string

const (
	// PolicyRelativePath: a path is not absolute (or is empty). A relative
	// protected entry would protect nothing, so it is refused rather than
	// guessed at.
	PolicyRelativePath PolicyErrorCode = "relative_path"
	// PolicyUncleanPath: a path is absolute but not in filepath.Clean form
	// ("/w/../x", "/w/", "/w//x"), so what it covers is ambiguous to a
	// reader.
	PolicyUncleanPath PolicyErrorCode = "unclean_path"
	// PolicyInvalidPath: a path contains a NUL byte. (Its word is
	// invalid_policy_path: tool's invalid_path is a path argument's fault.)
	PolicyInvalidPath PolicyErrorCode = "invalid_policy_path"
	// PolicyWritableProtected: a writable root equals or lies under a
	// protected entry, so none of it could ever be written.
	PolicyWritableProtected PolicyErrorCode = "writable_root_protected"
	// PolicyUnknownNetwork: Network is not "", "off" or "full".
	PolicyUnknownNetwork PolicyErrorCode = "unknown_network"
	// PolicyInvalidEnvName: an EnvAllow entry is empty or contains '=' or
	// a NUL byte.
	PolicyInvalidEnvName PolicyErrorCode = "invalid_env_name"
	// PolicyNegativeWall: WallMs is negative.
	PolicyNegativeWall PolicyErrorCode = "negative_wall"
	// PolicyUnknownGrantKind: a Grant's Kind is not one of the closed set.
	PolicyUnknownGrantKind PolicyErrorCode = "unknown_grant_kind"
	// PolicyGrantPath: a root grant has no path, or a grant of another kind
	// carries one.
	PolicyGrantPath PolicyErrorCode = "grant_path"
)

// PolicyError is a refused policy or grant: which field, what value, and
// a stable code. Error names what would be accepted instead.
type PolicyError struct {
	Code  PolicyErrorCode
	Field string // e.g. "writable_roots[1]", "network", "grants[0].kind"
	Value string
}

// ErrorCode returns e.Code as a string: the method set of package tool's
// CodedError, which reads every coded error of the module the same way.
func (e *PolicyError) ErrorCode() string { return string(e.Code) }

// Error renders the field, the value, the problem and what is accepted.
func (e *PolicyError) Error() string {
	var why, accepted string
	switch e.Code {
	case PolicyRelativePath:
		why, accepted = "path is not absolute", "absolute paths such as /home/me/project"
	case PolicyUncleanPath:
		why, accepted = "path is not clean", "clean absolute paths (no '..', '.', '//' or trailing '/'): "+filepath.Clean(e.Value)
	case PolicyInvalidPath:
		why, accepted = "path contains a NUL byte", "paths without NUL bytes"
	case PolicyWritableProtected:
		why, accepted = "writable root lies at or under a protected entry and could never be written", "writable roots outside every protected entry (a writable root may contain protected entries)"
	case PolicyUnknownNetwork:
		why, accepted = "unknown network mode", `"off" (or empty) and "full"`
	case PolicyInvalidEnvName:
		why, accepted = "invalid environment variable name", "non-empty names without '=' or NUL"
	case PolicyNegativeWall:
		why, accepted = "negative wall limit", "0 (no limit of its own) or a positive number of milliseconds"
	case PolicyUnknownGrantKind:
		why, accepted = "unknown grant kind", strings.Join(grantKindNames(), ", ")
	case PolicyGrantPath:
		why, accepted = "grant path does not fit its kind", "a path for readable_root and writable_root, none for network and wall"
	default:
		why, accepted = string(e.Code), "a valid policy"
	}
	return fmt.Sprintf("broker: policy %s %q: %s (code %s); accepted: %s", e.Field, e.Value, why, e.Code, accepted)
}

// knownGrantKinds is the closed set of grant kinds, in documentation order.
var knownGrantKinds = []GrantKind{GrantReadableRoot, GrantWritableRoot, GrantNetwork, GrantWall}

func grantKindNames() []string {
	out := make([]string, len(knownGrantKinds))
	for i, k := range knownGrantKinds {
		out[i] = string(k)
	}
	return out
}

// Validate reports the first problem in p as a *PolicyError, or nil when
// p is usable. Checks run in this order: the path lists (system roots,
// readable roots, writable roots, protected, sockets), writable roots
// against protected entries, network, env, wall.
//
// Refused: relative, empty, unclean or NUL-carrying paths in any root,
// protected or socket list; a writable root at or under a protected entry (nothing
// in it could be written, which is never what the author meant); an
// unknown network; a malformed EnvAllow name; a negative WallMs.
// Accepted, because they are normal: a writable root that contains
// protected entries (a workspace holding .git/hooks), a readable root
// under a protected entry (the jail still shows it read-only), duplicate
// or nested roots, and a system root that is also a readable root.
func Validate(p Policy) error {
	lists := []struct {
		field string
		paths []string
	}{
		{"system_roots", p.SystemRoots},
		{"readable_roots", p.ReadableRoots},
		{"writable_roots", p.WritableRoots},
		{"protected", p.Protected},
		{"sockets", p.Sockets},
		{"unguarded", p.Unguarded},
	}
	for _, l := range lists {
		for i, path := range l.paths {
			if err := validatePath(fmt.Sprintf("%s[%d]", l.field, i), path); err != nil {
				return err
			}
		}
	}
	for i, w := range p.WritableRoots {
		for _, pr := range p.Protected {
			if Covers(pr, w) {
				return &PolicyError{Code: PolicyWritableProtected, Field: fmt.Sprintf("writable_roots[%d]", i), Value: w}
			}
		}
	}
	if !validNetwork(p.Network) {
		return &PolicyError{Code: PolicyUnknownNetwork, Field: "network", Value: string(p.Network)}
	}
	for i, name := range p.EnvAllow {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return &PolicyError{Code: PolicyInvalidEnvName, Field: fmt.Sprintf("env_allow[%d]", i), Value: name}
		}
	}
	if p.WallMs < 0 {
		return &PolicyError{Code: PolicyNegativeWall, Field: "wall_ms", Value: fmt.Sprint(p.WallMs)}
	}
	return nil
}

// ValidateGrant reports whether g is one of the closed set of grants in a
// usable form: a known kind; an absolute clean path for the root kinds and
// no path for the others. field names g in the error (e.g. "grants[2]").
func ValidateGrant(field string, g Grant) error {
	switch g.Kind {
	case GrantReadableRoot, GrantWritableRoot:
		if g.Path == "" {
			return &PolicyError{Code: PolicyGrantPath, Field: field + ".path", Value: g.Path}
		}
		return validatePath(field+".path", g.Path)
	case GrantNetwork, GrantWall:
		if g.Path != "" {
			return &PolicyError{Code: PolicyGrantPath, Field: field + ".path", Value: g.Path}
		}
		return nil
	default:
		return &PolicyError{Code: PolicyUnknownGrantKind, Field: field + ".kind", Value: string(g.Kind)}
	}
}

func validatePath(field, p string) error {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return &PolicyError{Code: PolicyInvalidPath, Field: field, Value: p}
	case !filepath.IsAbs(p):
		return &PolicyError{Code: PolicyRelativePath, Field: field, Value: p}
	case filepath.Clean(p) != p:
		return &PolicyError{Code: PolicyUncleanPath, Field: field, Value: p}
	}
	return nil
}

func validNetwork(n Network) bool {
	return n == "" || n == NetworkOff || n == NetworkFull
}
