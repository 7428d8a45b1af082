package job_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
)

func TestServerAnswersOnLoopback(t *testing.T) {
	f := newFixture(t, job.Options{})
	addr := freeAddr(t)
	server := f.start(mainOwner, f.self("serve", addr, sandbox.NetworkFull))
	f.waitFor(mainOwner, server, "listening")

	client, err := f.plane.Attend(context.Background(), mainOwner, f.self("fetch", addr, sandbox.NetworkFull))
	if err != nil {
		t.Fatal(err)
	}
	got := f.drain(mainOwner, client.ID, job.Cursors{})
	if got.final.State != job.Exited || got.final.Exit.ExitCode != 0 || got.stdout != pong {
		t.Fatalf("client: %s exit %+v stdout %q stderr %q", got.final.State, got.final.Exit, got.stdout, got.stderr)
	}

	// A command without the network sits in its own namespace: the
	// server is not there.
	offline, err := f.plane.Attend(context.Background(), mainOwner, f.self("fetch", addr, sandbox.NetworkOff))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.drain(mainOwner, offline.ID, job.Cursors{}); got.final.Exit.ExitCode == 0 || got.stdout == pong {
		t.Fatalf("a network-off command reached the server: %+v %q", got.final.Exit, got.stdout)
	}

	row, err := f.plane.Kill(context.Background(), mainOwner, server)
	if err != nil || row.State != job.Killed || row.Cause != job.StopOwner {
		t.Fatalf("Kill(server) = %+v, %v", row, err)
	}
	// The port is free again: nothing of the server's tree holds it.
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("after the kill, %s is still held: %v", addr, err)
	}
	l.Close()
}

func TestOutputAcrossPollsWithoutLossOrDuplication(t *testing.T) {
	f := newFixture(t, job.Options{})
	const lines = 300
	cmd := fmt.Sprintf(`i=1; while [ $i -le %d ]; do echo "out $i"; echo "err $i" >&2; `+
		`if [ $((i %% 60)) = 0 ]; then sleep 0.15; fi; i=$((i+1)); done`, lines)
	id := f.start(mainOwner, f.sh(cmd))
	got := f.drain(mainOwner, id, job.Cursors{})
	var wantOut, wantErr strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&wantOut, "out %d\n", i)
		fmt.Fprintf(&wantErr, "err %d\n", i)
	}
	if got.stdout != wantOut.String() || got.stderr != wantErr.String() {
		t.Fatalf("read back %d/%d bytes, want %d/%d", len(got.stdout), len(got.stderr), wantOut.Len(), wantErr.Len())
	}
	if got.polls < 3 {
		t.Errorf("output arrived in %d polls; the test wants several", got.polls)
	}
	if got.final.State != job.Exited || got.final.Exit.ExitCode != 0 {
		t.Fatalf("final %+v", got.final.Row)
	}
	// A poll past the end answers nothing new, and the same cursor again
	// answers the same: cursors are the reader's, not the plane's.
	for range 2 {
		p, err := f.plane.Poll(context.Background(), mainOwner, id, got.final.Next, 0)
		if err != nil || p.Stdout.Text != "" || p.Stderr.Text != "" || p.Next != got.final.Next {
			t.Fatalf("poll at the end: %+v, %v", p, err)
		}
	}
}

func TestSmallWindowCountsWhatFellOut(t *testing.T) {
	f := newFixture(t, job.Options{TailBytes: 64})
	id := f.start(mainOwner, f.sh(`seq 1 2000`))
	var text strings.Builder
	var dropped int64
	cur := job.Cursors{}
	for {
		p, err := f.plane.Poll(context.Background(), mainOwner, id, cur, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(p.Stdout.Text)
		dropped += p.Stdout.Dropped
		cur = p.Next
		if !p.State.Pending() {
			if dropped+int64(text.Len()) != p.Stdout.Received || len(p.Stdout.Text) > 64 {
				t.Fatalf("dropped %d + read %d != received %d", dropped, text.Len(), p.Stdout.Received)
			}
			if !strings.HasSuffix(text.String(), "1999\n2000\n") {
				t.Fatalf("the window's end is missing: %q", text.String()[max(0, text.Len()-40):])
			}
			return
		}
	}
}

func TestKillLeavesNoDescendant(t *testing.T) {
	f := newFixture(t, job.Options{})
	marker := fmt.Sprintf("%d.%d", 4000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	id := f.start(mainOwner, f.sh(fmt.Sprintf(
		`sleep %[1]s & (sleep %[1]s &) ; setsid sleep %[1]s & echo started; wait`, marker)))
	f.waitFor(mainOwner, id, "started")
	// "started" may be written before a forked child has exec'd its
	// sleep: wait (bounded) until all three carry the marker.
	if n := awaitProcesses(t, marker, 3); n != 3 {
		t.Fatalf("%d processes carry the marker before the kill, want 3", n)
	}
	row, err := f.plane.Kill(context.Background(), mainOwner, id)
	if err != nil || row.State != job.Killed || row.Cause != job.StopOwner {
		t.Fatalf("Kill = %+v, %v", row, err)
	}
	if n := countProcesses(t, marker); n != 0 {
		t.Fatalf("%d descendants outlived the kill", n)
	}
	// Killing again answers the same end.
	again, err := f.plane.Kill(context.Background(), mainOwner, id)
	if err != nil || again.State != job.Killed || again.Exit.Duration != row.Exit.Duration {
		t.Fatalf("second Kill = %+v, %v", again, err)
	}
}

// awaitProcesses polls countProcesses until it answers want or
// settleWait passes, and returns its last answer.
func awaitProcesses(t *testing.T, marker string, want int) int {
	t.Helper()
	deadline := time.Now().Add(settleWait)
	for {
		n := countProcesses(t, marker)
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countProcesses counts host processes whose command line holds marker.
func countProcesses(t *testing.T, marker string) int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && strings.Contains(string(b), marker) && !strings.Contains(string(b), "sh\x00-c") {
			n++
		}
	}
	return n
}

func TestJobOutlivesItsStepButNotItsOperation(t *testing.T) {
	f := newFixture(t, job.Options{})
	id := f.start(mainOwner, f.sh(`echo up; sleep 60`))
	f.waitFor(mainOwner, id, "up")

	if n := f.ledger.AbortStep(sandbox.StepKey{OpID: mainOwner.OpID, StepID: mainOwner.StepID}); n != 0 {
		t.Fatalf("AbortStep of the origin step cancelled %d tickets, want 0", n)
	}
	p, err := f.plane.Poll(context.Background(), mainOwner, id, job.Cursors{}, 300*time.Millisecond)
	if err != nil || p.State != job.Running {
		t.Fatalf("after the step's teardown the job is %s (%v), want running", p.State, err)
	}

	if n := f.ledger.AbortOperation(mainOwner.OpID); n != 1 {
		t.Fatalf("AbortOperation cancelled %d tickets, want 1", n)
	}
	got := f.drain(mainOwner, id, p.Next)
	if got.final.State != job.Killed || got.final.Cause != job.StopAbort {
		t.Fatalf("after the operation's abort: %s cause %q", got.final.State, got.final.Cause)
	}
}

func TestSubagentSessionLifetimeRefusedBeforeAnythingRuns(t *testing.T) {
	f := newFixture(t, job.Options{})
	sub := job.Owner{Strand: "sub:main/scan-0123456789abcdef", OpID: "op1", StepID: "s"}
	marker := filepath.Join(f.ws, "ran")
	spec := f.sh("touch " + marker)
	spec.Lifetime = job.LifetimeSession
	for _, start := range []func(context.Context, job.Owner, job.Spec) (job.Started, error){f.plane.Start, f.plane.Attend} {
		_, err := start(context.Background(), sub, spec)
		if codeOf(err) != "lifetime_refused" {
			t.Fatalf("sub-agent session job: %v (code %s)", err, codeOf(err))
		}
	}
	if l, _ := f.plane.List(context.Background(), sub); len(l.Jobs) != 0 {
		t.Fatalf("a refused job was recorded: %+v", l.Jobs)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the refused command ran: %v", err)
	}
	// The same sub-agent may start a default-lifetime job, and the top
	// strand a session one (no deadline).
	spec.Lifetime = job.LifetimeDefault
	if got := f.drain(sub, f.start(sub, spec), job.Cursors{}); got.final.State != job.Exited {
		t.Fatalf("sub-agent default job: %+v", got.final.Row)
	}
	spec.Lifetime = job.LifetimeSession
	s, err := f.plane.Start(context.Background(), mainOwner, spec)
	if err != nil || !s.Deadline.IsZero() {
		t.Fatalf("top strand session job: %+v, %v", s, err)
	}
}

func TestCeilingPerStrand(t *testing.T) {
	f := newFixture(t, job.Options{MaxLive: 2})
	a := f.start(mainOwner, f.sh("sleep 60"))
	f.start(mainOwner, f.sh("sleep 60"))
	if _, err := f.plane.Start(context.Background(), mainOwner, f.sh("sleep 60")); codeOf(err) != "job_ceiling_reached" {
		t.Fatalf("third job: %v", err)
	}
	other := job.Owner{Strand: "other", OpID: "op1", StepID: "s"}
	f.start(other, f.sh("sleep 60")) // the ceiling is per strand
	if _, err := f.plane.Kill(context.Background(), mainOwner, a); err != nil {
		t.Fatal(err)
	}
	f.start(mainOwner, f.sh("sleep 60")) // one slot is free again
}

func TestWallIsDefaultedAndClamped(t *testing.T) {
	f := newFixture(t, job.Options{Wall: 200 * time.Millisecond, MaxWall: 400 * time.Millisecond})
	short := f.start(mainOwner, f.sh("sleep 30"))
	long := f.sh("sleep 30")
	long.Wall = time.Hour
	clamped, err := f.plane.Start(context.Background(), mainOwner, long)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []job.ID{short, clamped.ID} {
		got := f.drain(mainOwner, id, job.Cursors{})
		if got.final.State != job.Killed || got.final.Cause != job.StopWall {
			t.Fatalf("job %s: %s cause %q, want killed at its wall", id, got.final.State, got.final.Cause)
		}
	}
	if d := clamped.Deadline.Sub(time.Now()); d > 400*time.Millisecond {
		t.Fatalf("a one-hour wall was not clamped: deadline in %s", d)
	}
}

func TestSendFeedsStandardInput(t *testing.T) {
	f := newFixture(t, job.Options{})
	id := f.start(mainOwner, f.sh(`while read line; do echo "got $line"; done; echo bye`))
	if s, err := f.plane.Send(context.Background(), mainOwner, id, []byte("one\n"), job.KeepStdinOpen); err != nil || s.Bytes != 4 || s.Closed {
		t.Fatalf("Send = %+v, %v", s, err)
	}
	p := f.waitFor(mainOwner, id, "got one")
	if s, err := f.plane.Send(context.Background(), mainOwner, id, []byte("two\n"), job.CloseStdin); err != nil || !s.Closed {
		t.Fatalf("Send eof = %+v, %v", s, err)
	}
	got := f.drain(mainOwner, id, p.Next)
	if got.stdout != "got two\nbye\n" || got.final.Exit.ExitCode != 0 {
		t.Fatalf("after eof: %q %+v", got.stdout, got.final.Exit)
	}
	if _, err := f.plane.Send(context.Background(), mainOwner, id, []byte("late"), job.KeepStdinOpen); codeOf(err) != "job_plane_unavailable" {
		t.Fatalf("send to an ended job: %v", err)
	}
}

func TestCloseKillsEverythingAndRefusesMore(t *testing.T) {
	f := newFixture(t, job.Options{})
	id := f.start(mainOwner, f.sh("sleep 60"))
	if err := f.plane.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := f.plane.Poll(context.Background(), mainOwner, id, job.Cursors{}, 0)
	if err != nil || p.State != job.Killed || p.Cause != job.StopShutdown {
		t.Fatalf("after Close: %+v, %v", p.Row, err)
	}
	if _, err := f.plane.Start(context.Background(), mainOwner, f.sh("true")); codeOf(err) != "job_plane_unavailable" {
		t.Fatalf("Start after Close: %v", err)
	}
}

func TestClearanceRefusedCarriesTheDenial(t *testing.T) {
	f := newFixture(t, job.Options{})
	spec := f.sh("true")
	spec.Policy.WritableRoots = []string{"relative/path"}
	_, err := f.plane.Start(context.Background(), mainOwner, spec)
	var je *job.Error
	if codeOf(err) != "job_clearance_refused" || !errorsAs(err, &je) || je.Denial == nil || je.Denial.Code != sandbox.DenialInvalidPolicy {
		t.Fatalf("Start with an invalid policy: %v", err)
	}
	if l, _ := f.plane.List(context.Background(), mainOwner); len(l.Jobs) != 0 {
		t.Fatalf("a refused clearance left a job: %+v", l.Jobs)
	}
}

func TestNotices(t *testing.T) {
	notices := make(chan job.Notice, 16)
	f := newFixture(t, job.Options{Heartbeat: 50 * time.Millisecond, Notify: func(n job.Notice) { notices <- n }})

	// An attended job that ends before its release notifies nobody; a
	// started one does.
	attended, err := f.plane.Attend(context.Background(), mainOwner, f.sh("echo a"))
	if err != nil {
		t.Fatal(err)
	}
	f.drain(mainOwner, attended.ID, job.Cursors{})
	if rel, err := f.plane.Release(context.Background(), mainOwner, attended.ID); err != nil || rel != job.AlreadyEnded {
		t.Fatalf("Release after the end = %v, %v", rel, err)
	}
	started := f.start(mainOwner, f.sh("echo b"))
	n := recv(t, notices)
	if n.Kind != job.NoticeEnded || n.Job.ID != started || n.Owner != mainOwner || n.Job.State != job.Exited {
		t.Fatalf("first notice %+v, want the end of %s", n, started)
	}

	// A job that asked for heartbeats sends them while it runs.
	spec := f.sh("sleep 60")
	spec.Wake = job.WakeWhenIdle
	beating := f.start(mainOwner, spec)
	n = recv(t, notices)
	if n.Kind != job.NoticeHeartbeat || n.Job.ID != beating || n.Job.State != job.Running {
		t.Fatalf("notice %+v, want a heartbeat of %s", n, beating)
	}
}

func TestConcurrentUse(t *testing.T) {
	f := newFixture(t, job.Options{MaxLive: 64})
	const workers = 6
	ctx := context.Background()
	done := make(chan struct{})
	go func() { // a meddler that pokes every job it can see, starting ones included
		defer close(done)
		for i := 0; i < 200; i++ {
			l, _ := f.plane.List(ctx, mainOwner)
			for _, r := range l.Jobs {
				f.plane.Send(ctx, mainOwner, r.ID, []byte("x\n"), job.KeepStdinOpen)
				f.plane.Poll(ctx, mainOwner, r.ID, job.Cursors{}, 0)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			s, err := f.plane.Start(ctx, mainOwner, f.sh("cat"))
			if err != nil {
				errs <- err
				return
			}
			if _, err := f.plane.Poll(ctx, mainOwner, s.ID, job.Cursors{}, 50*time.Millisecond); err != nil {
				errs <- err
				return
			}
			row, err := f.plane.Kill(ctx, mainOwner, s.ID)
			if err == nil && row.State != job.Killed {
				err = fmt.Errorf("job %s is %s after Kill", s.ID, row.State)
			}
			errs <- err
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	<-done
}

func TestEndedJobsArePrunedPastMaxEnded(t *testing.T) {
	f := newFixture(t, job.Options{MaxEnded: 2})
	var ids []job.ID
	for i := range 4 {
		id := f.start(mainOwner, f.sh(fmt.Sprintf("exit %d", i)))
		f.drain(mainOwner, id, job.Cursors{})
		ids = append(ids, id)
	}
	l, _ := f.plane.List(context.Background(), mainOwner)
	if len(l.Jobs) != 2 || l.Jobs[0].ID != ids[2] || l.Jobs[1].ID != ids[3] {
		t.Fatalf("listing after 4 ended jobs with MaxEnded 2: %+v", l.Jobs)
	}
	if _, err := f.plane.Poll(context.Background(), mainOwner, ids[1], job.Cursors{}, 0); codeOf(err) != "unknown_job" {
		t.Fatalf("a pruned job answered: %v", err)
	}
}

// TestTheJobEndingIsNeverForgotten: past MaxEnded, the ended job
// forgotten is the one that ended longest ago, not the oldest started:
// a long job started first and ending after a short one is still
// polled when its end is noticed.
func TestTheJobEndingIsNeverForgotten(t *testing.T) {
	ended := make(chan job.Notice, 4)
	f := newFixture(t, job.Options{MaxEnded: 1, Notify: func(n job.Notice) {
		if n.Kind == job.NoticeEnded {
			ended <- n
		}
	}})
	long := f.start(mainOwner, f.sh("read line; exit 3"))
	short := f.start(mainOwner, f.sh("exit 0"))
	if n := <-ended; n.Job.ID != short {
		t.Fatalf("the first end noticed is %s's, want %s's", n.Job.ID, short)
	}
	if _, err := f.plane.Send(context.Background(), mainOwner, long, nil, job.CloseStdin); err != nil {
		t.Fatal(err)
	}
	if n := <-ended; n.Job.ID != long {
		t.Fatalf("the second end noticed is %s's, want %s's", n.Job.ID, long)
	}
	p, err := f.plane.Poll(context.Background(), mainOwner, long, job.Cursors{}, 0)
	if err != nil || p.State != job.Exited || p.Exit.ExitCode != 3 {
		t.Fatalf("the job whose end was just noticed: %+v, %v", p.Row, err)
	}
	if _, err := f.plane.Poll(context.Background(), mainOwner, short, job.Cursors{}, 0); codeOf(err) != "unknown_job" {
		t.Fatalf("the job that ended first is still kept: %v", err)
	}
	if l, _ := f.plane.List(context.Background(), mainOwner); len(l.Jobs) != 1 || l.Jobs[0].ID != long {
		t.Fatalf("listing: %+v", l.Jobs)
	}
}

func TestHeartbeatsOnlyOnceTheOwnerHoldsTheJob(t *testing.T) {
	notices := make(chan job.Notice, 64)
	f := newFixture(t, job.Options{Heartbeat: 20 * time.Millisecond, Notify: func(n job.Notice) { notices <- n }})
	spec := f.sh("sleep 60")
	spec.Wake = job.WakeWhenIdle
	s, err := f.plane.Attend(context.Background(), mainOwner, spec)
	if err != nil {
		t.Fatal(err)
	}
	// watched (attended) for several heartbeat intervals: silent.
	if p, _ := f.plane.Poll(context.Background(), mainOwner, s.ID, job.Cursors{}, 200*time.Millisecond); !p.State.Pending() {
		t.Fatalf("job ended early: %+v", p.Row)
	}
	select {
	case n := <-notices:
		t.Fatalf("an attended job sent %+v", n)
	default:
	}
	if rel, err := f.plane.Release(context.Background(), mainOwner, s.ID); err != nil || rel != job.Released {
		t.Fatalf("Release = %v, %v", rel, err)
	}
	if n := recv(t, notices); n.Kind != job.NoticeHeartbeat || n.Job.ID != s.ID {
		t.Fatalf("after release: %+v", n)
	}
}

func TestCloseMarksUnsettledJobsLost(t *testing.T) {
	blocked, unblock := make(chan struct{}, 1), make(chan struct{})
	f := newFixture(t, job.Options{Heartbeat: 10 * time.Millisecond, Notify: func(job.Notice) {
		select {
		case blocked <- struct{}{}:
		default:
		}
		<-unblock
	}})
	spec := f.sh("sleep 60")
	spec.Wake = job.WakeWhenIdle
	id := f.start(mainOwner, spec)
	<-blocked // the job's runner is stuck in a heartbeat, so it cannot settle
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := f.plane.Close(ctx); err == nil {
		t.Fatal("Close settled a job whose runner was blocked")
	}
	p, err := f.plane.Poll(context.Background(), mainOwner, id, job.Cursors{}, 0)
	if err != nil || p.State != job.Lost || p.Lost != job.LostUnsettled || p.Exit != nil {
		t.Fatalf("after a timed-out Close: %+v, %v", p.Row, err)
	}
	close(unblock)
	// Its later settlement does not revive a terminal state.
	if err := f.plane.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.plane.Poll(context.Background(), mainOwner, id, job.Cursors{}, 0); p.State != job.Lost {
		t.Fatalf("a lost job became %s", p.State)
	}
}
