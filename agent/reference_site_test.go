package agent

import (
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
	"pgregory.net/rapid"
)

// A replay of one call site reconciles onto the child it minted whatever
// purpose the replay carries: the digest, not the decorative slug, is
// what tells children apart, so one call site never holds two children.
func TestSpawnReplayWithAnotherPurposeReconciles(t *testing.T) {
	t.Parallel()
	g := newGate()
	a := NewAgency(g, Options{})
	defer a.Close()
	c := root("main", 1)
	first := mustSpawn(t, a, c, "Scan auth")
	again := mustSpawn(t, a, c, "Something else entirely")
	if !again.Reconciled || again.Handle != first.Handle {
		t.Fatalf("replay with another purpose: %+v, first %+v", again, first)
	}
	if again.Purpose != "Scan auth" {
		t.Errorf("reconciled purpose = %q, want the child's first", again.Purpose)
	}
	if kids, err := a.Roster(bg, c); err != nil || len(kids) != 1 {
		t.Fatalf("roster after the replay holds %d children, want 1: %+v (%v)", len(kids), kids, err)
	}
	g.release(first.Handle, "ok")
	waitOne(t, a, c, first.Handle)
	if n := g.turns.Load(); n != 1 {
		t.Fatalf("%d runs started, want 1", n)
	}
}

// Whatever purposes a sequence of spawns carries, the children minted are
// exactly the distinct call sites, and no two children share a digest
// under one parent.
func TestOneChildPerCallSite(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		a := NewAgency(echo, Options{FanOut: 64, SessionStrands: 64})
		defer a.Close()
		sites := map[CallSite]string{}
		for i := range rapid.IntRange(1, 12).Draw(t, "spawns") {
			c := callSite(t, "")
			purpose := rapid.StringMatching(`[A-Za-z][A-Za-z ]{0,11}`).Draw(t, "purpose")
			sp, err := a.Spawn(bg, c, SpawnRequest{Purpose: purpose, Prompt: "p", Detach: true})
			if err != nil {
				t.Fatalf("spawn %d: %v", i, err)
			}
			site := SiteOf(c)
			name, seen := sites[site]
			if seen != sp.Reconciled {
				t.Fatalf("spawn %d at a call site seen=%v: Reconciled=%v", i, seen, sp.Reconciled)
			}
			if seen && name != sp.Handle.Strand {
				t.Fatalf("spawn %d reconciled onto %s, want %s", i, sp.Handle.Strand, name)
			}
			sites[site] = sp.Handle.Strand
			if !strings.HasSuffix(sp.Handle.Strand, "-"+site.Digest) {
				t.Fatalf("child %s does not end in its call site's digest %s", sp.Handle.Strand, site.Digest)
			}
		}
		a.mu.Lock()
		n := len(a.strands)
		a.mu.Unlock()
		if n != len(sites) {
			t.Fatalf("%d children for %d call sites", n, len(sites))
		}
	})
}

// The tool says a replay's purpose was not taken, and names the child's.
func TestSpawnToolReplayWithAnotherPurpose(t *testing.T) {
	t.Parallel()
	a := NewAgency(newGate(), Options{})
	defer a.Close()
	r := registry(t, a)
	c := &tool.Call{Strand: "main", OpID: "op", StepID: "s"}
	first := dispatch(r, c, SpawnToolName, `{"purpose":"scan auth","prompt":"x"}`)
	o := dispatch(r, c, SpawnToolName, `{"purpose":"other work","prompt":"x"}`)
	d := o.Details.(SpawnDetails)
	if o.IsError || !d.Reconciled || d.Strand != first.Details.(SpawnDetails).Strand {
		t.Fatalf("replay: %+v", o)
	}
	if d.Purpose != "scan auth" || !strings.Contains(o.Text, `"scan auth"`) || !strings.Contains(o.Text, "not taken") {
		t.Errorf("the replay's answer does not say the child keeps its purpose: %q %+v", o.Text, d)
	}
}
