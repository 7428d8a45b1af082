package job

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// spillBudgetCases are a session budget that keeps a 200 KiB output (the
// control) and one that refuses it.
var spillBudgetCases = []struct {
	name string
	opts blob.Options
	kept bool
}{
	{"default budget", blob.Options{}, true},
	{"budget spent", blob.Options{SessionBytes: blob.OverflowThreshold}, false},
}

// bigOutput is 200 KiB of lines, starting "first" and ending "last".
func bigOutput() []byte {
	body := strings.Repeat(strings.Repeat("x", 99)+"\n", 2048)
	return []byte("first\n" + body + "last\n")
}

// TestBashShowsASpillBudgetRefusal: a foreground command's output the
// session's blob budget refuses is shown as its head and tail with a
// line saying it was not kept and why, not as a failure; the control,
// under the default budget, names the blob.
func TestBashShowsASpillBudgetRefusal(t *testing.T) {
	for _, tt := range spillBudgetCases {
		t.Run(tt.name, func(t *testing.T) {
			store, err := blob.OpenWith(filepath.Join(t.TempDir(), "blobs"), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			c := &tool.Call{Blobs: store}
			out := newBashOutput(c)
			out.add(c, sandbox.Output{Stream: sandbox.Stdout, Bytes: bigOutput()})
			text, o, err := out.finish()
			if err != nil || o == nil {
				t.Fatalf("finish: %v, %v", o, err)
			}
			if kept := o.NotKept == ""; kept != tt.kept {
				t.Fatalf("kept = %v, want %v: %.300s", kept, tt.kept, text)
			}
			want := []string{"first\n", "last\n", o.Path}
			if !tt.kept {
				want = []string{"first\n", "last\n", "was not kept", "budget"}
			}
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Fatalf("text lacks %q: %.600s", w, text)
				}
			}
		})
	}
}

// TestJobSpillShowsASpillBudgetRefusal: a job whose stream spilled past
// the session's blob budget ends with a Spill that keeps the excerpts
// and says why the stream was not kept, and a poll says so; the
// control, under the default budget, names the blob.
func TestJobSpillShowsASpillBudgetRefusal(t *testing.T) {
	for _, tt := range spillBudgetCases {
		t.Run(tt.name, func(t *testing.T) {
			store, err := blob.OpenWith(filepath.Join(t.TempDir(), "blobs"), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			j := &job{out: NewTail(defaultTailBytes), errs: NewTail(defaultTailBytes),
				spools: [2]*blob.Spool{store.NewSpool(), store.NewSpool()}}
			data := bigOutput()
			j.out.Push(data)
			j.spools[0].Write(data)
			spill := j.finishSpools(store)
			if spill == nil || spill.Stdout == nil {
				t.Fatalf("no spill: %+v", spill)
			}
			if kept := spill.Stdout.NotKept == ""; kept != tt.kept {
				t.Fatalf("kept = %v, want %v", kept, tt.kept)
			}
			o := renderPoll(Polled{Row: Row{ID: "j1", State: Exited, Started: time.Now(), Spill: spill}}, time.Now())
			want := "whole stdout (" + strconv.Itoa(len(data)) + " bytes): " + spill.Stdout.Path
			if !tt.kept {
				want = "whole stdout (" + strconv.Itoa(len(data)) + " bytes) was not kept: this session"
			}
			if !strings.Contains(o.Text, want) {
				t.Fatalf("poll lacks %q:\n%s", want, o.Text)
			}
			if !tt.kept && !strings.Contains(spill.Stdout.Text("stdout"), "first\n") {
				t.Fatal("the refused spill lost its head excerpt")
			}
		})
	}
}
