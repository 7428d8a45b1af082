package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// TestHugeHandlesAreQuotedBounded: a job handle, a cursor or a job://
// path of 15 MiB is refused with a quote of its start and its length,
// never the value whole, by the tool itself (before Dispatch's outcome
// bound, which would cut the answer at tool.MaxOutcomeBytes). The
// rune-splitting value checks the quote ends on a rune boundary. Before
// the fix, job_poll, job_kill and job_send answered unknown_job with the
// 15 MiB handle in full, and fs_read job://<15 MiB> likewise.
func TestHugeHandlesAreQuotedBounded(t *testing.T) {
	t.Parallel()
	plane := job.NewPlane(nil, job.Options{})
	t.Cleanup(func() { plane.Close(context.Background()) })
	read := tool.ReadTool(job.Scheme(plane))
	tools := map[string]tool.Tool{read.Name: read}
	for _, tl := range job.Tools(plane) {
		tools[tl.Name] = tl
	}
	type probe struct {
		name, value, tool string
		args              map[string]any
		code              tool.Code
	}
	issue := strings.Repeat("z", 15<<20) // the size the issue reported
	probes := []probe{{"15 MiB", issue, job.PollToolName, map[string]any{"job": issue}, job.CodeUnknownJob}}
	for _, v := range []struct{ name, value string }{
		{"ascii", strings.Repeat("z", 1<<20)},
		{"runes", "z" + strings.Repeat("é", 1<<19)},
	} {
		probes = append(probes,
			probe{v.name, v.value, job.PollToolName, map[string]any{"job": v.value}, job.CodeUnknownJob},
			probe{v.name, v.value, job.PollToolName, map[string]any{"job": "j1-0000", "cursor": v.value}, job.CodeInvalidCursor},
			probe{v.name, v.value, job.KillToolName, map[string]any{"job": v.value}, job.CodeUnknownJob},
			probe{v.name, v.value, job.SendToolName, map[string]any{"job": v.value, "eof": true}, job.CodeUnknownJob},
			probe{v.name, v.value, read.Name, map[string]any{"path": job.SchemePrefix + v.value}, job.CodeUnknownJob},
			probe{v.name, v.value, read.Name, map[string]any{"path": job.SchemePrefix + v.value + "/more"}, job.CodeMalformedJobURI},
		)
	}
	for _, tc := range probes {
		t.Run(fmt.Sprintf("%s/%s/%s", tc.name, tc.tool, tc.code), func(t *testing.T) {
			raw, err := json.Marshal(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			// The tool's own answer: Run, not Dispatch.
			out := tools[tc.tool].Run(context.Background(), &tool.Call{Strand: "s"}, raw)
			if !out.IsError || out.Code != tc.code {
				t.Fatalf("got code %q, want %q: %.200q", out.Code, tc.code, out.Text)
			}
			if len(out.Text) > tool.MaxReasonBytes {
				t.Fatalf("the refusal is %d bytes: %.200q…", len(out.Text), out.Text)
			}
			if !utf8.ValidString(out.Text) {
				t.Errorf("the quote splits a rune: %q", out.Text)
			}
			if !strings.Contains(out.Text, tc.value[:16]) || !strings.Contains(out.Text, "…") {
				t.Errorf("the refusal does not quote the value's start: %q", out.Text)
			}
			if d, err := json.Marshal(out.Details); err != nil || len(d) > tool.MaxReasonBytes {
				t.Errorf("details: %d bytes, %v", len(d), err)
			}
		})
	}
}
