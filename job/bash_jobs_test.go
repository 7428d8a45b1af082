package job_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// bashSession is a call and the job plane its bash runs jobs on.
type bashSession struct {
	*tool.Call
	jobs job.Jobs
}

// jobsCall is a call whose host runs plane (nil: none).
func jobsCall(t *testing.T, strand string, plane job.Jobs) *bashSession {
	t.Helper()
	ws := t.TempDir()
	b := broker.New(broker.Options{HelperPath: job.JailHelperForTests(t)})
	t.Cleanup(func() { b.Close() })
	return &bashSession{Call: &tool.Call{
		Workspace: ws, Strand: strand, OpID: "op", StepID: "step",
		Base: sandbox.Policy{
			ReadableRoots: sandbox.SystemReadableRoots(),
			WritableRoots: []string{ws},
			Network:       sandbox.NetworkOff,
			EnvAllow:      []string{"PATH", "HOME"},
		},
		Env:    map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": ws},
		Broker: b,
	}, jobs: plane}
}

func newPlane(t *testing.T, opts job.Options) *job.Plane {
	b := broker.New(broker.Options{HelperPath: job.JailHelperForTests(t)})
	t.Cleanup(func() { b.Close() }) // after the plane's Close, registered below
	p := job.NewPlane(b, opts)
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// bash runs one bash call of s, built over s's plane.
func bash(t *testing.T, s *bashSession, args map[string]any) (tool.Outcome, job.BashDetails) {
	t.Helper()
	r, _ := tool.NewRegistry(job.BashTool(s.jobs))
	raw, _ := json.Marshal(args)
	o := r.Dispatch(context.Background(), s.Call, "bash", raw)
	d, _ := o.Details.(job.BashDetails)
	return o, d
}

func TestBashAutoRendersAQuickCommandLikeForeground(t *testing.T) {
	c := jobsCall(t, "main", newPlane(t, job.Options{}))
	o, d := bash(t, c, map[string]any{"command": "echo hi; echo oops >&2; exit 3"})
	if !o.IsError || o.Code != "nonzero_exit" || d.ExitCode != 3 || d.Job != "" || d.Mode != job.BashAuto {
		t.Fatalf("auto quick: %q %+v", o.Text, d)
	}
	if !strings.Contains(o.Text, "hi\n") || !strings.Contains(o.Text, "oops\n") || !strings.Contains(o.Text, "[exit code 3]") {
		t.Fatalf("auto quick text: %q", o.Text)
	}
}

func TestBashAutoReleasesALongCommand(t *testing.T) {
	notices := make(chan job.Notice, 2)
	plane := newPlane(t, job.Options{Notify: func(n job.Notice) { notices <- n }})
	c := jobsCall(t, "main", plane)
	o, d := bash(t, c, map[string]any{"command": "echo begun; sleep 1.5; echo done", "timeout_ms": 600})
	if o.IsError || d.Job == "" || d.Cursor == "" || !strings.Contains(o.Text, "begun") || !strings.Contains(o.Text, "background job "+string(d.Job)) {
		t.Fatalf("auto long: %q %+v", o.Text, d)
	}
	n := <-notices
	if n.Job.ID != d.Job || n.Kind != job.NoticeEnded {
		t.Fatalf("notice %+v", n)
	}
	cur, err := job.ParseCursor(d.Job, d.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plane.Poll(context.Background(), job.OwnerOf(c.Call), d.Job, cur, 0)
	if err != nil || p.Stdout.Text != "done\n" {
		t.Fatalf("rest after release: %+v, %v", p.Stdout, err)
	}
}

func TestBashAutoFallsBackToForeground(t *testing.T) {
	// No plane at all: silently foreground.
	c := jobsCall(t, "main", nil)
	if o, d := bash(t, c, map[string]any{"command": "echo plain"}); o.IsError || d.Mode != job.BashForeground || strings.Contains(o.Text, "note:") {
		t.Fatalf("no plane: %q %+v", o.Text, d)
	}
	// The plane's ceiling reached: foreground, and said so.
	plane := newPlane(t, job.Options{MaxLive: 1})
	c = jobsCall(t, "main", plane)
	if _, d := bash(t, c, map[string]any{"command": "sleep 30", "mode": "background"}); d.Job == "" {
		t.Fatalf("background start failed: %+v", d)
	}
	o, d := bash(t, c, map[string]any{"command": "echo second"})
	if o.IsError || d.Mode != job.BashForeground || !strings.Contains(o.Text, "job_ceiling_reached") || !strings.Contains(o.Text, "second") {
		t.Fatalf("ceiling: %q %+v", o.Text, d)
	}
}

func TestBashBackgroundAnswersAtOnce(t *testing.T) {
	plane := newPlane(t, job.Options{})
	c := jobsCall(t, "main", plane)
	start := time.Now()
	// The command would run ten minutes: an answer long before it ends
	// (however slow the machine) is one that did not wait for it.
	o, d := bash(t, c, map[string]any{"command": "sleep 600", "mode": "background", "heartbeat": true})
	if o.IsError || d.Job == "" || time.Since(start) > 300*time.Second || !strings.Contains(o.Text, "job_poll") {
		t.Fatalf("background: %q %+v", o.Text, d)
	}
	if o, d := bash(t, jobsCall(t, "main", nil), map[string]any{"command": "true", "mode": "background"}); !o.IsError || o.Code != "no_job_plane" {
		t.Fatalf("background without a plane: %q %+v", o.Text, d)
	}
}

func TestBashSubagentSessionLifetimeRefusedFirst(t *testing.T) {
	raised := false
	c := jobsCall(t, "sub:main/x-0123456789abcdef", newPlane(t, job.Options{}))
	c.RaiseRefusal = func(context.Context, tool.RaisedRefusal) tool.Escalation { raised = true; return tool.Escalation{} }
	marker := filepath.Join(c.Workspace, "ran")
	// Even an otherwise invalid call is refused for its lifetime first.
	o, d := bash(t, c, map[string]any{"command": "touch " + marker, "mode": "background", "lifetime": "session", "timeout_ms": -1})
	if !o.IsError || o.Code != job.CodeLifetimeRefused || raised {
		t.Fatalf("sub-agent session: %q %+v raised %v", o.Text, d, raised)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the command ran: %v", err)
	}
}

func TestBashSessionLifetimeNeedsTheWallLifted(t *testing.T) {
	c := jobsCall(t, "main", newPlane(t, job.Options{}))
	c.Base.WallMs = 60_000
	var asked []sandbox.Grant
	c.RaiseRefusal = func(_ context.Context, r tool.RaisedRefusal) tool.Escalation {
		asked = r.Denial.Wanted
		return tool.Escalation{Resume: true, Grants: r.Denial.Wanted}
	}
	o, d := bash(t, c, map[string]any{"command": "sleep 30", "mode": "background", "lifetime": "session"})
	if o.IsError || d.Job == "" || len(asked) != 1 || asked[0].Kind != sandbox.GrantWall || !strings.Contains(o.Text, "no wall deadline") {
		t.Fatalf("session job: %q %+v asked %v", o.Text, d, asked)
	}
	if o, d := bash(t, c, map[string]any{"command": "true", "lifetime": "session"}); !o.IsError || o.Code != "invalid_arguments" {
		t.Fatalf("session lifetime in auto mode: %q %+v", o.Text, d)
	}
}

// TestBashDescribesOnlyWhatTheHostRuns: over a plane, bash's description
// offers background jobs and names the job tools; without one (nil or
// NoPlane) it names no job tool and says commands run in the call.
func TestBashDescribesOnlyWhatTheHostRuns(t *testing.T) {
	jobTools := []string{job.PollToolName, job.SendToolName, job.KillToolName}
	for _, tc := range []struct {
		name  string
		jobs  job.Jobs
		plane bool
	}{
		{"plane", newPlane(t, job.Options{}), true},
		{"nil", nil, false},
		{"NoPlane", job.NoPlane(), false},
	} {
		d := job.BashTool(tc.jobs).Description
		for _, name := range jobTools {
			if strings.Contains(d, name) != tc.plane {
				t.Errorf("%s: the description names %s: %v, want %v:\n%s", tc.name, name, !tc.plane, tc.plane, d)
			}
		}
		if strings.Contains(d, "runs no background jobs") == tc.plane {
			t.Errorf("%s: the description misstates whether jobs run:\n%s", tc.name, d)
		}
	}
}
