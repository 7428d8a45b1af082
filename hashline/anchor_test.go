package hashline

import (
	"fmt"
	"hash/fnv"
	"testing"
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
