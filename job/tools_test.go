package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// dispatch runs one job tool call as strand through a registry.
func dispatch(t *testing.T, r *tool.Registry, strand, name string, args any) tool.Outcome {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	c := &tool.Call{Strand: strand, OpID: "op1", StepID: "step9"}
	return r.Dispatch(context.Background(), c, name, raw)
}

// detailCode is the stable code of an error outcome.
func detailCode(o tool.Outcome) string { return string(o.Code) }

func TestToolsDeclarations(t *testing.T) {
	r, err := tool.NewRegistry(job.Tools(job.NoPlane())...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{job.PollToolName, job.KillToolName, job.SendToolName} {
		d, ok := r.Declarations().Declared(name)
		if !ok || d.Replay != tool.ReplayNever || d.Mode != tool.Concurrent {
			t.Errorf("%s declared %+v (%v), want never/concurrent", name, d, ok)
		}
	}
}

func TestToolsRefuseBadInputInBand(t *testing.T) {
	f := newFixture(t, job.Options{MaxWait: time.Second})
	r, err := tool.NewRegistry(job.Tools(f.plane)...)
	if err != nil {
		t.Fatal(err)
	}
	id := string(f.start(mainOwner, f.sh("echo hi; cat >/dev/null")))
	f.waitFor(mainOwner, job.ID(id), "hi")
	other := f.start(mainOwner, f.sh("true"))
	ahead := job.Cursors{Stdout: 1 << 20}.Token(job.ID(id))
	valid := job.Cursors{Stdout: 3}.Token(job.ID(id))

	for _, tc := range []struct {
		name   string
		strand string
		tool   string
		args   map[string]any
		code   string
	}{
		{"unknown handle", "main", job.PollToolName, map[string]any{"job": "j999-0000"}, "unknown_job"},
		{"foreign strand's handle", "intruder", job.PollToolName, map[string]any{"job": id}, "unknown_job"},
		{"foreign strand cannot kill", "intruder", job.KillToolName, map[string]any{"job": id}, "unknown_job"},
		{"foreign strand cannot send", "intruder", job.SendToolName, map[string]any{"job": id, "input": "x"}, "unknown_job"},
		{"malformed cursor", "main", job.PollToolName, map[string]any{"job": id, "cursor": "12"}, "invalid_cursor"},
		{"edited cursor", "main", job.PollToolName, map[string]any{"job": id, "cursor": valid[:len(valid)-1] + flip(valid[len(valid)-1])}, "invalid_cursor"},
		{"another job's cursor", "main", job.PollToolName, map[string]any{"job": string(other), "cursor": valid}, "invalid_cursor"},
		{"cursor past the stream", "main", job.PollToolName, map[string]any{"job": id, "cursor": ahead}, "invalid_cursor"},
		{"overlong cursor", "main", job.PollToolName, map[string]any{"job": id, "cursor": strings.Repeat("c", job.MaxCursorTokenBytes+1)}, "invalid_cursor"},
		{"cursor without job", "main", job.PollToolName, map[string]any{"cursor": valid}, "invalid_arguments"},
		{"negative wait", "main", job.PollToolName, map[string]any{"job": id, "wait_ms": -1}, "invalid_arguments"},
		{"unknown property", "main", job.PollToolName, map[string]any{"job": id, "timeout": 5}, "unknown_property"},
		{"kill without job", "main", job.KillToolName, map[string]any{"job": ""}, "invalid_arguments"},
		{"send nothing", "main", job.SendToolName, map[string]any{"job": id}, "invalid_arguments"},
		{"send one byte too many", "main", job.SendToolName, map[string]any{"job": id, "input": strings.Repeat("x", job.MaxSendBytes+1)}, "invalid_arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := dispatch(t, r, tc.strand, tc.tool, tc.args)
			if !o.IsError || detailCode(o) != tc.code {
				t.Fatalf("%s(%v) = %q (error %v, code %q), want code %q", tc.tool, tc.args, o.Text, o.IsError, detailCode(o), tc.code)
			}
		})
	}

	// At the bounds: a cursor at the stream's end, a wait of exactly the
	// maximum, and a send of exactly maxSendBytes are accepted.
	atEnd := job.Cursors{Stdout: 3}.Token(job.ID(id))
	if o := dispatch(t, r, "main", job.PollToolName, map[string]any{"job": id, "cursor": atEnd, "wait_ms": 1}); o.IsError {
		t.Fatalf("cursor at the end: %s", o.Text)
	}
	if o := dispatch(t, r, "main", job.SendToolName, map[string]any{"job": id, "input": strings.Repeat("x", job.MaxSendBytes)}); o.IsError {
		t.Fatalf("send at the bound: %s", o.Text)
	}
}

// flip returns a different base64url character than c.
func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func TestPendingPollIsASuccess(t *testing.T) {
	f := newFixture(t, job.Options{})
	r, _ := tool.NewRegistry(job.Tools(f.plane)...)
	id := string(f.start(mainOwner, f.sh("echo first; sleep 60")))
	f.waitFor(mainOwner, job.ID(id), "first")

	o := dispatch(t, r, "main", job.PollToolName, map[string]any{"job": id})
	d, ok := o.Details.(job.PollDetails)
	if o.IsError || !ok || !d.Pending || d.State != job.Running || !strings.Contains(o.Text, "still running") || !strings.Contains(o.Text, "first") {
		t.Fatalf("pending poll: %q %+v", o.Text, o.Details)
	}
	// The returned cursor continues without repeats.
	o = dispatch(t, r, "main", job.PollToolName, map[string]any{"job": id, "cursor": d.Cursor})
	if d2 := o.Details.(job.PollDetails); o.IsError || d2.Stdout.Text != "" || d2.Cursor != d.Cursor {
		t.Fatalf("poll at the cursor: %q", o.Text)
	}

	o = dispatch(t, r, "main", job.KillToolName, map[string]any{"job": id})
	if row, ok := o.Details.(job.Row); o.IsError || !ok || row.State != job.Killed {
		t.Fatalf("kill: %q %+v", o.Text, o.Details)
	}
	o = dispatch(t, r, "main", job.PollToolName, map[string]any{"job": id, "cursor": d.Cursor})
	if d3 := o.Details.(job.PollDetails); o.IsError || d3.Pending || strings.Contains(o.Text, "still running") {
		t.Fatalf("poll after the kill: %q", o.Text)
	}

	o = dispatch(t, r, "main", job.PollToolName, map[string]any{})
	if l, ok := o.Details.(job.ListDetails); o.IsError || !ok || len(l.Jobs) != 1 || string(l.Jobs[0].ID) != id {
		t.Fatalf("listing: %q %+v", o.Text, o.Details)
	}
}

func TestNoPlaneRefusesEverything(t *testing.T) {
	r, _ := tool.NewRegistry(job.Tools(nil)...)
	for name, args := range map[string]map[string]any{
		job.PollToolName: {},
		job.KillToolName: {"job": "j1-0000"},
		job.SendToolName: {"job": "j1-0000", "eof": true},
	} {
		if o := dispatch(t, r, "main", name, args); !o.IsError || detailCode(o) != "no_job_plane" {
			t.Errorf("%s without a plane: %q code %q", name, o.Text, detailCode(o))
		}
	}
	if o := job.ReadURI(context.Background(), nil, &tool.Call{}, "job://"); detailCode(o) != "no_job_plane" {
		t.Errorf("job:// without a plane: %q", o.Text)
	}
}

func TestRefusalCodesAreStable(t *testing.T) {
	want := []string{"unknown_job", "job_ceiling_reached", "job_clearance_refused", "no_job_plane", "job_plane_unavailable"}
	got := []tool.Code{job.CodeUnknownJob, job.CodeJobCeilingReached, job.CodeJobClearanceRefused, job.CodeNoJobPlane, job.CodeJobPlaneUnavailable}
	if len(got) != len(want) {
		t.Fatalf("%d codes, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("code %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestReadURI(t *testing.T) {
	f := newFixture(t, job.Options{})
	id := f.start(mainOwner, f.sh("echo via uri"))
	f.drain(mainOwner, id, job.Cursors{})
	c := &tool.Call{Strand: "main"}
	for _, tc := range []struct {
		uri, code, text string
	}{
		{"job://", "", string(id)},
		{"job:///", "", string(id)},
		{"job://" + string(id), "", "via uri"},
		{"job://" + string(id), "", "via uri"}, // a read advances nothing
		{"job://" + string(id) + "/x", string(job.CodeMalformedJobURI), ""},
		{"cap://fs", string(tool.CodeUnknownScheme), ""},
		{"job://j999-0000", "unknown_job", ""},
	} {
		o := job.ReadURI(context.Background(), f.plane, c, tc.uri)
		if tc.code != "" {
			if !o.IsError || detailCode(o) != tc.code {
				t.Errorf("%s: %q code %q, want %q", tc.uri, o.Text, detailCode(o), tc.code)
			}
			continue
		}
		if o.IsError || !strings.Contains(o.Text, tc.text) {
			t.Errorf("%s: %q, want it to mention %q", tc.uri, o.Text, tc.text)
		}
	}
	if o := job.ReadURI(context.Background(), f.plane, &tool.Call{Strand: "intruder"}, "job://"+string(id)); detailCode(o) != "unknown_job" {
		t.Errorf("another strand read %s: %q", id, o.Text)
	}
}

func TestSchemeServesFsRead(t *testing.T) {
	f := newFixture(t, job.Options{})
	id := f.start(mainOwner, f.sh("echo through fs_read"))
	f.drain(mainOwner, id, job.Cursors{})
	reg, err := tool.NewRegistry(tool.ReadTool(job.Scheme(f.plane)))
	if err != nil {
		t.Fatal(err)
	}
	c := &tool.Call{Workspace: f.ws, Strand: "main"}
	o := reg.Dispatch(context.Background(), c, "fs_read", json.RawMessage(`{"path":"job://`+string(id)+`"}`))
	if o.IsError || !strings.Contains(o.Text, "through fs_read") {
		t.Fatalf("fs_read job://%s: %q", id, o.Text)
	}
	c.Strand = "intruder"
	o = reg.Dispatch(context.Background(), c, "fs_read", json.RawMessage(`{"path":"job://`+string(id)+`"}`))
	if detailCode(o) != "unknown_job" {
		t.Fatalf("another strand read %s through fs_read: %q", id, o.Text)
	}
}

func TestPollToolStatesTheMaxWait(t *testing.T) {
	f := newFixture(t, job.Options{MaxWait: 1234 * time.Millisecond})
	if d := job.Tools(f.plane)[0].Description; !strings.Contains(d, fmt.Sprint(1234)) {
		t.Fatalf("description does not state the plane's max wait: %s", d)
	}
}

// failingJobs is a host's plane that fails with err on every call.
type failingJobs struct {
	job.Jobs
	err error
}

func (f failingJobs) List(context.Context, job.Owner) (job.Listed, error) { return job.Listed{}, f.err }
func (f failingJobs) Kill(context.Context, job.Owner, job.ID) (job.Row, error) {
	return job.Row{}, f.err
}

// TestEveryRefusalCarriesACode: whatever error a host's plane returns, a
// job tool's failing outcome carries a code: the error's own, or
// job_plane_unavailable for one that has none.
func TestEveryRefusalCarriesACode(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want tool.Code
	}{
		{"plain error", errors.New("disk gone"), job.CodeJobPlaneUnavailable},
		{"wrapped refusal", fmt.Errorf("plane: %w", &job.Error{Code: job.CodeUnknownJob, Reason: "gone"}), job.CodeUnknownJob},
		{"refusal without a code", &job.Error{Reason: "forgot its code"}, job.CodeJobPlaneUnavailable},
		{"cursor refusal without a code", &job.CursorError{Token: "t", Reason: "bad"}, job.CodeJobPlaneUnavailable},
		{"cancelled", context.Canceled, job.CodeJobPlaneUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tool.NewRegistry(job.Tools(failingJobs{Jobs: job.NoPlane(), err: tc.err})...)
			if err != nil {
				t.Fatal(err)
			}
			for name, args := range map[string]map[string]any{job.PollToolName: {}, job.KillToolName: {"job": "j1-0000"}} {
				if o := dispatch(t, r, "main", name, args); !o.IsError || o.Code != tc.want {
					t.Errorf("%s: error %v code %q, want %q: %s", name, o.IsError, o.Code, tc.want, o.Text)
				}
			}
		})
	}
}

// TestPollToolAnnouncesItsClamp: a wait_ms past the plane's maximum is
// clamped to it and the answer says so, as every tool announces a clamp;
// a wait at the maximum is not.
func TestPollToolAnnouncesItsClamp(t *testing.T) {
	f := newFixture(t, job.Options{MaxWait: 50 * time.Millisecond})
	id := f.start(mainOwner, f.sh("echo done"))
	f.drain(mainOwner, id, job.Cursors{})
	r, err := tool.NewRegistry(job.Tools(f.plane)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		wait int
		note string
	}{
		{50, ""},
		{99999, "note: wait_ms 99999 clamped to 50\n"},
	} {
		o := dispatch(t, r, "main", job.PollToolName, map[string]any{"job": string(id), "wait_ms": tc.wait})
		if o.IsError || strings.HasPrefix(o.Text, "note: ") != (tc.note != "") || !strings.HasPrefix(o.Text, tc.note) {
			t.Errorf("wait_ms %d: the answer does not start with %q: %s", tc.wait, tc.note, o.Text)
		}
	}
}
