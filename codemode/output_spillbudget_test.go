package codemode

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// TestProgramStdoutShowsASpillBudgetRefusal: a program's stdout the
// session's blob budget refuses is its head and tail with a line saying
// it was not kept and why, not a spill failure; the control, under the
// default budget, names the blob.
func TestProgramStdoutShowsASpillBudgetRefusal(t *testing.T) {
	t.Parallel()
	stdout := []byte("first\n" + strings.Repeat(strings.Repeat("x", 99)+"\n", 2048) + "last\n")
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
			c := &tool.Call{Blobs: store}
			out := newProgramOutput(c)
			out.add(c, sandbox.Output{Stream: sandbox.Stdout, Bytes: stdout})
			text, o, err := out.finish()
			if err != nil || o == nil {
				t.Fatalf("finish: %v, %v", o, err)
			}
			if kept := o.NotKept == ""; kept != tt.kept {
				t.Fatalf("kept = %v, want %v: %.300s", kept, tt.kept, text)
			}
			want := []string{"first\n", "last\n", o.Path}
			if !tt.kept {
				want = []string{"first\n", "last\n", "stdout was not kept", "budget"}
			}
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Fatalf("text lacks %q: %.600s", w, text)
				}
			}
		})
	}
}
