package hashline

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// FuzzDecodeHunksApply decodes arbitrary bytes as hunks, plans them over
// arbitrary content and applies the plan. Nothing may panic; a success must
// keep the package invariants. Because arbitrary refs almost never carry the
// right anchor, each input is tried twice: as given, and with every in-range
// ref's anchor replaced by the line's real one.
func FuzzDecodeHunksApply(f *testing.F) {
	seeds := []struct{ hunks, content string }{
		{`[{"op":"append","lines":["x"]}]`, ""},
		{`[{"op":"append","lines":["x"]}]`, "a"},
		{`[{"op":"replace","start":"1:00000000","lines":["A"]}]`, "a\nb\n"},
		{`[{"op":"replace","start":"1:00000000","end":"2:00000000","lines":[]}]`, "a\r\nb\r\nc"},
		{`[{"op":"insert_before","start":"1:00000000","lines":["0\n1"]}]`, bom + "a\n"},
		{`[{"op":"insert_after","start":"2:00000000","lines":["",""]},{"op":"append","lines":["z\r\n"]}]`, "a\nb"},
		{`[{"op":"replace","start":"2:00000000","lines":["x"]},{"op":"replace","start":"2:00000000","lines":["y"]}]`, "a\nb\nc\n"},
		{`[{"op":"replace","start":"3:00000000","end":"1:00000000","lines":[]}]`, "a\nb\nc\n"},
		{`[{"op":"replace","start":"4:00000000","lines":[]}]`, "a\nb\nc\n"},
		{`[{"op":"append","lines":["1:abcdef01|x"]}]`, "a\n"},
		{`[{"op":"append","lines":["x"],"extra":1}]`, "a\n"},
		{`[{"op":"delete"}]`, "a\n"},
		{`[null, {"op": "append"}]`, "a\r"},
		{`[]`, ""},
		{`not json`, "a\n"},
	}
	for _, s := range seeds {
		f.Add([]byte(s.hunks), []byte(s.content))
	}
	f.Fuzz(func(t *testing.T, data, content []byte) {
		hunks, err := DecodeHunks(data)
		if err != nil {
			var he *HunkError
			if !errors.As(err, &he) || he.Code == "" || he.Error() == "" {
				t.Fatalf("DecodeHunks error %v is not a coded *HunkError", err)
			}
			return
		}
		checkPlan(t, content, hunks)
		checkPlan(t, content, withRealAnchors(content, hunks))
	})
}

// withRealAnchors copies hunks, giving every ref inside content the anchor
// its line really has.
func withRealAnchors(content []byte, hunks []Hunk) []Hunk {
	lines := Annotate(content)
	fix := func(r *Ref) *Ref {
		if r == nil || r.Line > len(lines) {
			return r
		}
		return &Ref{Line: r.Line, Anchor: lines[r.Line-1].Anchor}
	}
	out := slices.Clone(hunks)
	for i := range out {
		out[i].Start, out[i].End = fix(out[i].Start), fix(out[i].End)
	}
	return out
}

func checkPlan(t *testing.T, content []byte, hunks []Hunk) {
	orig := bytes.Clone(content)
	plan, err := NewPlan(content, hunks)
	if err != nil {
		if CodeOf(err) == "" || err.Error() == "" {
			t.Fatalf("NewPlan error %v is not coded", err)
		}
		return
	}
	applied, err := plan.Apply(content)
	if err != nil {
		t.Fatalf("Apply over the planned content: %v", err)
	}
	if !bytes.Equal(content, orig) {
		t.Fatal("Apply modified its input")
	}
	lines := Annotate(applied.Content)
	if applied.LineCount != len(lines) {
		t.Fatalf("Applied.LineCount %d, Annotate(Content) has %d lines", applied.LineCount, len(lines))
	}
	if applied.Digest != Digest(applied.Content) {
		t.Fatal("Applied.Digest is not the digest of Content")
	}
	if len(applied.Regions) != len(hunks) {
		t.Fatalf("%d regions for %d hunks", len(applied.Regions), len(hunks))
	}
	for i, r := range applied.Regions {
		if r.Start < 1 || r.End < r.Start-1 || r.End > len(lines) {
			t.Fatalf("region %d %+v outside 1..%d", i, r, len(lines))
		}
	}
	text, complete, stopped := RenderRegions(lines, applied.Regions, DefaultFreshContext, MaxFreshAnchorBytes)
	if len(text) > MaxFreshAnchorBytes || complete != (stopped == 0) {
		t.Fatalf("RenderRegions: %d bytes, complete %v, stopped at %d", len(text), complete, stopped)
	}
	again, err := plan.Apply(applied.Content)
	if bytes.Equal(applied.Content, content) {
		if err != nil || !bytes.Equal(again.Content, applied.Content) {
			t.Fatalf("re-applying a no-op edit: %v", err)
		}
	} else if !isCode(err, CodeStaleDigest) {
		t.Fatalf("re-applying on the post-image: %v", err)
	}
}
