package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Poll answers what arrived after cur and the job's state, waiting up to
// wait (at most MaxWait; below zero means zero) for output or the end. A
// cursor past what a stream received could not have been minted and is
// refused with a *CursorError; one behind the window answers from the
// window's front and counts the gap in Dropped. If ctx ends while the
// poll waits, it answers what stands then.
func (p *Plane) Poll(ctx context.Context, o Owner, id ID, cur Cursors, wait time.Duration) (Polled, error) {
	wait = min(max(wait, 0), p.opts.MaxWait)
	var timer <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	j, err := p.lookup(o, id)
	if err != nil {
		return Polled{}, err
	}
	for {
		ans, err := j.answer(cur)
		if err != nil {
			return Polled{}, err
		}
		fresh := ans.Stdout.Text != "" || ans.Stderr.Text != "" || ans.Stdout.Dropped > 0 || ans.Stderr.Dropped > 0
		if fresh || !ans.State.Pending() || timer == nil {
			return ans, nil
		}
		changed := j.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-timer:
			timer = nil
		case <-ctx.Done():
			timer = nil
		}
		p.mu.Lock()
	}
}

// answer reads j after cur. p.mu held.
func (j *job) answer(cur Cursors) (Polled, error) {
	out, ok := j.out.Since(cur.Stdout)
	errs, ok2 := j.errs.Since(cur.Stderr)
	if !ok || !ok2 {
		return Polled{}, &CursorError{Code: CodeInvalidCursor, Token: cur.Token(j.id), Reason: fmt.Sprintf(
			"it points past what job %s has written; pass back the cursor its last poll returned", j.id)}
	}
	return Polled{
		Row:    j.row,
		Stdout: Streamed{Text: string(out.Bytes), Dropped: out.Dropped, Received: j.out.Received()},
		Stderr: Streamed{Text: string(errs.Bytes), Dropped: errs.Dropped, Received: j.errs.Received()},
		Next:   Cursors{Stdout: out.Next, Stderr: errs.Next},
	}, nil
}

// Release hands an attended job to its owner: Released while it runs,
// AlreadyEnded once it ended (the caller reports the end, and no notice
// is sent). Releasing a job twice answers Released twice.
func (p *Plane) Release(_ context.Context, o Owner, id ID) (Releasing, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, err := p.lookup(o, id)
	if err != nil {
		return 0, err
	}
	if !j.row.State.Pending() {
		return AlreadyEnded, nil
	}
	j.released = true
	return Released, nil
}

// Kill ends the job's whole process tree and answers its row once the
// tree was reaped (or after a fixed bound of 5 s, or when ctx ends, as it
// then stands). A job that already ended answers its end unchanged.
func (p *Plane) Kill(ctx context.Context, o Owner, id ID) (Row, error) {
	p.mu.Lock()
	j, err := p.lookup(o, id)
	if err != nil {
		p.mu.Unlock()
		return Row{}, err
	}
	if !j.row.State.Pending() {
		row := j.row
		p.mu.Unlock()
		return row, nil
	}
	if j.cause == "" {
		j.cause = StopOwner
	}
	ex := j.ex // nil while clearing: start cancels it once cleared
	p.mu.Unlock()
	if ex != nil {
		ex.Cancel()
	}
	t := time.NewTimer(killSettleTimeout)
	defer t.Stop()
	select {
	case <-j.settled:
	case <-t.C:
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return j.row, nil
}

// Send writes data to the job's standard input within a fixed bound of 5
// seconds and, with CloseStdin, closes it. A job that ended, closed its
// input, or does not read it is refused with CodeJobPlaneUnavailable.
func (p *Plane) Send(_ context.Context, o Owner, id ID, data []byte, end StdinEnd) (Sent, error) {
	p.mu.Lock()
	j, err := p.lookup(o, id)
	live := err == nil && j.row.State.Pending()
	p.mu.Unlock()
	if err != nil {
		return Sent{}, err
	}
	if !live {
		return Sent{}, &Error{Code: CodeJobPlaneUnavailable, Reason: fmt.Sprintf("job %s has ended; its standard input is closed", id)}
	}
	j.sendMu.Lock()
	defer j.sendMu.Unlock()
	if j.stdin == nil {
		return Sent{}, &Error{Code: CodeJobPlaneUnavailable, Reason: fmt.Sprintf("job %s is still starting; send again once a poll says it runs", id)}
	}
	if j.stdinClosed {
		return Sent{}, &Error{Code: CodeJobPlaneUnavailable, Reason: fmt.Sprintf("job %s's standard input is already closed", id)}
	}
	var sent Sent
	if len(data) > 0 {
		j.stdin.SetWriteDeadline(time.Now().Add(sendTimeout))
		n, err := j.stdin.Write(data)
		sent.Bytes = n
		if err != nil {
			reason := "the job no longer reads its standard input"
			if errors.Is(err, os.ErrDeadlineExceeded) {
				reason = fmt.Sprintf("the job did not read its standard input within %s", sendTimeout)
			}
			return sent, &Error{Code: CodeJobPlaneUnavailable, Reason: fmt.Sprintf("%s (%d of %d bytes written)", reason, n, len(data))}
		}
	}
	if end == CloseStdin {
		j.stdin.Close()
		j.stdinClosed = true
		sent.Closed = true
	}
	return sent, nil
}

// List answers the strand's jobs, oldest first: live ones and up to
// MaxEnded ended ones.
func (p *Plane) List(_ context.Context, o Owner) (Listed, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	jobs := p.jobs.Entries(o.Strand)
	l := Listed{Jobs: make([]Row, 0, len(jobs))}
	for _, j := range jobs {
		l.Jobs = append(l.Jobs, j.row)
	}
	return l, nil
}
