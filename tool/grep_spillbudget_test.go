package tool

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
)

// TestGrepShowsASpillBudgetRefusal: grep output the session's blob
// budget refuses is a successful answer showing the output's head and
// tail and saying it was not kept and why; the control is the same
// search under the default budget, spilled whole to a path.
func TestGrepShowsASpillBudgetRefusal(t *testing.T) {
	line := strings.Repeat("z", 200) + "\n"
	files := map[string]string{"big.txt": strings.Repeat(line, 600)}
	for _, tt := range []struct {
		name string
		opts blob.Options
		kept bool
	}{
		{"default budget", blob.Options{}, true},
		{"budget spent", blob.Options{SessionBytes: blob.OverflowThreshold}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := grepCall(t, files, false)
			store, err := blob.OpenWith(filepath.Join(filepath.Dir(c.Workspace), "budgeted"), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			c.Blobs = store
			o := runGrepArgs(t, c, map[string]any{"pattern": "z", "max_results": 600})
			d := grepDetails(t, o)
			if o.IsError || d.Overflow == nil {
				t.Fatalf("error=%v %q overflow=%v: %.300s", o.IsError, o.Code, d.Overflow, o.Text)
			}
			if kept := d.Overflow.NotKept == ""; kept != tt.kept {
				t.Fatalf("kept = %v, want %v: %.300s", kept, tt.kept, o.Text)
			}
			if !tt.kept && (!strings.Contains(o.Text, "was not kept") || !strings.HasPrefix(o.Text, d.Overflow.HeadExcerpt) ||
				!strings.HasSuffix(o.Text, d.Overflow.TailExcerpt)) {
				t.Fatalf("the refusal is not shown with the excerpts: %.600s", o.Text)
			}
		})
	}
}
