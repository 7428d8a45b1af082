package sandbox

import (
	"testing"
)

// TestExecutionFeed: output sent on the feed arrives in order, Settle
// closes Output before Done, Wait returns what was settled, a second
// Settle changes nothing, and Cancel calls the jail's cancel.
func TestExecutionFeed(t *testing.T) {
	cancelled := 0
	ex, feed := NewExecution(2, func() { cancelled++ })
	feed.Output() <- Output{Stream: Stdout, Bytes: []byte("a")}
	feed.Output() <- Output{Stream: Stderr, Bytes: []byte("b")}
	ex.Cancel()
	feed.Settle(Settled{ExitCode: 3})
	feed.Settle(Settled{ExitCode: 4})
	var got []string
	for o := range ex.Output() {
		got = append(got, o.Stream.String()+":"+string(o.Bytes))
	}
	if len(got) != 2 || got[0] != "stdout:a" || got[1] != "stderr:b" {
		t.Fatalf("output %q", got)
	}
	<-ex.Done()
	if s := ex.Wait(); s.ExitCode != 3 {
		t.Fatalf("settled %+v, want the first settlement", s)
	}
	if cancelled != 1 {
		t.Fatalf("cancel called %d times, want 1", cancelled)
	}
}

// TestExecutionWithoutCancel: an Execution built with no cancel ignores
// Cancel rather than panicking.
func TestExecutionWithoutCancel(t *testing.T) {
	ex, feed := NewExecution(0, nil)
	ex.Cancel()
	feed.Settle(Settled{})
	if s := ex.Wait(); s.ExitCode != 0 {
		t.Fatalf("%+v", s)
	}
}

// TestZeroExecution: an Execution a jail did not make with NewExecution
// has no output and is settled as never run, so a consumer draining it
// and waiting returns at once.
func TestZeroExecution(t *testing.T) {
	var ex Execution
	for range ex.Output() {
		t.Fatal("output from a zero Execution")
	}
	<-ex.Done()
	if s := ex.Wait(); s.ExitCode != ExitCodeNotExecuted || s.Failed == "" {
		t.Fatalf("%+v", s)
	}
	ex.Cancel()
}
