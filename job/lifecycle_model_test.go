package job_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
)

// modelMaxLive is the per-strand ceiling the lifecycle model runs with:
// small, so the generator reaches it.
const modelMaxLive = 2

// modelJob is what the model knows of one job.
type modelJob struct {
	id          job.ID
	owner       job.Owner
	kind        string // "quick", "sleeper" or "reader"
	state       job.State
	cause       job.StopCause
	exit        int
	stdinClosed bool
}

// planeModel drives a real plane with real jailed processes against a
// model of every job's lifecycle. Each command is awaited to the state
// the model predicts, so the model stays exact.
type planeModel struct {
	f       *fixture
	owners  []job.Owner
	aborted map[string]bool
	jobs    []*modelJob
	seen    map[string]int
}

func (m *planeModel) live(o job.Owner) int {
	n := 0
	for _, j := range m.jobs {
		if j.owner == o && j.state.Pending() {
			n++
		}
	}
	return n
}

func (m *planeModel) start(t *rapid.T) {
	o := rapid.SampledFrom(m.owners).Draw(t, "owner")
	kind := rapid.SampledFrom([]string{"quick", "sleeper", "reader"}).Draw(t, "kind")
	code := rapid.IntRange(0, 3).Draw(t, "code")
	cmd := map[string]string{"quick": fmt.Sprintf("exit %d", code), "sleeper": "sleep 60", "reader": "cat >/dev/null; exit 7"}[kind]
	s, err := m.f.plane.Start(context.Background(), o, m.f.sh(cmd))
	switch {
	case m.live(o) >= modelMaxLive:
		if codeOf(err) != "job_ceiling_reached" {
			t.Fatalf("start past the ceiling: %v", err)
		}
		m.seen["ceiling"]++
		return
	case m.aborted[o.OpID]:
		if codeOf(err) != "job_clearance_refused" {
			t.Fatalf("start in an aborted operation: %v", err)
		}
		m.seen["refused"]++
		return
	case err != nil:
		t.Fatalf("Start(%s): %v", cmd, err)
	}
	j := &modelJob{id: s.ID, owner: o, kind: kind, state: job.Running}
	m.jobs = append(m.jobs, j)
	if kind == "quick" {
		j.state, j.exit = job.Exited, code
		m.await(t, j)
	}
}

// await polls j until it is terminal and checks the model's prediction.
func (m *planeModel) await(t *rapid.T, j *modelJob) {
	deadline := time.Now().Add(settleWait)
	for {
		p, err := m.f.plane.Poll(context.Background(), j.owner, j.id, job.Cursors{}, 200*time.Millisecond)
		if err != nil {
			t.Fatalf("Poll(%s): %v", j.id, err)
		}
		if !p.State.Pending() {
			m.check(t, j, p.Row)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s job %s still %s", j.kind, j.id, p.State)
		}
	}
}

func (m *planeModel) check(t *rapid.T, j *modelJob, row job.Row) {
	if row.State != j.state {
		t.Fatalf("%s job %s is %s, model says %s", j.kind, j.id, row.State, j.state)
	}
	m.seen[string(row.State)]++
	switch row.State {
	case job.Exited:
		if row.Exit == nil || row.Exit.ExitCode != j.exit || row.Cause != "" {
			t.Fatalf("job %s exited %+v cause %q, want code %d", j.id, row.Exit, row.Cause, j.exit)
		}
	case job.Killed:
		if row.Exit == nil || row.Cause != j.cause {
			t.Fatalf("job %s killed %+v cause %q, want %q", j.id, row.Exit, row.Cause, j.cause)
		}
	case job.Running:
		if row.Exit != nil || row.Cause != "" {
			t.Fatalf("running job %s carries an end: %+v", j.id, row)
		}
	}
}

func (m *planeModel) pick(t *rapid.T) (*modelJob, job.Owner, bool) {
	if len(m.jobs) == 0 {
		return nil, job.Owner{}, false
	}
	j := rapid.SampledFrom(m.jobs).Draw(t, "job")
	caller := j.owner
	if rapid.IntRange(0, 4).Draw(t, "foreign") == 0 {
		caller = m.owners[0]
		if caller.Strand == j.owner.Strand {
			caller = m.owners[1]
		}
	}
	return j, caller, true
}

func (m *planeModel) kill(t *rapid.T) {
	j, caller, ok := m.pick(t)
	if !ok {
		return
	}
	row, err := m.f.plane.Kill(context.Background(), caller, j.id)
	if caller != j.owner {
		if codeOf(err) != "unknown_job" {
			t.Fatalf("foreign kill of %s: %v", j.id, err)
		}
		m.seen["foreign"]++
		return
	}
	if err != nil {
		t.Fatalf("Kill(%s): %v", j.id, err)
	}
	if j.state.Pending() {
		j.state, j.cause = job.Killed, job.StopOwner
	}
	m.check(t, j, row)
}

func (m *planeModel) eof(t *rapid.T) {
	j, caller, ok := m.pick(t)
	if !ok {
		return
	}
	_, err := m.f.plane.Send(context.Background(), caller, j.id, nil, job.CloseStdin)
	switch {
	case caller != j.owner:
		if codeOf(err) != "unknown_job" {
			t.Fatalf("foreign send to %s: %v", j.id, err)
		}
		return
	case !j.state.Pending() || j.stdinClosed:
		if codeOf(err) != "job_plane_unavailable" {
			t.Fatalf("eof to %s job %s (stdin closed %v): %v", j.state, j.id, j.stdinClosed, err)
		}
		return
	case err != nil:
		t.Fatalf("eof to %s: %v", j.id, err)
	}
	j.stdinClosed = true
	if j.kind == "reader" {
		j.state, j.exit = job.Exited, 7
		m.await(t, j)
	}
}

func (m *planeModel) abort(t *rapid.T) {
	o := rapid.SampledFrom(m.owners).Draw(t, "owner")
	if rapid.IntRange(0, 5).Draw(t, "rarely") != 0 {
		return
	}
	m.f.ledger.AbortOperation(o.OpID)
	m.aborted[o.OpID] = true
	for _, j := range m.jobs {
		if j.owner == o && j.state.Pending() {
			j.state, j.cause = job.Killed, job.StopAbort
			m.await(t, j)
		}
	}
}

func (m *planeModel) poll(t *rapid.T) {
	j, caller, ok := m.pick(t)
	if !ok {
		return
	}
	p, err := m.f.plane.Poll(context.Background(), caller, j.id, job.Cursors{}, 0)
	if caller != j.owner {
		if codeOf(err) != "unknown_job" {
			t.Fatalf("foreign poll of %s: %v", j.id, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	m.check(t, j, p.Row)
}

// listing checks every strand's listing against the model, in order.
func (m *planeModel) listing(t *rapid.T) {
	for _, o := range m.owners {
		l, err := m.f.plane.List(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		var want []*modelJob
		for _, j := range m.jobs {
			if j.owner.Strand == o.Strand {
				want = append(want, j)
			}
		}
		if len(l.Jobs) != len(want) {
			t.Fatalf("%s lists %d jobs, model %d", o.Strand, len(l.Jobs), len(want))
		}
		for i, row := range l.Jobs {
			if row.ID != want[i].id || row.State != want[i].state {
				t.Fatalf("%s row %d = %s %s, model %s %s", o.Strand, i, row.ID, row.State, want[i].id, want[i].state)
			}
		}
	}
}

func TestJobLifecycleModel(t *testing.T) {
	seen := map[string]int{}
	ws := t.TempDir()
	helper := job.JailHelperForTests(t)
	rapid.Check(t, func(rt *rapid.T) {
		f := &fixture{t: rt, ws: ws, ledger: sandbox.NewLedger(nil)}
		b := broker.New(broker.Options{Ledger: f.ledger, HelperPath: helper})
		defer b.Close()
		f.plane = job.NewPlane(b, job.Options{MaxLive: modelMaxLive})
		defer f.plane.Close(context.Background())
		m := &planeModel{f: f, aborted: map[string]bool{}, seen: seen, owners: []job.Owner{
			{Strand: "main", OpID: "opA", StepID: "s"},
			{Strand: "sub:main/helper-0123456789abcdef", OpID: "opB", StepID: "s"},
		}}
		rt.Repeat(map[string]func(*rapid.T){
			"start": m.start,
			// Starting twice as often as anything else reaches the ceiling.
			"start again": m.start,
			"kill":        m.kill,
			"eof":         m.eof,
			"abort":       m.abort,
			"poll":        m.poll,
			"":            m.listing,
		})
	})
	for _, k := range []string{"ceiling", "refused", "foreign", string(job.Running), string(job.Exited), string(job.Killed)} {
		if seen[k] == 0 {
			t.Errorf("the generator never reached %q: %v", k, seen)
		}
	}
}
