package blob_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
)

func TestParseRefBounds(t *testing.T) {
	valid := strings.Repeat("0123456789abcdef", 4)
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"exactly 64 lowercase hex", valid, true},
		{"all zeros", strings.Repeat("0", 64), true},
		{"all f", strings.Repeat("f", 64), true},
		{"empty", "", false},
		{"63 characters", valid[:63], false},
		{"65 characters", valid + "0", false},
		{"uppercase hex", strings.ToUpper(valid), false},
		{"one uppercase", "A" + valid[1:], false},
		{"g just past f", valid[:63] + "g", false},
		{"slash", valid[:10] + "/" + valid[11:], false},
		{"dot dot", "../" + valid[3:], false},
		{"leading space", " " + valid[1:], false},
		{"trailing newline", valid[:63] + "\n", false},
		{"prefixed", "sha256:" + valid[7:], false},
		{"NUL", valid[:5] + "\x00" + valid[6:], false},
		{"multi-byte rune of equal byte length", "é" + valid[2:], false},
		{"huge", strings.Repeat("a", 1<<20), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := blob.ParseRef(tt.in)
			if tt.ok {
				if err != nil || string(r) != tt.in || !r.Valid() {
					t.Fatalf("ParseRef(%q) = %q, %v; want it back", tt.in, r, err)
				}
				return
			}
			if err == nil || r != "" {
				t.Fatalf("ParseRef(%q) = %q, nil; want refusal", tt.in, r)
			}
			wantCode(t, err, blob.CodeInvalidRef)
			if blob.Ref(tt.in).Valid() {
				t.Fatalf("Ref(%q).Valid() = true", tt.in)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("error message is %d bytes; the input must be quoted in bounded form", len(err.Error()))
			}
		})
	}
}

func TestSumIsSHA256Hex(t *testing.T) {
	for _, in := range []string{"", "a", "hello\n", strings.Repeat("x", 1<<16)} {
		d := sha256.Sum256([]byte(in))
		want := hex.EncodeToString(d[:])
		if got := blob.Sum([]byte(in)); string(got) != want {
			t.Fatalf("Sum(%.10q) = %s, want %s", in, got, want)
		}
		if _, err := blob.ParseRef(want); err != nil {
			t.Fatalf("ParseRef(Sum) refused: %v", err)
		}
	}
}
