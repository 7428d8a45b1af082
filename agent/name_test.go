package agent

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/tool"
)

// callSite draws call-site coordinates from small alphabets so that equal
// draws are common.
func callSite(t *rapid.T, label string) Caller {
	c := Caller{
		Strand:      "main",
		OpID:        rapid.SampledFrom([]string{"op1", "op2", "op"}).Draw(t, label+"op"),
		StepID:      rapid.SampledFrom([]string{"s1", "s2", "1", ""}).Draw(t, label+"step"),
		SourceIndex: rapid.IntRange(0, 2).Draw(t, label+"index"),
	}
	if rapid.Bool().Draw(t, label+"program") {
		c.Minter = ProgramMinter(rapid.IntRange(0, 2).Draw(t, label+"ordinal"))
	}
	return c
}

func TestMintedNamesEqualExactlyWhenCallSitesAre(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := callSite(t, "a"), callSite(t, "b")
		purpose := rapid.StringMatching(`[a-z ]{1,10}`).Draw(t, "purpose")
		same := a.OpID == b.OpID && a.StepID == b.StepID && a.SourceIndex == b.SourceIndex && a.Minter == b.Minter
		if got := MintName(a, purpose) == MintName(b, purpose); got != same {
			t.Fatalf("names equal = %v, call sites equal = %v (%+v vs %+v)", got, same, a, b)
		}
	})
}

func TestModelTextNeverChangesTheDigest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := callSite(t, "")
		p1, p2 := rapid.String().Draw(t, "p1"), rapid.String().Draw(t, "p2")
		n1, n2 := MintName(c, p1), MintName(c, p2)
		d1, d2 := n1[strings.LastIndex(n1, "-")+1:], n2[strings.LastIndex(n2, "-")+1:]
		want := callSiteDigest(c.OpID, c.StepID, c.SourceIndex, c.Minter)
		if d1 != want || d2 != want {
			t.Fatalf("digests %q, %q; want %q", d1, d2, want)
		}
		if len(want) != digestHexChars {
			t.Fatalf("digest %q is not %d wide", want, digestHexChars)
		}
	})
}

// A step identifier longer than the slug cap still discriminates, because
// the discriminator never shares a field with a capped slug.
func TestLongStepsStillDiscriminate(t *testing.T) {
	step := strings.Repeat("0", 36)
	a := Caller{Strand: "main", OpID: "op", StepID: step + "a"}
	b := Caller{Strand: "main", OpID: "op", StepID: step + "b"}
	if MintName(a, "same purpose") == MintName(b, "same purpose") {
		t.Fatal("steps differing past the slug cap minted one name")
	}
}

func TestMintNameShape(t *testing.T) {
	c := Caller{Strand: "main", OpID: "op", StepID: "s", SourceIndex: 1}
	n := MintName(c, "Scan auth/ code#1")
	if !strings.HasPrefix(n, "sub:main/scan-auth-code-1-") || len(n) != len("sub:main/scan-auth-code-1-")+digestHexChars {
		t.Fatalf("name %q", n)
	}
	child := Caller{Strand: n, OpID: "run-1", StepID: "s"}
	g := MintName(child, "deeper")
	if !strings.HasPrefix(g, n+"/deeper-") || strings.Count(g, tool.SubagentPrefix) != 1 {
		t.Fatalf("grandchild name %q", g)
	}
	if _, err := ParseHandle(Handle{Strand: g, Operation: "run-1"}.String()); err != nil {
		t.Fatalf("minted name does not make a handle: %v", err)
	}
}
