package jail

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/sandbox"
)

func TestSecretTargets(t *testing.T) {
	glob := func(p string) []string {
		if p == "/etc/ssh/ssh_host_*_key" {
			return []string{"/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key"}
		}
		return nil
	}
	for _, tc := range []struct {
		name         string
		roots, homes []string
		has, hasNot  []string
	}{
		{
			name:  "system root /etc",
			roots: []string{"/usr", "/etc"},
			has:   []string{"/etc/shadow", "/etc/gshadow-", "/etc/sudoers.d", "/etc/ssh/ssh_host_rsa_key"},
		},
		{
			name:   "no root covers /etc",
			roots:  []string{"/usr"},
			hasNot: []string{"/etc/shadow", "/etc/ssh/ssh_host_rsa_key"},
		},
		{
			name:   "a home a root covers",
			roots:  []string{"/home"},
			homes:  []string{"/home/u", "/srv/other"},
			has:    []string{"/home/u/.ssh", "/home/u/.netrc", "/home/u/.docker/config.json", "/home/u/.config/gh"},
			hasNot: []string{"/srv/other/.ssh", "/etc/shadow"},
		},
		{
			name:   "the secret listed on purpose",
			roots:  []string{"/home/u", "/home/u/.ssh"},
			homes:  []string{"/home/u"},
			has:    []string{"/home/u/.aws"},
			hasNot: []string{"/home/u/.ssh"},
		},
		{
			name:   "a root inside the secret",
			roots:  []string{"/home/u", "/home/u/.config/gh/extensions"},
			homes:  []string{"/home/u"},
			hasNot: []string{"/home/u/.config/gh"},
		},
		{
			name:   "a root inside a home only",
			roots:  []string{"/home/u/project"},
			homes:  []string{"/home/u"},
			hasNot: []string{"/home/u/.ssh"},
		},
		{
			name:   "relative home ignored",
			roots:  []string{"/"},
			homes:  []string{"home/u"},
			has:    []string{"/etc/shadow"},
			hasNot: []string{"home/u/.ssh", "/home/u/.ssh"},
		},
	} {
		got := secretTargets(tc.roots, tc.homes, glob)
		for _, h := range tc.has {
			if !slices.Contains(got, h) {
				t.Errorf("%s: %s not masked (got %v)", tc.name, h, got)
			}
		}
		for _, h := range tc.hasNot {
			if slices.Contains(got, h) {
				t.Errorf("%s: %s masked", tc.name, h)
			}
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("%s: not sorted and unique: %v", tc.name, got)
		}
	}
}

// TestCoversClean holds the allocation-free cover test to Covers on clean
// absolute paths.
func TestCoversClean(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seg := rapid.SampledFrom([]string{"a", "b", "ab", ".git", "x y"})
		gen := rapid.Custom(func(t *rapid.T) string {
			n := rapid.IntRange(0, 4).Draw(t, "n")
			p := ""
			for i := 0; i < n; i++ {
				p += "/" + seg.Draw(t, "seg")
			}
			if p == "" {
				p = "/"
			}
			return p
		})
		root, p := gen.Draw(t, "root"), gen.Draw(t, "path")
		if coversClean(root, p) != sandbox.Covers(root, p) {
			t.Fatalf("coversClean(%q, %q) = %v, Covers says %v", root, p, coversClean(root, p), sandbox.Covers(root, p))
		}
	})
}
