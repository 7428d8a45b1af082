package hashline

import (
	"fmt"
	"hash/fnv"
	"testing"

	"pgregory.net/rapid"
)

func fnvRef(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

func TestAnchorOfMatchesFNV1a64(t *testing.T) {
	for _, line := range []string{"", "a", "package main", "\xff\xfe not utf-8", "tab\there", "héllo wörld", "ends with cr\r"} {
		want := fmt.Sprintf("%016x", fnvRef([]byte(line)))[:AnchorLen]
		if got := AnchorOf(line); got != want {
			t.Errorf("AnchorOf(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestDigestMatchesFNV1a64AndLength(t *testing.T) {
	for _, c := range []string{"", "a", "a\n", "a\r\nb\r\n", bom + "x", string(make([]byte, 1000))} {
		want := fmt.Sprintf("%016x-%d", fnvRef([]byte(c)), len(c))
		if got := Digest([]byte(c)); got != want {
			t.Errorf("Digest(%q) = %q, want %q", c, got, want)
		}
	}
}

func TestDigestForm(t *testing.T) {
	for s, want := range map[string]bool{
		Digest([]byte("hi\n")):  true,
		Digest(nil):             true,
		"33734a193006ba70-3":    true,
		"33734A193006BA70-3":    false,
		"33734a193006ba7-3":     false,
		"33734a193006ba70":      false,
		"33734a193006ba70-":     false,
		"33734a193006ba70-03":   false,
		"33734a193006ba70-3x":   false,
		"33734a193006ba70--3":   false,
		"stale":                 false,
		"":                      false,
		"33734a193006ba70-1e10": false,
	} {
		if got := DigestForm(s); got != want {
			t.Errorf("DigestForm(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestDigestFormOfEveryDigest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		if d := Digest(rapid.SliceOf(rapid.Byte()).Draw(t, "content")); !DigestForm(d) {
			t.Fatalf("Digest gave %q, which DigestForm refuses", d)
		}
	})
}
