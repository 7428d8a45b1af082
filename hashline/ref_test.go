package hashline

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParseRef(t *testing.T) {
	tests := []struct {
		in   string
		want Ref
		ok   bool
	}{
		{"1:abcdef01", Ref{1, "abcdef01"}, true},
		{"12:00000000", Ref{12, "00000000"}, true},
		{"007:abcdef01", Ref{7, "abcdef01"}, true},
		{"0:abcdef01", Ref{}, false},
		{"00:abcdef01", Ref{}, false},
		{"-1:abcdef01", Ref{}, false},
		{"+1:abcdef01", Ref{}, false},
		{" 1:abcdef01", Ref{}, false},
		{"1:abcdef01 ", Ref{}, false},
		{"1:ABCDEF01", Ref{}, false},
		{"1:abcdef0", Ref{}, false},
		{"1:abcdef012", Ref{}, false},
		{"1:abcdef01|text", Ref{}, false},
		{"1abcdef01", Ref{}, false},
		{":abcdef01", Ref{}, false},
		{"1:", Ref{}, false},
		{"", Ref{}, false},
		{"99999999999999999999999:abcdef01", Ref{}, false},
	}
	for _, tt := range tests {
		got, err := ParseRef(tt.in)
		if tt.ok {
			if err != nil || got != tt.want {
				t.Errorf("ParseRef(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			continue
		}
		var re *RefError
		if !errors.As(err, &re) || re.Code != CodeBadRef {
			t.Errorf("ParseRef(%q) = %+v, %v; want a *RefError", tt.in, got, err)
		}
	}
}

func TestRefJSON(t *testing.T) {
	h := Hunk{Op: OpReplace, Start: &Ref{3, "abcdef01"}, End: &Ref{4, "0123abcd"}, Lines: []string{"x"}}
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"op":"replace","start":"3:abcdef01","end":"4:0123abcd","lines":["x"]}`; string(data) != want {
		t.Errorf("json = %s, want %s", data, want)
	}
	back, err := DecodeHunks([]byte("[" + string(data) + "]"))
	if err != nil {
		t.Fatal(err)
	}
	if *back[0].Start != *h.Start || *back[0].End != *h.End {
		t.Errorf("round trip = %+v, want %+v", back[0], h)
	}
	var r Ref
	if err := json.Unmarshal([]byte(`"5:abcdef01"`), &r); err != nil || r != (Ref{5, "abcdef01"}) {
		t.Errorf("Unmarshal = %+v, %v", r, err)
	}
	if err := json.Unmarshal([]byte(`"5:nothex!!"`), &r); err == nil {
		t.Error("Unmarshal of a bad ref succeeded")
	}
	for _, bad := range []Ref{{0, "abcdef01"}, {1, "short"}, {1, "ABCDEF01"}} {
		if _, err := json.Marshal(bad); err == nil {
			t.Errorf("Marshal(%+v) succeeded", bad)
		}
	}
}
