package job

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/tool"
)

// Bounds of watch, the loop behind bash's auto mode.
const (
	// watchInterval is the longest a watch waits between two looks at
	// its job; a look returns sooner when output arrives or the job ends.
	watchInterval = 500 * time.Millisecond
	// watchKeepBytes bounds the bytes of each stream a watch keeps: the
	// most a foreground run shows inline. A stream that outgrows it is
	// Missed, and its whole text is the plane's spill.
	watchKeepBytes = blob.OverflowThreshold
)

// watched is what watch saw of one job.
type watched struct {
	ID ID
	// Ended: the job reached a terminal state inside the window, or ended
	// before Release could hand it over (AlreadyEnded). The caller renders
	// it as it renders a foreground run. When false the job still runs,
	// was Released to its owner, and the caller answers with its handle.
	Ended bool
	// Final is the last look; terminal when Ended.
	Final Polled
	// Output is both streams in the order the looks returned them (within
	// one look, stdout before stderr), up to watchKeepBytes in all: what a
	// foreground run would have shown. Stdout and Stderr are the same
	// bytes split by stream.
	Output, Stdout, Stderr []byte
	// Missed: some bytes were not seen (they fell out of the plane's
	// window between looks, or passed watchKeepBytes), so the complete
	// text is Final.Spill's, when the plane spilled.
	Missed bool
	// Next is where a later poll of the job continues.
	Next Cursors
}

// watch watches job id, started with Jobs.Attend, for up to window:
// it looks at most watchInterval apart, shows observe (nil ignores)
// each stream's rolling tail after every look that brought output, and
// stops as soon as the job ends. A job still running when the window
// closes is handed to its owner with Release. If ctx ends first, the job
// is killed (as a foreground run would be) and ctx's error is returned
// beside what was seen. Any other error is the plane's (an *Error or a
// *CursorError), returned as is.
func watch(ctx context.Context, jobs Jobs, o Owner, id ID, window time.Duration, observe func(tool.OutputTail)) (watched, error) {
	w := watched{ID: id}
	views := [2]*Tail{NewTail(tool.TailBytes), NewTail(tool.TailBytes)}
	deadline := time.Now().Add(window)
	for {
		wait := min(watchInterval, max(time.Until(deadline), 0))
		p, err := jobs.Poll(ctx, o, id, w.Next, wait)
		if err != nil {
			return w, w.stop(ctx, jobs, o, err)
		}
		w.absorb(p, views, observe)
		if !p.State.Pending() {
			w.Ended = true
			return w, nil
		}
		if ctx.Err() != nil {
			return w, w.stop(ctx, jobs, o, ctx.Err())
		}
		if !time.Now().Before(deadline) {
			break
		}
	}
	rel, err := jobs.Release(ctx, o, id)
	if err != nil {
		return w, w.stop(ctx, jobs, o, err)
	}
	if rel == AlreadyEnded {
		p, err := jobs.Poll(context.WithoutCancel(ctx), o, id, w.Next, 0)
		if err != nil {
			return w, err
		}
		w.absorb(p, views, observe)
		w.Ended = true
	}
	return w, nil
}

// stop kills the job when ctx ended (the caller went away), and returns
// err unchanged.
func (w *watched) stop(ctx context.Context, jobs Jobs, o Owner, err error) error {
	if ctx.Err() != nil {
		if row, kerr := jobs.Kill(context.WithoutCancel(ctx), o, w.ID); kerr == nil {
			w.Final.Row = row
			w.Ended = true
		}
	}
	return err
}

// absorb folds one look into w.
func (w *watched) absorb(p Polled, views [2]*Tail, observe func(tool.OutputTail)) {
	w.Final, w.Next = p, p.Next
	for i, s := range [2]struct {
		name string
		got  Streamed
		acc  *[]byte
	}{{"stdout", p.Stdout, &w.Stdout}, {"stderr", p.Stderr, &w.Stderr}} {
		if s.got.Dropped > 0 {
			w.Missed = true
		}
		if s.got.Text == "" {
			continue
		}
		if len(w.Output)+len(s.got.Text) <= watchKeepBytes {
			*s.acc = append(*s.acc, s.got.Text...)
			w.Output = append(w.Output, s.got.Text...)
		} else {
			w.Missed = true
		}
		views[i].Push([]byte(s.got.Text))
		if observe != nil {
			shown, _ := views[i].Since(0)
			text := string(shown.Bytes)
			if !utf8.ValidString(text) {
				text = ""
			}
			observe(tool.OutputTail{Stream: s.name, Tail: text, TotalBytes: s.got.Received})
		}
	}
}
