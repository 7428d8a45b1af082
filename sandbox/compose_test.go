package sandbox

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

func TestComposeTable(t *testing.T) {
	base := Policy{
		ReadableRoots: []string{"/usr", "/etc"},
		WritableRoots: []string{"/w"},
		Protected:     []string{"/w/.git/config", "/w/.git/hooks"},
		Network:       NetworkFull,
		EnvAllow:      []string{"HOME", "PATH", "TERM"},
		WallMs:        600_000,
		Limits:        Limits{CPUSeconds: 100, MemoryBytes: 1 << 30},
	}
	tests := []struct {
		name   string
		req    Policy
		grants []Grant
		want   Policy
		code   DenialCode
		wanted []Grant
	}{
		{
			name: "grep-like: workspace readable, nothing writable, network off",
			req:  Policy{ReadableRoots: []string{"/w"}, EnvAllow: []string{"PATH"}, WallMs: 60_000},
			want: Policy{ReadableRoots: []string{"/w"}, Protected: base.Protected, Network: NetworkOff,
				EnvAllow: []string{"PATH"}, WallMs: 60_000, Limits: base.Limits},
		},
		{
			name: "bash-like: base writable roots, system readable, base network",
			req:  Policy{ReadableRoots: []string{"/usr", "/etc"}, WritableRoots: []string{"/w"}, Network: NetworkFull, EnvAllow: base.EnvAllow, Limits: Limits{MemoryBytes: 1 << 20, Processes: 64}},
			want: Policy{ReadableRoots: []string{"/etc", "/usr"}, WritableRoots: []string{"/w"}, Protected: base.Protected,
				Network: NetworkFull, EnvAllow: base.EnvAllow, WallMs: 600_000,
				Limits: Limits{CPUSeconds: 100, MemoryBytes: 1 << 20, Processes: 64}},
		},
		{
			name: "readable root under a writable base root is covered",
			req:  Policy{ReadableRoots: []string{"/w/src"}},
			want: Policy{ReadableRoots: []string{"/w/src"}, Protected: base.Protected, Network: NetworkOff, WallMs: 600_000, Limits: base.Limits},
		},
		{
			name:   "uncovered writable root",
			req:    Policy{WritableRoots: []string{"/w", "/data/out"}},
			code:   DenialRequirementsNotCovered,
			wanted: []Grant{{Kind: GrantWritableRoot, Path: "/data/out"}},
		},
		{
			name:   "readable base root does not cover a write",
			req:    Policy{WritableRoots: []string{"/usr/local"}},
			code:   DenialRequirementsNotCovered,
			wanted: []Grant{{Kind: GrantWritableRoot, Path: "/usr/local"}},
		},
		{
			name:   "component coverage: /wx is not under /w",
			req:    Policy{ReadableRoots: []string{"/wx"}},
			code:   DenialRequirementsNotCovered,
			wanted: []Grant{{Kind: GrantReadableRoot, Path: "/wx"}},
		},
		{
			name:   "wanted is minimal: nested roots collapse, a wanted writable covers a read",
			req:    Policy{ReadableRoots: []string{"/d/x", "/d", "/d/y", "/r/a", "/r/b"}, WritableRoots: []string{"/r"}},
			code:   DenialRequirementsNotCovered,
			wanted: []Grant{{Kind: GrantWritableRoot, Path: "/r"}, {Kind: GrantReadableRoot, Path: "/d"}},
		},
		{
			name:   "grants cover the shortfall",
			req:    Policy{ReadableRoots: []string{"/d"}, WritableRoots: []string{"/r"}},
			grants: []Grant{{Kind: GrantWritableRoot, Path: "/r"}, {Kind: GrantReadableRoot, Path: "/d"}},
			want: Policy{ReadableRoots: []string{"/d"}, WritableRoots: []string{"/r"}, Protected: base.Protected,
				Network: NetworkOff, WallMs: 600_000, Limits: base.Limits},
		},
		{
			name:   "a wider grant covers a narrower requirement and is applied as granted",
			req:    Policy{WritableRoots: []string{"/r/sub"}},
			grants: []Grant{{Kind: GrantWritableRoot, Path: "/r"}},
			want: Policy{WritableRoots: []string{"/r"}, Protected: base.Protected,
				Network: NetworkOff, WallMs: 600_000, Limits: base.Limits},
		},
		{
			name:   "wall grant lifts the wall",
			req:    Policy{WallMs: 1000},
			grants: []Grant{{Kind: GrantWall}},
			want:   Policy{Protected: base.Protected, Network: NetworkOff, Limits: base.Limits},
		},
		{
			name:   "requirement protected is unioned",
			req:    Policy{ReadableRoots: []string{"/w"}, Protected: []string{"/w/secret", "/w/.git/hooks"}},
			grants: []Grant{{Kind: GrantNetwork}},
			want: Policy{ReadableRoots: []string{"/w"}, Protected: []string{"/w/.git/config", "/w/.git/hooks", "/w/secret"},
				Network: NetworkFull, WallMs: 600_000, Limits: base.Limits},
		},
		{
			name: "writable requirement under protected is never coverable",
			req:  Policy{WritableRoots: []string{"/w/.git/hooks"}},
			code: DenialRequirementsNotCovered,
		},
		{
			name:   "writable grant under protected is refused",
			req:    Policy{ReadableRoots: []string{"/w"}},
			grants: []Grant{{Kind: GrantWritableRoot, Path: "/w/.git/hooks/x"}},
			code:   DenialInvalidPolicy,
		},
		{
			name: "invalid requirements",
			req:  Policy{ReadableRoots: []string{"relative"}},
			code: DenialInvalidPolicy,
		},
		{
			name: "system roots are covered by base readable roots and carried as system roots",
			req:  Policy{SystemRoots: []string{"/usr", "/etc/ssl"}},
			want: Policy{SystemRoots: []string{"/etc/ssl", "/usr"}, Protected: base.Protected, Network: NetworkOff, WallMs: 600_000, Limits: base.Limits},
		},
		{
			name:   "an uncovered system root is wanted as a readable root",
			req:    Policy{SystemRoots: []string{"/usr", "/opt"}},
			code:   DenialRequirementsNotCovered,
			wanted: []Grant{{Kind: GrantReadableRoot, Path: "/opt"}},
		},
		{
			name:   "a readable grant covers a system root",
			req:    Policy{SystemRoots: []string{"/opt"}},
			grants: []Grant{{Kind: GrantReadableRoot, Path: "/opt"}},
			want: Policy{SystemRoots: []string{"/opt"}, ReadableRoots: []string{"/opt"}, Protected: base.Protected,
				Network: NetworkOff, WallMs: 600_000, Limits: base.Limits},
		},
		{
			name:   "sockets the base does not share are never coverable, and no grant shares one",
			req:    Policy{Sockets: []string{"/run/docker.sock"}},
			grants: []Grant{{Kind: GrantReadableRoot, Path: "/run"}, {Kind: GrantWritableRoot, Path: "/run"}, {Kind: GrantNetwork}, {Kind: GrantWall}},
			code:   DenialRequirementsNotCovered,
		},
		{
			name: "invalid socket path",
			req:  Policy{Sockets: []string{"run/x.sock"}},
			code: DenialInvalidPolicy,
		},
		{
			name:   "unknown grant",
			grants: []Grant{{Kind: "protected", Path: "/w/.git/hooks"}},
			code:   DenialInvalidPolicy,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compose(base, tt.req, tt.grants)
			if tt.code != "" {
				if err == nil {
					t.Fatalf("Compose = %+v, want denial %s", got, tt.code)
				}
				d := denialIn(err)
				if d == nil || d.Code != tt.code {
					t.Fatalf("denial %v, want code %s", d, tt.code)
				}
				if diff := cmp.Diff(tt.wanted, d.Wanted, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("Wanted (-want +got):\n%s", diff)
				}
				if d.Reason == "" {
					t.Fatal("denial has no reason")
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected denial: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("Compose (-want +got):\n%s", diff)
			}
		})
	}
}

// TestComposeSystemRootsAreJailOnly: a base system root covers a
// required system root, but never a required readable root, and never
// appears in the result's readable roots; base sockets cover required
// sockets (exactly or by a directory holding them) and are carried only
// when required.
func TestComposeSystemRootsAndSockets(t *testing.T) {
	base := Policy{
		SystemRoots:   []string{"/etc", "/usr"},
		ReadableRoots: []string{"/srv/data"},
		WritableRoots: []string{"/w"},
		Sockets:       []string{"/run/agent.sock", "/run/shared"},
	}
	got, d := Compose(base, Policy{SystemRoots: []string{"/usr", "/etc"}, WritableRoots: []string{"/w"}, Sockets: []string{"/run/agent.sock", "/run/shared/db.sock"}}, nil)
	if d != nil {
		t.Fatalf("bash-like requirements denied: %v", d)
	}
	want := Policy{SystemRoots: []string{"/etc", "/usr"}, WritableRoots: []string{"/w"}, Sockets: []string{"/run/agent.sock", "/run/shared/db.sock"}, Network: NetworkOff}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("Compose (-want +got):\n%s", diff)
	}
	_, d = Compose(base, Policy{ReadableRoots: []string{"/etc"}}, nil)
	if denialCode(d) != DenialRequirementsNotCovered || !cmp.Equal(denialIn(d).Wanted, []Grant{{Kind: GrantReadableRoot, Path: "/etc"}}) {
		t.Fatalf("a readable root covered only by a base system root: %v, want a denial wanting readable_root /etc", d)
	}
	got, d = Compose(base, Policy{WritableRoots: []string{"/w"}}, nil)
	if d != nil || len(got.Sockets) != 0 || len(got.SystemRoots) != 0 {
		t.Fatalf("unrequired sockets or system roots carried: %+v, %v", got, d)
	}
	_, d = Compose(base, Policy{Sockets: []string{"/run/other.sock"}}, nil)
	if denialCode(d) != DenialRequirementsNotCovered || len(denialIn(d).Wanted) != 0 || !strings.Contains(denialIn(d).Reason, "/run/other.sock") {
		t.Fatalf("unshared socket: %v, want a denial naming it and wanting nothing", d)
	}
}

func TestComposeBaseInvalidWrapsPolicyError(t *testing.T) {
	_, d := Compose(Policy{Network: "lan"}, Policy{}, nil)
	var pe *PolicyError
	if denialCode(d) != DenialInvalidPolicy || !errors.As(d, &pe) || pe.Code != PolicyUnknownNetwork {
		t.Fatalf("Compose with invalid base = %v, want invalid_policy wrapping unknown_network", d)
	}
}

// --- properties -----------------------------------------------------------

var components = []string{"a", "b", "c", ".git", ".gitx", "hooks"}

func genPath() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		n := rapid.IntRange(0, 3).Draw(t, "depth")
		p := ""
		for i := 0; i < n; i++ {
			p += "/" + rapid.SampledFrom(components).Draw(t, "c")
		}
		if p == "" {
			return "/"
		}
		return p
	})
}

func genPaths(label string) *rapid.Generator[[]string] {
	return rapid.SliceOfN(genPath(), 0, 4)
}

func genPolicy() *rapid.Generator[Policy] {
	return rapid.Custom(func(t *rapid.T) Policy {
		p := Policy{
			SystemRoots:   genPaths("s").Draw(t, "system"),
			ReadableRoots: genPaths("r").Draw(t, "readable"),
			WritableRoots: genPaths("w").Draw(t, "writable"),
			Protected:     genPaths("p").Draw(t, "protected"),
			Sockets:       genPaths("k").Draw(t, "sockets"),
			Network:       rapid.SampledFrom([]Network{"", NetworkOff, NetworkFull}).Draw(t, "net"),
			EnvAllow:      rapid.SliceOfN(rapid.SampledFrom([]string{"PATH", "HOME", "X"}), 0, 3).Draw(t, "env"),
			WallMs:        rapid.SampledFrom([]int{0, 100, 500}).Draw(t, "wall"),
			Limits:        Limits{Processes: rapid.SampledFrom([]uint64{0, 10, 20}).Draw(t, "procs")},
		}
		// Keep most generated policies valid: drop writable roots under
		// protected entries.
		p.WritableRoots = slices.DeleteFunc(p.WritableRoots, func(w string) bool {
			_, bad := coveredBy(p.Protected, w)
			return bad
		})
		return p
	})
}

func genGrants() *rapid.Generator[[]Grant] {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Grant {
		switch k := rapid.SampledFrom(knownGrantKinds).Draw(t, "kind"); k {
		case GrantReadableRoot, GrantWritableRoot:
			return Grant{Kind: k, Path: genPath().Draw(t, "path")}
		default:
			return Grant{Kind: k}
		}
	}), 0, 3)
}

func TestComposeNeverWiderThanBasePlusGrants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base, req, grants := genPolicy().Draw(t, "base"), genPolicy().Draw(t, "req"), genGrants().Draw(t, "grants")
		if rapid.Bool().Draw(t, "shareSockets") {
			// Most random requirements ask for a socket the base does not
			// share, which is denied; share them often enough that the
			// successful compositions get checked too.
			base.Sockets = append(base.Sockets, req.Sockets...)
		}
		got, d := Compose(base, req, grants)
		if d != nil {
			return
		}
		if err := Validate(got); err != nil {
			t.Fatalf("composed policy invalid: %v", err)
		}
		var gRead, gWrite []string
		gNet, gWall := false, false
		for _, g := range grants {
			switch g.Kind {
			case GrantReadableRoot:
				gRead = append(gRead, g.Path)
			case GrantWritableRoot:
				gWrite = append(gWrite, g.Path)
			case GrantNetwork:
				gNet = true
			case GrantWall:
				gWall = true
			}
		}
		for _, w := range got.WritableRoots {
			if _, ok := coveredBy(append(slices.Clone(base.WritableRoots), gWrite...), w); !ok {
				t.Fatalf("writable %s not within base writable %v or grants %v", w, base.WritableRoots, gWrite)
			}
		}
		for _, r := range got.ReadableRoots {
			if _, ok := coveredBy(slices.Concat(base.ReadableRoots, base.WritableRoots, gRead, gWrite), r); !ok {
				t.Fatalf("readable %s not within base readable or writable roots or grants (base system roots %v never count)", r, base.SystemRoots)
			}
		}
		for _, r := range got.SystemRoots {
			if _, ok := coveredBy(slices.Concat(base.SystemRoots, base.ReadableRoots, base.WritableRoots, gRead, gWrite), r); !ok {
				t.Fatalf("system root %s not within base roots or grants", r)
			}
		}
		for _, k := range got.Sockets {
			if _, ok := coveredBy(base.Sockets, k); !ok {
				t.Fatalf("socket %s not shared by the base %v (grants %v never share one)", k, base.Sockets, grants)
			}
		}
		if got.Network == NetworkFull && base.Network != NetworkFull && !gNet {
			t.Fatalf("network full without base or grant")
		}
		for _, e := range got.EnvAllow {
			if !slices.Contains(base.EnvAllow, e) || !slices.Contains(req.EnvAllow, e) {
				t.Fatalf("env %s allowed by composition but not by both sides", e)
			}
		}
		if !gWall && base.WallMs != 0 && (got.WallMs == 0 || got.WallMs > base.WallMs) {
			t.Fatalf("wall %d looser than base %d", got.WallMs, base.WallMs)
		}
		if base.Limits.Processes != 0 && (got.Limits.Processes == 0 || got.Limits.Processes > base.Limits.Processes) {
			t.Fatalf("processes %d looser than base %d", got.Limits.Processes, base.Limits.Processes)
		}
		// Every requirement is met by the result.
		for _, w := range req.WritableRoots {
			if _, ok := coveredBy(got.WritableRoots, w); !ok {
				t.Fatalf("required writable %s missing from %v", w, got.WritableRoots)
			}
		}
		for _, r := range req.ReadableRoots {
			if _, ok := coveredBy(slices.Concat(got.ReadableRoots, got.WritableRoots), r); !ok {
				t.Fatalf("required readable %s missing", r)
			}
		}
		for _, r := range req.SystemRoots {
			if _, ok := coveredBy(got.SystemRoots, r); !ok {
				t.Fatalf("required system root %s not carried in %v", r, got.SystemRoots)
			}
		}
		for _, k := range req.Sockets {
			if _, ok := coveredBy(got.Sockets, k); !ok {
				t.Fatalf("required socket %s not carried in %v", k, got.Sockets)
			}
		}
	})
}

func TestComposeWantedClearsTheShortfallExactly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base, req, grants := genPolicy().Draw(t, "base"), genPolicy().Draw(t, "req"), genGrants().Draw(t, "grants")
		_, err := Compose(base, req, grants)
		if denialCode(err) != DenialRequirementsNotCovered {
			return
		}
		d := denialIn(err)
		_, err2 := Compose(base, req, append(slices.Clone(grants), d.Wanted...))
		if err2 != nil && denialIn(err2) == nil {
			t.Fatalf("granting wanted returned an error holding no denial: %v", err2)
		}
		d2 := denialIn(err2)
		if d2 != nil && len(d2.Wanted) > 0 {
			t.Fatalf("granting %v left wanted %v", d.Wanted, d2.Wanted)
		}
		if d2 != nil && denialCode(d2) != DenialRequirementsNotCovered {
			t.Fatalf("granting wanted produced a different denial: %v", d2)
		}
		if d2 != nil && !strings.Contains(d2.Reason, "protected") && !strings.Contains(d2.Reason, "socket") {
			t.Fatalf("denial after granting everything wanted is not about protection or an unshared socket: %v", d2)
		}
		// Minimal: without any one wanted grant the shortfall returns.
		for i := range d.Wanted {
			fewer := slices.Concat(grants, d.Wanted[:i], d.Wanted[i+1:])
			if _, err3 := Compose(base, req, fewer); denialIn(err3) == nil || len(denialIn(err3).Wanted) == 0 {
				t.Fatalf("wanted %v is not minimal: %v alone is redundant", d.Wanted, d.Wanted[i])
			}
		}
	})
}

func TestComposeGrantsNeverTouchProtected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base, req, grants := genPolicy().Draw(t, "base"), genPolicy().Draw(t, "req"), genGrants().Draw(t, "grants")
		got, d := Compose(base, req, grants)
		if d != nil {
			return
		}
		union := map[string]bool{}
		for _, p := range slices.Concat(base.Protected, req.Protected) {
			union[p] = true
		}
		gotSet := map[string]bool{}
		for _, p := range got.Protected {
			gotSet[p] = true
		}
		if diff := cmp.Diff(union, gotSet, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("protected is not base ∪ requirements (-want +got):\n%s", diff)
		}
		for _, w := range got.WritableRoots {
			for _, p := range got.Protected {
				if Covers(p, w) {
					t.Fatalf("writable root %s under protected %s", w, p)
				}
			}
		}
	})
}

func TestComposeIsTotal(t *testing.T) {
	str := rapid.OneOf(rapid.String(), genPath(), rapid.SampledFrom([]string{"", ".", "..", "/", "//", "/a/../b", "a\x00b"}))
	anyPolicy := rapid.Custom(func(t *rapid.T) Policy {
		return Policy{
			ReadableRoots: rapid.SliceOfN(str, 0, 3).Draw(t, "r"),
			WritableRoots: rapid.SliceOfN(str, 0, 3).Draw(t, "w"),
			Protected:     rapid.SliceOfN(str, 0, 3).Draw(t, "p"),
			Network:       Network(rapid.OneOf(rapid.SampledFrom([]string{"", "off", "full"}), rapid.String()).Draw(t, "n")),
			EnvAllow:      rapid.SliceOfN(rapid.String(), 0, 3).Draw(t, "e"),
			WallMs:        rapid.Int().Draw(t, "wall"),
		}
	})
	anyGrant := rapid.Custom(func(t *rapid.T) Grant {
		return Grant{Kind: GrantKind(rapid.OneOf(rapid.SampledFrom(grantKindNames()), rapid.String()).Draw(t, "k")), Path: str.Draw(t, "p")}
	})
	rapid.Check(t, func(t *rapid.T) {
		got, d := Compose(anyPolicy.Draw(t, "base"), anyPolicy.Draw(t, "req"), rapid.SliceOfN(anyGrant, 0, 4).Draw(t, "grants"))
		if d == nil {
			if err := Validate(got); err != nil {
				t.Fatalf("composed policy invalid: %v", err)
			}
			return
		}
		if denialIn(d) == nil {
			t.Fatalf("refusal %v holds no denial", d)
		}
		if d.Error() == "" || denialIn(d).Explain() == "" {
			t.Fatal("denial renders empty")
		}
	})
}

// TestComposeCarriesUnguardedFromTheBaseOnly: the base's unguarded roots
// reach the composed policy; requirements cannot unguard a root.
func TestComposeCarriesUnguardedFromTheBaseOnly(t *testing.T) {
	base := Policy{WritableRoots: []string{"/ws", "/cache"}, Unguarded: []string{"/cache"}}
	req := Policy{WritableRoots: []string{"/ws", "/cache"}, Unguarded: []string{"/ws"}}
	got, err := Compose(base, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Unguarded, []string{"/cache"}) {
		t.Fatalf("unguarded %q, want only the base's /cache", got.Unguarded)
	}
	if err := Validate(Policy{Unguarded: []string{"rel"}}); err == nil {
		t.Fatal("a relative unguarded root was accepted")
	}
}
