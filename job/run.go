package job

import (
	"os"
	"sync"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/sandbox"
)

// job is one job's record. Fields other than the immutable identity are
// guarded by the plane's mutex, except stdin (sendMu).
type job struct {
	id    ID
	owner Owner
	wake  IdleWake

	row      Row
	released bool      // the owner holds it (Start, or Release answered Released)
	cause    StopCause // why the harness asked it to stop, before it settled
	ex       *sandbox.Execution
	out      *Tail
	errs     *Tail
	spools   [2]*blob.Spool // nil without Options.Blobs
	changed  chan struct{}  // closed and replaced on every change
	settled  chan struct{}  // closed once the row is terminal for good

	sendMu      sync.Mutex
	stdin       *os.File
	stdinClosed bool
}

// signal wakes every poll waiting on j. p.mu held.
func (j *job) signal() {
	close(j.changed)
	j.changed = make(chan struct{})
}

// tail returns the window of stream s.
func (j *job) tail(s sandbox.Stream) *Tail {
	if s == sandbox.Stderr {
		return j.errs
	}
	return j.out
}

// run drains j's output into its windows until the command settles, sends
// heartbeats when asked, then records the end.
func (p *Plane) run(j *job) {
	defer p.jobs.Done()
	var beat <-chan time.Time
	if j.wake == WakeWhenIdle && p.opts.Notify != nil {
		t := time.NewTicker(p.opts.Heartbeat)
		defer t.Stop()
		beat = t.C
	}
	output := j.ex.Output()
	for output != nil {
		select {
		case o, ok := <-output:
			if !ok {
				output = nil
				break
			}
			p.mu.Lock()
			j.tail(o.Stream).Push(o.Bytes)
			j.signal()
			p.mu.Unlock()
			if sp := j.spools[o.Stream-sandbox.Stdout]; sp != nil {
				sp.Write(o.Bytes) // a failed spool only costs the spill
			}
		case <-beat:
			p.mu.Lock()
			n, send := p.noticeOf(j, NoticeHeartbeat), j.released
			p.mu.Unlock()
			if send {
				p.opts.Notify(n)
			}
		}
	}
	settled := j.ex.Wait()
	spill := j.finishSpools(p.opts.Blobs)

	j.sendMu.Lock()
	j.stdin.Close()
	j.stdinClosed = true
	j.sendMu.Unlock()

	p.mu.Lock()
	j.out.End()
	j.errs.End()
	ev := evExited
	switch {
	case settled.Failed != "":
		ev = evNeverRan
	case settled.OutputLimited:
		ev = evKilled
		j.cause = StopOutputBound // whatever else was asked: the bound stopped it
	case settled.TimedOut:
		ev = evKilled
		j.cause = StopWall
	case settled.Cancelled:
		ev = evKilled
		if j.cause == "" {
			j.cause = StopAbort // the ledger cancelled it: step or operation abort
		}
	}
	if s, ok := advance(j.row.State, ev); ok {
		j.row.State = s
		switch s {
		case Refused:
			j.row.Refusal = settled.Failed
		case Killed:
			j.row.Cause = j.cause
			j.row.Exit = &settled
		case Exited:
			j.row.Exit = &settled
		}
		j.row.Spill = spill
	}
	notify := j.released && p.opts.Notify != nil &&
		(j.row.Lifetime != LifetimeSession || j.wake == WakeWhenIdle)
	n := p.noticeOf(j, NoticeEnded)
	j.signal()
	close(j.settled)
	p.ended(j)
	p.mu.Unlock()
	if notify {
		p.opts.Notify(n)
	}
}

// finishSpools commits the spools, answering where each stream that
// outgrew its window went. A stream short enough to stay inline in its
// spool but longer than the window is stored too, so every stream a poll
// could have missed bytes of has its whole text somewhere. A stream the
// session's blob budget refused (blob.CodeSpillBudget) is answered too:
// its Overflow keeps the excerpts and says why it was not kept (NotKept).
func (j *job) finishSpools(store *blob.Store) *Spill {
	var s Spill
	for i, sp := range j.spools {
		if sp == nil {
			continue
		}
		inline, o, err := sp.Finish()
		if err != nil && o == nil {
			continue
		}
		if o == nil && [2]*Tail{j.out, j.errs}[i].Front() > 0 {
			if o, _ = store.Spill([]byte(inline)); o == nil {
				continue
			}
		}
		if o == nil {
			continue
		}
		if i == 0 {
			s.Stdout = o
		} else {
			s.Stderr = o
		}
	}
	if s.Stdout == nil && s.Stderr == nil {
		return nil
	}
	return &s
}

// noticeOf builds a notice about j. p.mu held.
func (p *Plane) noticeOf(j *job, k NoticeKind) Notice {
	return Notice{Kind: k, Owner: j.owner, Job: j.row, Received: j.out.Received() + j.errs.Received()}
}
