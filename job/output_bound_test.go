package job_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// testOutputBound is the lowered bound of TestOutputBoundEndsJob: odd, so
// no chunking lines up with it by chance.
const testOutputBound = 1<<20 + 7

// TestOutputBoundEndsJob: a job writing past the plane's output bound is
// stopped by the broker at the bound; its row says Killed with cause
// output_bound, it delivered exactly the bound, the spill holds exactly
// that much, and job_poll says the output bound ended it. The control
// writes exactly the bound and exits by itself, neither killed nor
// limited.
func TestOutputBoundEndsJob(t *testing.T) {
	t.Parallel()
	store, err := blob.Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	f := newFixture(t, job.Options{MaxOutputBytes: testOutputBound, Blobs: store})
	cases := []struct {
		name    string
		bytes   int
		limited bool
	}{
		{"past the bound", 16 << 20, true},
		{"exactly the bound", testOutputBound, false},
	}
	reg, err := tool.NewRegistry(job.Tools(f.plane)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := f.start(mainOwner, f.sh(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' A", tc.bytes)))
			p := f.waitEnd(id)
			if got := p.Stdout.Received; got != testOutputBound {
				t.Fatalf("received %d bytes, want exactly the bound %d", got, testOutputBound)
			}
			limited := p.Exit != nil && p.Exit.OutputLimited
			if limited != tc.limited {
				t.Fatalf("OutputLimited = %v, want %v (row %+v)", limited, tc.limited, p.Row)
			}
			if tc.limited && (p.State != job.Killed || p.Cause != job.StopOutputBound) {
				t.Fatalf("state %s cause %q, want killed by the output bound", p.State, p.Cause)
			}
			if !tc.limited && (p.State != job.Exited || p.Cause != "") {
				t.Fatalf("state %s cause %q, want exited by itself", p.State, p.Cause)
			}
			if p.Spill == nil || p.Spill.Stdout == nil || p.Spill.Stdout.Size != testOutputBound {
				t.Fatalf("spill %+v, want the whole %d bytes stored", p.Spill, testOutputBound)
			}
			out := dispatch(t, reg, mainOwner.Strand, job.PollToolName, map[string]any{"job": string(id)})
			if says := strings.Contains(out.Text, "output bound ended it"); says != tc.limited {
				t.Fatalf("job_poll says the output bound ended it: %v, want %v:\n%.300s", says, tc.limited, out.Text)
			}
		})
	}
}

// TestOutputBoundOption: a host can lower the bound, never raise it past
// tool.MaxCommandOutputBytes, and zero means the default.
func TestOutputBoundOption(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set, want int64
	}{
		{0, tool.MaxCommandOutputBytes},
		{-1, tool.MaxCommandOutputBytes},
		{4096, 4096},
		{tool.MaxCommandOutputBytes + 1, tool.MaxCommandOutputBytes},
	} {
		got := job.NewPlane(nil, job.Options{MaxOutputBytes: tc.set}).Options().MaxOutputBytes
		if got != tc.want {
			t.Errorf("MaxOutputBytes %d -> %d, want %d", tc.set, got, tc.want)
		}
	}
}
