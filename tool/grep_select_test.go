package tool

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentloom/loom/internal/search"
)

// shownFiles lists the files of a grep text's match lines, in order.
func shownFiles(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if f, _, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "[") && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// TestGrepGlobOnlyNarrows: on both engines a glob narrows the search
// and hidden and .gitignored files stay skipped, as the description
// says (ripgrep's own --glob would admit them); a path argument naming
// a hidden directory or an ignored file searches it.
func TestGrepGlobOnlyNarrows(t *testing.T) {
	t.Parallel()
	for engine, c := range engineCalls(t, grepTree) {
		for _, tt := range []struct {
			path, glob string
			want       []string
		}{
			{"", "*.txt", []string{"a/b.txt", "a.txt", "crlf.txt", "deep/er/est.txt"}},
			{"", "*.go", []string{"src/main.go"}},
			{"", "*.log", nil},
			{"", "*", []string{"a/b.txt", "a.txt", "crlf.txt", "deep/er/est.txt", "src/main.go"}},
			{"", "**/h.txt", nil},
			{"", "!*.txt", []string{"src/main.go"}},
			{".hidden", "*.txt", []string{".hidden/h.txt"}},
			{"src/gen", "*.go", []string{"src/gen/x.go"}},
			{"debug.log", "*.go", []string{"debug.log"}},
		} {
			args := map[string]any{"pattern": "(?i)needle", "glob": tt.glob}
			if tt.path != "" {
				args["path"] = tt.path
			}
			o := runGrepArgs(t, c, args)
			if d := grepDetails(t, o); o.IsError || d.Engine != engine {
				t.Fatalf("%s: %v: engine %q: %s", engine, args, d.Engine, o.Text)
			}
			if got := shownFiles(o.Text); !slices.Equal(got, tt.want) {
				t.Errorf("%s: path %q glob %q: files %q, want %q", engine, tt.path, tt.glob, got, tt.want)
			}
		}
	}
}

// TestGrepSaysHowManyWereLeftAtTheCap: a file of one matching line more
// than search.MaxScanMatches yields that many on both engines, and the
// outcome says the search stopped and that at least one more was found.
func TestGrepSaysHowManyWereLeftAtTheCap(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range search.MaxScanMatches + 1 {
		fmt.Fprintf(&b, "hit %d\n", i)
	}
	for engine, c := range engineCalls(t, map[string]string{"many.txt": b.String()}) {
		o := runGrepArgs(t, c, map[string]any{"pattern": "hit"})
		d := grepDetails(t, o)
		if o.IsError || d.Engine != engine || d.Matches != search.MaxScanMatches || !d.Stopped || d.Left < 1 {
			t.Errorf("%s: IsError=%v engine %q matches %d stopped %v left %d", engine, o.IsError, d.Engine, d.Matches, d.Stopped, d.Left)
		}
		if want := fmt.Sprintf("stopped after %d matching lines (at least %d more were found)", search.MaxScanMatches, d.Left); !strings.Contains(o.Text, want) {
			t.Errorf("%s: the text does not say %q: %s", engine, want, o.Text[max(0, len(o.Text)-300):])
		}
	}
}
