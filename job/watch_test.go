package job_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// watch attends spec and watches it as bash's auto mode does.
func (f *fixture) watch(ctx context.Context, spec job.Spec, window time.Duration, observe func(tool.OutputTail)) (job.Watched, error) {
	f.t.Helper()
	s, err := f.plane.Attend(context.Background(), mainOwner, spec)
	if err != nil {
		f.t.Fatalf("Attend: %v", err)
	}
	return job.Watch(ctx, f.plane, mainOwner, s.ID, window, observe)
}

func TestWatchRendersAJobThatEndsInItsWindow(t *testing.T) {
	notices := make(chan job.Notice, 4)
	f := newFixture(t, job.Options{Notify: func(n job.Notice) { notices <- n }})
	var observed []tool.OutputTail
	w, err := f.watch(context.Background(), f.sh("echo one; sleep 0.6; echo two >&2; exit 4"), 10*time.Second,
		func(o tool.OutputTail) { observed = append(observed, o) })
	if err != nil || !w.Ended || w.Missed || string(w.Stdout) != "one\n" || string(w.Stderr) != "two\n" {
		t.Fatalf("watch = %+v, %v", w, err)
	}
	if w.Final.State != job.Exited || w.Final.Exit.ExitCode != 4 {
		t.Fatalf("final %+v", w.Final.Row)
	}
	if len(observed) < 2 || observed[len(observed)-1].Tail != "two\n" {
		t.Fatalf("observed %+v", observed)
	}
	select {
	case n := <-notices:
		t.Fatalf("a watched job that ended in its window notified its owner: %+v", n)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestWatchReleasesAJobThatOutlivesItsWindow(t *testing.T) {
	notices := make(chan job.Notice, 4)
	f := newFixture(t, job.Options{Notify: func(n job.Notice) { notices <- n }})
	w, err := f.watch(context.Background(), f.sh("echo started; sleep 1; echo finished"), 300*time.Millisecond, nil)
	if err != nil || w.Ended || string(w.Stdout) != "started\n" || !w.Final.State.Pending() {
		t.Fatalf("watch = %+v, %v", w, err)
	}
	n := recv(t, notices)
	if n.Kind != job.NoticeEnded || n.Job.ID != w.ID || n.Job.State != job.Exited {
		t.Fatalf("notice %+v", n)
	}
	// The owner continues reading where the watch stopped.
	got := f.drain(mainOwner, w.ID, w.Next)
	if got.stdout != "finished\n" {
		t.Fatalf("after the release: %q", got.stdout)
	}
}

func TestWatchKillsWhenItsCallIsCancelled(t *testing.T) {
	f := newFixture(t, job.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	w, err := f.watch(ctx, f.sh("sleep 60"), 10*time.Second, nil)
	if err == nil || !w.Ended || w.Final.State != job.Killed || w.Final.Cause != job.StopOwner {
		t.Fatalf("watch = %+v, %v", w.Final.Row, err)
	}
}

func TestWatchMissedOutputComesFromTheSpill(t *testing.T) {
	store, err := blob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, job.Options{TailBytes: 512, Blobs: store})
	w, err := f.watch(context.Background(), f.sh("seq 1 30000"), 10*time.Second, nil)
	if err != nil || !w.Ended || !w.Missed {
		t.Fatalf("watch = ended %v missed %v, %v", w.Ended, w.Missed, err)
	}
	sp := w.Final.Spill
	if sp == nil || sp.Stdout == nil || sp.Stderr != nil {
		t.Fatalf("spill %+v", sp)
	}
	var want strings.Builder
	for i := 1; i <= 30000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	whole, err := os.ReadFile(sp.Stdout.Path)
	if err != nil || string(whole) != want.String() || sp.Stdout.Size != int64(want.Len()) {
		t.Fatalf("spilled %d bytes (%v), want %d", len(whole), err, want.Len())
	}
}

func TestSpillCoversAStreamLongerThanTheWindowOnly(t *testing.T) {
	store, err := blob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, job.Options{TailBytes: 512, Blobs: store})
	// stdout outgrows the window yet stays under the overflow threshold;
	// stderr fits the window.
	id := f.start(mainOwner, f.sh("seq 1 2000; echo short >&2"))
	p := f.waitEnd(id)
	if p.Spill == nil || p.Spill.Stdout == nil || p.Spill.Stderr != nil {
		t.Fatalf("spill %+v", p.Spill)
	}
	whole, err := os.ReadFile(p.Spill.Stdout.Path)
	if err != nil || int64(len(whole)) != p.Stdout.Received || !strings.HasPrefix(string(whole), "1\n2\n3\n") {
		t.Fatalf("spilled %d bytes of %d (%v)", len(whole), p.Stdout.Received, err)
	}
}
