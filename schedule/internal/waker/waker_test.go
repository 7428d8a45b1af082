package waker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRun: in a bubble's fake time, Run ticks once at start, again when
// the next fire falls due, again on a Poke long before the next fire, at
// most MaxSleep apart however far off the next fire is or when nextDue
// fails, and ends with nil on Close.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex // the loop's goroutine and the test share the state below
		var ticks []time.Duration
		due, hasDue, failing := start.Add(10*time.Second), true, false
		set := func(f func()) { mu.Lock(); defer mu.Unlock(); f() }
		w := New()
		done := make(chan error, 1)
		go func() {
			done <- w.Run(context.Background(), time.Now,
				func(context.Context) {
					mu.Lock()
					defer mu.Unlock()
					ticks = append(ticks, time.Since(start))
					if hasDue && !time.Now().Before(due) {
						hasDue = false // fired
					}
				},
				func(context.Context) (time.Time, bool, error) {
					mu.Lock()
					defer mu.Unlock()
					if failing {
						return time.Time{}, false, errors.New("database gone")
					}
					return due, hasDue, nil
				})
		}()
		synctest.Wait()
		time.Sleep(10 * time.Second) // the fire falls due
		synctest.Wait()
		set(func() { due, hasDue = start.Add(time.Hour), true })
		time.Sleep(time.Second)
		w.Poke() // a schedule created, due in an hour
		synctest.Wait()
		time.Sleep(MaxSleep) // one look a MaxSleep later all the same
		synctest.Wait()
		set(func() { failing = true })
		time.Sleep(MaxSleep) // nextDue fails: likewise
		synctest.Wait()
		w.Close()
		if err := <-done; err != nil {
			t.Fatalf("Run after Close: %v", err)
		}
		w.Poke() // after Close: nothing, no panic
		w.Close()
		mu.Lock()
		defer mu.Unlock()
		want := []time.Duration{0, 10 * time.Second, 11 * time.Second, 11*time.Second + MaxSleep, 11*time.Second + 2*MaxSleep}
		if len(ticks) != len(want) {
			t.Fatalf("ticks at %v, want %v", ticks, want)
		}
		for i := range want {
			if ticks[i] != want[i] {
				t.Fatalf("ticks at %v, want %v", ticks, want)
			}
		}
	})
}

// TestRunEndsWithContext: a cancelled ctx ends Run with its error.
func TestRunEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- New().Run(ctx, time.Now, func(context.Context) {},
				func(context.Context) (time.Time, bool, error) { return time.Time{}, false, nil })
		}()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v, want context.Canceled", err)
		}
	})
}

// TestDrain: Drain claims again while a claim fills its batch, hands
// each fire on in order, counts them, drops them when deliver is nil,
// and stops at a failing claim with the count before it.
func TestDrain(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		batches [][]int // what each claim answers, in turn
		fail    int     // the claim (from 1) that fails; 0: none
		nilFire bool
		claims  int
		total   int
	}{
		{"nothing due", [][]int{{}}, 0, false, 1, 0},
		{"one short batch", [][]int{{1, 2}}, 0, false, 1, 2},
		{"full batches then a short one", [][]int{{1, 2, 3}, {4, 5, 6}, {7}}, 0, false, 3, 7},
		{"full batches then none", [][]int{{1, 2, 3}, {}}, 0, false, 2, 3},
		{"a claim fails", [][]int{{1, 2, 3}, {4, 5, 6}}, 2, false, 2, 3},
		{"nil deliver drops", [][]int{{1, 2, 3}, {4}}, 0, true, 2, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := 0
			var got, want []int
			for _, b := range tt.batches {
				want = append(want, b...)
			}
			want = want[:tt.total] // the fires claims answered before any failed
			claim := func(context.Context) ([]int, error) {
				claims++
				if claims == tt.fail {
					return nil, boom
				}
				return tt.batches[claims-1], nil
			}
			deliver := func(_ context.Context, f int) { got = append(got, f) }
			if tt.nilFire {
				deliver, want = nil, nil
			}
			total, err := Drain(context.Background(), 3, claim, deliver)
			if (tt.fail != 0) != (err == boom) {
				t.Errorf("Drain: %v", err)
			}
			if total != tt.total || claims != tt.claims {
				t.Errorf("Drain = %d after %d claims; want %d after %d", total, claims, tt.total, tt.claims)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("delivered %v; want %v", got, want)
			}
		})
	}
}
