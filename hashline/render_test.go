package hashline

import (
	"strings"
	"testing"
)

func TestRenderLine(t *testing.T) {
	l := Line{Number: 12, Anchor: AnchorOf("x := 1"), Text: "x := 1"}
	want := "12:" + AnchorOf("x := 1") + "|x := 1"
	if got := RenderLine(l); got != want {
		t.Errorf("RenderLine = %q, want %q", got, want)
	}
	if got := RenderLines([]Line{l, l}); got != want+"\n"+want+"\n" {
		t.Errorf("RenderLines = %q", got)
	}
	if got := RenderLines(nil); got != "" {
		t.Errorf("RenderLines(nil) = %q, want empty", got)
	}
	for _, n := range []int{0, -1, 9, 10, -10, 1 << 62, -1 << 63} {
		l := Line{Number: n, Anchor: "abcdef01", Text: "t"}
		if len(RenderLine(l)) != renderedLen(l) {
			t.Errorf("renderedLen(%+v) = %d, rendered %q", l, renderedLen(l), RenderLine(l))
		}
	}
	for _, l := range Annotate([]byte("a\n\nlast|with:pipes")) {
		back, ok := parseRendered(RenderLine(l))
		if !ok || back != l {
			t.Errorf("round trip of %+v gave %+v, %v", l, back, ok)
		}
		if len(RenderLine(l)) != renderedLen(l) {
			t.Errorf("renderedLen(%+v) = %d, rendered %d bytes", l, renderedLen(l), len(RenderLine(l)))
		}
	}
}

func TestHasDisplayPrefix(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"1:abcdef01|", true},
		{"1:abcdef01|text", true},
		{"12345:00000000|x", true},
		{"007:abcdef01|x", true},
		{"deadbeef", false},
		{"deadbeef = 1", false},
		{"abcdef01|text", false},
		{":abcdef01|x", false},
		{"1:abcdef01", false},
		{"1:abcdef01 |x", false},
		{"1:ABCDEF01|x", false},
		{"1:abcdef0|x", false},
		{"1:abcdef012|x", false},
		{"1:abcdefg1|x", false},
		{"1;abcdef01|x", false},
		{" 1:abcdef01|x", false},
		{"-1:abcdef01|x", false},
		{"1", false},
		{"1:", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := HasDisplayPrefix(tt.s); got != tt.want {
			t.Errorf("HasDisplayPrefix(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestWindow(t *testing.T) {
	lines := Annotate([]byte(strings.Repeat("x\n", 5)))
	tests := []struct {
		name          string
		offset, limit int
		first, count  int
		next          int
		more          bool
	}{
		{"all", 1, 0, 1, 5, 0, false},
		{"negative limit is all", 1, -3, 1, 5, 0, false},
		{"offset 0 reads as 1", 0, 2, 1, 2, 3, true},
		{"negative offset reads as 1", -7, 0, 1, 5, 0, false},
		{"limit 1", 1, 1, 1, 1, 2, true},
		{"limit one short of the end", 1, 4, 1, 4, 5, true},
		{"limit exactly to the end", 1, 5, 1, 5, 0, false},
		{"limit one past the end", 1, 6, 1, 5, 0, false},
		{"middle", 2, 2, 2, 2, 4, true},
		{"last line", 5, 0, 5, 1, 0, false},
		{"last line limit 1", 5, 1, 5, 1, 0, false},
		{"one past the last line", 6, 0, 0, 0, 0, false},
		{"far past the last line", 100, 10, 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			win, next, more := Window(lines, tt.offset, tt.limit)
			if len(win) != tt.count || next != tt.next || more != tt.more {
				t.Fatalf("Window(%d, %d) = %d lines, next %d, more %v; want %d, %d, %v",
					tt.offset, tt.limit, len(win), next, more, tt.count, tt.next, tt.more)
			}
			if tt.count > 0 && win[0].Number != tt.first {
				t.Errorf("first line %d, want %d", win[0].Number, tt.first)
			}
		})
	}
	if win, next, more := Window(nil, 1, 10); len(win) != 0 || next != 0 || more {
		t.Errorf("Window(nil) = %v, %d, %v", win, next, more)
	}
}
