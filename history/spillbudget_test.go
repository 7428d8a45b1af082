package history

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/tool"
)

// TestSearchToolShowsASpillBudgetRefusal: a long read the session's blob
// budget refuses is answered in band, with the read's head and tail and
// a sentence saying it was not kept and why; the control is the same
// read under the default budget, spilled whole to a path.
func TestSearchToolShowsASpillBudgetRefusal(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 2*blob.OverflowThreshold/16)
	tl := SearchTool(&fakeHistory{text: big}, nil)
	for _, tt := range []struct {
		name string
		opts blob.Options
		kept bool
	}{
		{"default budget", blob.Options{}, true},
		{"budget spent", blob.Options{SessionBytes: blob.OverflowThreshold}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store, err := blob.OpenWith(filepath.Join(t.TempDir(), "blobs"), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			o := run(t, tl, &tool.Call{Strand: "s1", Blobs: store}, `{"action":"read","entry":"big"}`)
			d, ok := o.Details.(ReadDetails)
			if o.IsError || !ok || d.Overflow == nil {
				t.Fatalf("read: error=%v %q %.300s", o.IsError, o.Code, o.Text)
			}
			if kept := d.Overflow.NotKept == ""; kept != tt.kept {
				t.Fatalf("kept = %v, want %v: %.300s", kept, tt.kept, o.Text)
			}
			if !tt.kept && (!strings.Contains(o.Text, "was not kept") || !strings.Contains(o.Text, "budget") ||
				!strings.Contains(o.Text, d.Overflow.HeadExcerpt[:64]) || !strings.Contains(o.Text, d.Overflow.TailExcerpt[len(d.Overflow.TailExcerpt)-64:])) {
				t.Fatalf("the refusal is not shown with the excerpts: %.600s", o.Text)
			}
		})
	}
}
