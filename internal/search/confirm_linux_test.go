package search

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConfirmKeepsOnlyWhatTheFilesHold feeds Confirm results as ripgrep
// could report them after a race, and checks what it keeps: lines the
// files hold at those numbers stand; a changed line, a line past the
// end, a file reached through a link (even one inside the root), a FIFO
// and a path outside the root are dropped, counted and taken off
// Matches and Files. Control: reading the linked file by path (following
// the link, as ripgrep does) returns the line Confirm refused.
func TestConfirmKeepsOnlyWhatTheFilesHold(t *testing.T) {
	t.Parallel()
	outside := fixture(t, map[string]string{"secret.txt": "secret line\n"})
	root := fixture(t, map[string]string{
		"a.txt":       "one\ntwo\nthree\n",
		"b/c.txt":     "x\ny needle\n",
		"same.txt":    "secret line\n",
		"link":        "->" + outside,
		"inner":       "->b",
		"d/.keep":     "",
		"noeol.txt":   "last",
		"crlf.txt":    "first\r\nsecond\r\n",
		"changed.txt": "now\n",
	})
	mkfifo(t, filepath.Join(root, "fifo"))
	if data, err := os.ReadFile(filepath.Join(root, "link", "secret.txt")); err != nil || string(data) != "secret line\n" {
		t.Fatalf("control: reading through the link by path = %q, %v", data, err)
	}
	hit := func(rel string, line int, text string, match bool) Hit {
		return Hit{Path: filepath.Join(root, rel), Line: line, Text: text, Match: match}
	}
	good := []Hit{
		hit("a.txt", 1, "one", false), hit("a.txt", 2, "two", true), hit("a.txt", 3, "three", false),
		hit("b/c.txt", 2, "y needle", true),
		hit("crlf.txt", 2, "second", true),
		hit("noeol.txt", 1, "last", true),
		hit("same.txt", 1, "secret line", true),
	}
	bad := []Hit{
		hit("a.txt", 4, "four", true),
		hit("changed.txt", 1, "then", true),
		hit("fifo", 1, "x", true),
		hit("inner/c.txt", 2, "y needle", true),
		hit("link/secret.txt", 1, "secret line", true),
		hit("missing.txt", 1, "x", true),
		{Path: filepath.Join(outside, "secret.txt"), Line: 1, Text: "secret line", Match: true},
	}
	all := sortHits(append(append([]Hit(nil), good...), bad...))
	in := Result{Hits: all, Matches: 5 + len(bad), Files: 5 + 6}
	got := Confirm(context.Background(), root, in, len(all), 1)
	want := Result{Hits: sortHits(append([]Hit(nil), good...)), Matches: 5, Files: 5, Unconfirmed: len(bad)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Confirm (-want +got):\n%s", diff)
	}
}

// TestConfirmReadsOnlyWhatIsShown: with room for one match, Confirm
// reads files in order until one confirms, leaves the files after it
// unread (their hits and counts stand), and never reads more than each
// file's lines up to its last hit.
func TestConfirmReadsOnlyWhatIsShown(t *testing.T) {
	t.Parallel()
	root := fixture(t, map[string]string{"1.txt": "changed\n", "2.txt": "kept\n", "3.txt": "changed too\n"})
	in := Result{Hits: []Hit{
		{Path: filepath.Join(root, "1.txt"), Line: 1, Text: "was", Match: true},
		{Path: filepath.Join(root, "2.txt"), Line: 1, Text: "kept", Match: true},
		{Path: filepath.Join(root, "3.txt"), Line: 1, Text: "was too", Match: true},
	}, Matches: 3, Files: 3}
	got := Confirm(context.Background(), root, in, 1, 0)
	want := Result{Hits: in.Hits[1:], Matches: 2, Files: 2, Unconfirmed: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Confirm (-want +got):\n%s", diff)
	}
}

// TestConfirmAFileRoot: a file root's hits are confirmed against the
// file itself; the same file through a link is refused.
func TestConfirmAFileRoot(t *testing.T) {
	t.Parallel()
	root := fixture(t, map[string]string{"f.txt": "alpha\nbeta\n", "l.txt": "->f.txt"})
	for _, tt := range []struct {
		name string
		kept int
	}{{"f.txt", 1}, {"l.txt", 0}} {
		p := filepath.Join(root, tt.name)
		in := Result{Hits: []Hit{{Path: p, Line: 2, Text: "beta", Match: true}}, Matches: 1, Files: 1}
		if got := Confirm(context.Background(), p, in, 10, 0); got.Matches != tt.kept || got.Unconfirmed != 1-tt.kept {
			t.Errorf("%s: %+v, want %d kept", tt.name, got, tt.kept)
		}
	}
}
