package history

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// lister answers hs, or err.
type lister struct {
	hs  []NoteHeading
	err error
}

func (l lister) NoteHeadings(_ context.Context, limit int) ([]NoteHeading, error) {
	return l.hs[:min(limit, len(l.hs))], l.err
}

func headings(n int) []NoteHeading {
	var hs []NoteHeading
	for i := range n {
		hs = append(hs, NoteHeading{Title: fmt.Sprintf("title %03d", n-1-i), Description: strings.Repeat("d", 150), Kind: Fact, Session: "s", Time: day0})
	}
	return hs
}

// lineBytes is the bytes one heading of headings takes in the index.
var lineBytes = len(noteLine(headings(1)[0]))

func TestNotesIndexBound(t *testing.T) {
	ctx := context.Background()
	if idx, err := IndexNotes(ctx, lister{hs: headings(MaxNotes)}); err != nil || len(idx.Text) > MaxNotesIndexBytes || idx.Omitted == 0 {
		t.Fatalf("at the ceiling: %d bytes, %d omitted, %v", len(idx.Text), idx.Omitted, err)
	}
	empty, err := IndexNotes(ctx, lister{})
	if err != nil || empty.Text != "" || empty.Omitted != 0 {
		t.Fatalf("no notes: %+v, %v", empty, err)
	}
	if idx, err := IndexNotes(ctx, nil); err != nil || idx.Text != "" {
		t.Fatalf("nil lister: %+v, %v", idx, err)
	}
	_, err = IndexNotes(ctx, lister{err: refuse(CodeMemoryBusy, "busy")})
	wantCode(t, err, CodeMemoryBusy)

	// budget is exactly the bytes of an index of fits headings: the
	// frame measured on a one-note index.
	const fits = 10
	frame := len(renderNotesIndex(headings(1), MaxNotesIndexBytes).Text) - lineBytes
	budget := frame + fits*lineBytes
	cases := []struct {
		name        string
		n           int
		budget      int
		wantShown   int
		wantOmitted int
	}{
		{"one", 1, budget, 1, 0},
		{"exactly as many as fit", fits, budget, fits, 0},
		{"one byte short", fits, budget - 1, fits - 1, 1},
		// One more: the omitted line takes room too, so two go.
		{"one past the budget", fits + 1, budget, fits - 1, 2},
		{"the lifetime ceiling", MaxNotes, budget, fits - 1, MaxNotes - fits + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			idx := renderNotesIndex(headings(tc.n), tc.budget)
			if len(idx.Text) > tc.budget {
				t.Fatalf("%d bytes, over %d", len(idx.Text), tc.budget)
			}
			if len(idx.Shown) != tc.wantShown || idx.Omitted != tc.wantOmitted {
				t.Fatalf("shown %d omitted %d, want %d and %d", len(idx.Shown), idx.Omitted, tc.wantShown, tc.wantOmitted)
			}
			said := fmt.Sprintf("(%d older notes not listed", tc.wantOmitted)
			if strings.Contains(idx.Text, said) != (tc.wantOmitted > 0) {
				t.Fatalf("the text does not say %q rightly:\n%s", said, idx.Text)
			}
			newest := fmt.Sprintf("title %03d", tc.n-1)
			if !strings.Contains(idx.Text, newest) {
				t.Fatalf("the newest note %q is not shown", newest)
			}
		})
	}
}

// Whatever headings a NoteLister answers, the index stays under its
// budget, shows the newest ones in order, counts the rest, and no text
// can close its fence or break its one line per note.
func TestNotesIndexProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		field := rapid.StringMatching(`[a-z<>\x60\n ]{0,200}`)
		n := rapid.IntRange(0, 80).Draw(t, "n")
		var hs []NoteHeading
		for range n {
			hs = append(hs, NoteHeading{Title: field.Draw(t, "title"), Description: field.Draw(t, "desc"), Kind: Decision})
		}
		idx := renderNotesIndex(hs, MaxNotesIndexBytes)
		if len(idx.Text) > MaxNotesIndexBytes {
			t.Fatalf("%d bytes", len(idx.Text))
		}
		if len(idx.Shown)+idx.Omitted != n {
			t.Fatalf("shown %d + omitted %d != %d", len(idx.Shown), idx.Omitted, n)
		}
		for i, h := range idx.Shown {
			if h != hs[i] {
				t.Fatalf("shown %d is not the %d-th newest", i, i)
			}
		}
		if n == 0 {
			return
		}
		_, inside, _ := strings.Cut(idx.Text, ">>>\n")
		inside, _, _ = strings.Cut(inside, "<<<end-quoted-history")
		if strings.Contains(inside, "<<<") || strings.Contains(inside, ">>>") {
			t.Fatalf("a heading imitates a fence:\n%s", idx.Text)
		}
		if lines := strings.Count(inside, "\n"); len(idx.Shown) > 0 && lines != len(idx.Shown) {
			t.Fatalf("%d lines for %d headings:\n%s", lines, len(idx.Shown), inside)
		}
	})
}
