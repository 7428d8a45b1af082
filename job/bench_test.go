package job_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/job"
)

// BenchmarkPollIdle measures a zero-wait poll of a running job with
// nothing new: the plane's own overhead per poll.
func BenchmarkPollIdle(b *testing.B) {
	f := newFixture(b, job.Options{})
	id := f.start(mainOwner, f.sh("echo ready; sleep 600"))
	p := f.waitFor(mainOwner, id, "ready")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.plane.Poll(context.Background(), mainOwner, id, p.Next, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPollRoundTrip measures a line sent to a jailed cat until a
// waiting poll returns it: the latency a model sees between a job's
// output and its poll's answer, pipes and jail included.
func BenchmarkPollRoundTrip(b *testing.B) {
	f := newFixture(b, job.Options{})
	id := f.start(mainOwner, f.sh("cat"))
	cur := job.Cursors{}
	for b.Loop() {
		if _, err := f.plane.Send(context.Background(), mainOwner, id, []byte("ping\n"), job.KeepStdinOpen); err != nil {
			b.Fatal(err)
		}
		var got strings.Builder
		for !strings.HasSuffix(got.String(), "ping\n") {
			p, err := f.plane.Poll(context.Background(), mainOwner, id, cur, time.Second)
			if err != nil {
				b.Fatal(err)
			}
			got.WriteString(p.Stdout.Text)
			cur = p.Next
		}
	}
}

// BenchmarkStartToEnd measures starting a jailed job and polling it to
// its end.
func BenchmarkStartToEnd(b *testing.B) {
	f := newFixture(b, job.Options{MaxEnded: 1})
	for b.Loop() {
		f.drain(mainOwner, f.start(mainOwner, f.sh("true")), job.Cursors{})
	}
}
