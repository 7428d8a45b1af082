package sandbox

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestExecutionFeed: output sent on the feed arrives in order, Settle
// closes Output before Done, Wait returns what was settled, a second
// Settle changes nothing, and Cancel calls the jail's cancel.
func TestExecutionFeed(t *testing.T) {
	cancelled := 0
	ex, feed := NewExecution(2, func() { cancelled++ })
	if !feed.Send(Output{Stream: Stdout, Bytes: []byte("a")}) || !feed.Send(Output{Stream: Stderr, Bytes: []byte("b")}) {
		t.Fatal("Send refused a chunk before Settle")
	}
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

// TestFeedSendAfterSettle: a jail's goroutine that sends after the
// execution settled, or waits on a full queue while it settles, gets
// false instead of a panic; the zero Feed refuses too.
func TestFeedSendAfterSettle(t *testing.T) {
	ex, feed := NewExecution(1, nil)
	if !feed.Send(Output{Bytes: []byte("fills the queue")}) {
		t.Fatal("first Send refused")
	}
	blocked := make(chan bool)
	go func() { blocked <- feed.Send(Output{Bytes: []byte("waits")}) }()
	feed.Settle(Settled{ExitCode: 1})
	if <-blocked {
		// Settle may run before the goroutine reached the queue; it then
		// finds the execution closed. Either way nothing was delivered
		// past the one queued chunk.
		t.Fatal("a Send waiting on a full queue delivered after Settle")
	}
	if feed.Send(Output{Bytes: []byte("late")}) {
		t.Fatal("Send after Settle reported delivery")
	}
	var got int
	for range ex.Output() {
		got++
	}
	if got != 1 {
		t.Fatalf("%d chunks delivered, want the 1 queued before Settle", got)
	}
	var zero Feed
	if zero.Send(Output{}) {
		t.Fatal("the zero Feed delivered")
	}
	zero.Settle(Settled{})
}

// TestFeedConcurrentSettle: senders racing Settle never panic and every
// chunk they report delivered is in Output (run under -race).
func TestFeedConcurrentSettle(t *testing.T) {
	for range 50 {
		ex, feed := NewExecution(4, nil)
		var delivered atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					if feed.Send(Output{Bytes: []byte("x")}) {
						delivered.Add(1)
					}
				}
			}()
		}
		var got int64
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for range ex.Output() {
				got++
			}
		}()
		feed.Settle(Settled{})
		wg.Wait()
		<-drained
		if got != delivered.Load() {
			t.Fatalf("Output held %d chunks, senders reported %d delivered", got, delivered.Load())
		}
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
