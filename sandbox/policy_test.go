package sandbox

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestCovers(t *testing.T) {
	tests := []struct {
		root, path string
		want       bool
	}{
		{"/w", "/w", true},
		{"/w", "/w/a", true},
		{"/w", "/w/a/b", true},
		{"/w/.git", "/w/.git/hooks", true},
		{"/w/.git", "/w/.gitx", false},
		{"/w/.git", "/w/.git-x/hooks", false},
		{"/w", "/wx", false},
		{"/w/a", "/w", false},
		{"/", "/anything/at/all", true},
		{"/", "/", true},
		{"/w/", "/w/a", true},      // cleaned
		{"/w", "/w/a/../b", true},  // cleaned to /w/b
		{"/w", "/w/../x", false},   // cleaned to /x
		{"/w/a", "/w/a/..", false}, // cleaned to /w
		{"w", "w/a", true},
		{"/w", "w/a", false},
		{"w", "/w/a", false},
		{"", "/w", false},
		{"/w", "", false},
	}
	for _, tt := range tests {
		if got := Covers(tt.root, tt.path); got != tt.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", tt.root, tt.path, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		p     Policy
		code  PolicyErrorCode // "" means valid
		field string
	}{
		{name: "zero policy", p: Policy{}},
		{name: "typical", p: Policy{
			ReadableRoots: []string{"/usr", "/etc"},
			WritableRoots: []string{"/w"},
			Protected:     []string{"/w/.git/hooks", "/w/.git/config"},
			Network:       NetworkOff,
			EnvAllow:      []string{"PATH", "HOME"},
			WallMs:        1000,
		}},
		{name: "full network", p: Policy{Network: NetworkFull}},
		{name: "readable root under protected is fine", p: Policy{ReadableRoots: []string{"/w/.git/hooks/x"}, Protected: []string{"/w/.git/hooks"}}},
		{name: "nested and duplicate roots are fine", p: Policy{ReadableRoots: []string{"/a", "/a/b", "/a"}}},
		{name: "relative readable", p: Policy{ReadableRoots: []string{"usr"}}, code: PolicyRelativePath, field: "readable_roots[0]"},
		{name: "empty writable", p: Policy{WritableRoots: []string{"/w", ""}}, code: PolicyRelativePath, field: "writable_roots[1]"},
		{name: "relative protected", p: Policy{Protected: []string{".git"}}, code: PolicyRelativePath, field: "protected[0]"},
		{name: "dot-dot", p: Policy{ReadableRoots: []string{"/w/../etc"}}, code: PolicyUncleanPath, field: "readable_roots[0]"},
		{name: "system root also readable is fine", p: Policy{SystemRoots: []string{"/usr", "/etc"}, ReadableRoots: []string{"/usr"}}},
		{name: "relative system root", p: Policy{SystemRoots: []string{"usr"}}, code: PolicyRelativePath, field: "system_roots[0]"},
		{name: "unclean system root", p: Policy{SystemRoots: []string{"/usr/"}}, code: PolicyUncleanPath, field: "system_roots[0]"},
		{name: "nul system root", p: Policy{SystemRoots: []string{"/u\x00"}}, code: PolicyInvalidPath, field: "system_roots[0]"},
		{name: "system roots come first", p: Policy{ReadableRoots: []string{"r"}, SystemRoots: []string{"/a", "s"}}, code: PolicyRelativePath, field: "system_roots[1]"},
		{name: "sockets", p: Policy{Sockets: []string{"/run/user/1000/bus", "/var/run/docker.sock"}}},
		{name: "relative socket", p: Policy{Sockets: []string{"docker.sock"}}, code: PolicyRelativePath, field: "sockets[0]"},
		{name: "unclean socket", p: Policy{Sockets: []string{"/run/../x.sock"}}, code: PolicyUncleanPath, field: "sockets[0]"},
		{name: "nul socket", p: Policy{Sockets: []string{"/run/x\x00"}}, code: PolicyInvalidPath, field: "sockets[0]"},
		{name: "trailing slash", p: Policy{WritableRoots: []string{"/w/"}}, code: PolicyUncleanPath, field: "writable_roots[0]"},
		{name: "double slash", p: Policy{Protected: []string{"/w//.git"}}, code: PolicyUncleanPath, field: "protected[0]"},
		{name: "nul", p: Policy{ReadableRoots: []string{"/w\x00x"}}, code: PolicyInvalidPath, field: "readable_roots[0]"},
		{name: "writable equals protected", p: Policy{WritableRoots: []string{"/w/.git/hooks"}, Protected: []string{"/w/.git/hooks"}}, code: PolicyWritableProtected, field: "writable_roots[0]"},
		{name: "writable under protected", p: Policy{WritableRoots: []string{"/w", "/w/.git/hooks/sub"}, Protected: []string{"/w/.git/hooks"}}, code: PolicyWritableProtected, field: "writable_roots[1]"},
		{name: "writable beside protected (.gitx)", p: Policy{WritableRoots: []string{"/w/.gitx"}, Protected: []string{"/w/.git"}}},
		{name: "unknown network", p: Policy{Network: "partial"}, code: PolicyUnknownNetwork, field: "network"},
		{name: "empty env name", p: Policy{EnvAllow: []string{"PATH", ""}}, code: PolicyInvalidEnvName, field: "env_allow[1]"},
		{name: "env name with =", p: Policy{EnvAllow: []string{"A=B"}}, code: PolicyInvalidEnvName, field: "env_allow[0]"},
		{name: "wall zero", p: Policy{WallMs: 0}},
		{name: "wall negative", p: Policy{WallMs: -1}, code: PolicyNegativeWall, field: "wall_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.p)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var pe *PolicyError
			if !errors.As(err, &pe) {
				t.Fatalf("Validate = %v, want *PolicyError %s", err, tt.code)
			}
			if pe.Code != tt.code || pe.Field != tt.field {
				t.Fatalf("Validate = {%s %s}, want {%s %s}", pe.Code, pe.Field, tt.code, tt.field)
			}
			if !strings.Contains(pe.Error(), "accepted:") || !strings.Contains(pe.Error(), tt.field) {
				t.Fatalf("Error() does not name field and what is accepted: %q", pe.Error())
			}
		})
	}
}

func TestValidateGrant(t *testing.T) {
	tests := []struct {
		g    Grant
		code PolicyErrorCode
	}{
		{Grant{Kind: GrantReadableRoot, Path: "/x"}, ""},
		{Grant{Kind: GrantWritableRoot, Path: "/x"}, ""},
		{Grant{Kind: GrantNetwork}, ""},
		{Grant{Kind: GrantWall}, ""},
		{Grant{Kind: GrantReadableRoot}, PolicyGrantPath},
		{Grant{Kind: GrantWritableRoot, Path: "x"}, PolicyRelativePath},
		{Grant{Kind: GrantWritableRoot, Path: "/x/"}, PolicyUncleanPath},
		{Grant{Kind: GrantNetwork, Path: "/x"}, PolicyGrantPath},
		{Grant{Kind: GrantWall, Path: "/x"}, PolicyGrantPath},
		{Grant{Kind: "protected", Path: "/x"}, PolicyUnknownGrantKind},
		{Grant{}, PolicyUnknownGrantKind},
	}
	for _, tt := range tests {
		err := ValidateGrant("grants[0]", tt.g)
		var pe *PolicyError
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("ValidateGrant(%v) = %v, want nil", tt.g, err)
		case tt.code != "" && (!errors.As(err, &pe) || pe.Code != tt.code):
			t.Errorf("ValidateGrant(%v) = %v, want code %s", tt.g, err, tt.code)
		}
	}
	err := ValidateGrant("grants[3]", Grant{Kind: "bogus"})
	for _, k := range knownGrantKinds {
		if !strings.Contains(err.Error(), string(k)) {
			t.Errorf("unknown-kind error %q does not list accepted kind %s", err, k)
		}
	}
}

func TestSystemReadableRoots(t *testing.T) {
	roots := SystemReadableRoots()
	if err := Validate(Policy{SystemRoots: roots}); err != nil {
		t.Fatalf("system roots invalid: %v", err)
	}
	present := map[string]bool{}
	for _, r := range roots {
		if _, err := os.Stat(r); err != nil {
			t.Errorf("listed %s, which does not exist: %v", r, err)
		}
		present[r] = true
	}
	for _, c := range systemRootCandidates {
		if _, err := os.Stat(c); err == nil && !present[c] {
			t.Errorf("existing %s not listed", c)
		}
	}
}
