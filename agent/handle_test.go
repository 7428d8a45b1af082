package agent

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestParseHandle(t *testing.T) {
	long := strings.Repeat("a", maxHandleBytes-len("#run-1"))
	tests := []struct {
		in      string
		want    Handle
		wantErr bool
	}{
		{in: "sub:main/scan-0123456789abcdef#run-1", want: Handle{"sub:main/scan-0123456789abcdef", "run-1"}},
		{in: "main#op", want: Handle{"main", "op"}},
		{in: "main#op@remote", want: Handle{"main", "op"}},
		{in: long + "#run-1", want: Handle{long, "run-1"}},
		{in: long + "a#run-1", wantErr: true}, // one past maxHandleBytes
		{in: "", wantErr: true},
		{in: "main", wantErr: true},
		{in: "#op", wantErr: true},
		{in: "main#", wantErr: true},
		{in: "main##op", wantErr: true},
		{in: "main#op#x", wantErr: true},
		{in: "main#op@", wantErr: true},
		{in: "main#op@a@b", wantErr: true},
		{in: "main#@remote", wantErr: true},
		{in: "ma@in#op", wantErr: true},
		{in: " main#op", wantErr: true},
		{in: "main#o p", wantErr: true},
		{in: "main#op\x00", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseHandle(tt.in)
		if tt.wantErr {
			if codeOf(err) != CodeMalformedHandle {
				t.Errorf("ParseHandle(%q) error = %v, want code %s", tt.in, err, CodeMalformedHandle)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseHandle(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestHandleRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := Handle{
			Strand:    rapid.StringMatching(`[a-z:/0-9-]{1,40}`).Draw(t, "strand"),
			Operation: rapid.StringMatching(`[a-z0-9-]{1,12}`).Draw(t, "op"),
		}
		got, err := ParseHandle(h.String())
		if err != nil || got != h {
			t.Fatalf("ParseHandle(%q) = %+v, %v", h.String(), got, err)
		}
	})
}

func FuzzParseHandle(f *testing.F) {
	for _, s := range []string{"main#op", "sub:main/x-0123456789abcdef#run-2", "a#b@c", "#", "@", "a#b@", "a@b#c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHandle(s)
		if err != nil {
			if codeOf(err) != CodeMalformedHandle {
				t.Fatalf("error %v has code %s", err, codeOf(err))
			}
			return
		}
		if h.Strand == "" || h.Operation == "" || strings.ContainsAny(h.Strand+h.Operation, "#@") {
			t.Fatalf("ParseHandle(%q) accepted a malformed handle %+v", s, h)
		}
		again, err := ParseHandle(h.String())
		if err != nil || again != h {
			t.Fatalf("round trip of %q: %+v, %v", s, again, err)
		}
	})
}

func TestSlug(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Scan the Auth module", "scan-the-auth-module"},
		{"  --a//b##c@@d--  ", "a-b-c-d"},
		{"", fallbackSlug},
		{"日本語", fallbackSlug},
		{strings.Repeat("a", maxSlugBytes), strings.Repeat("a", maxSlugBytes)},
		{strings.Repeat("a", maxSlugBytes+1), strings.Repeat("a", maxSlugBytes)},
		{strings.Repeat("a", maxSlugBytes-1) + " b", strings.Repeat("a", maxSlugBytes-1)},
	}
	for _, tt := range tests {
		if got := slug(tt.in); got != tt.want {
			t.Errorf("slug(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSlugGrammar(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := slug(rapid.String().Draw(t, "text"))
		if s == "" || len(s) > maxSlugBytes || strings.HasPrefix(s, "-") || strings.HasSuffix(s, "-") || strings.Contains(s, "--") {
			t.Fatalf("slug %q breaks the grammar", s)
		}
		for _, r := range s {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				t.Fatalf("slug %q holds %q", s, r)
			}
		}
	})
}
