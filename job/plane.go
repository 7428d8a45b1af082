package job

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/handles"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// Defaults of the reference plane: each applies where its Options field
// is zero or less.
const (
	defaultMaxLive   = 8
	defaultMaxEnded  = 32
	defaultWall      = 30 * time.Minute
	defaultMaxWall   = 4 * time.Hour
	defaultMaxWait   = 30 * time.Second
	defaultTailBytes = blob.OverflowThreshold
	defaultHeartbeat = time.Minute
)

// Fixed bounds of the reference plane.
const (
	// killSettleTimeout is how long Kill waits for a killed job's tree to
	// be reaped before answering its row as it stands.
	killSettleTimeout = 5 * time.Second
	// sendTimeout bounds one write to a job's standard input; a job that
	// does not read leaves its pipe full and the send refused.
	sendTimeout = 5 * time.Second
	// jobStepPrefix begins the sibling step a job's budget is pooled in.
	jobStepPrefix = "job/"
)

// Options configure a Plane. A field left zero or negative takes the
// default it states.
type Options struct {
	// MaxLive is how many live (starting or running) jobs one strand may
	// hold at once; a start past it is refused with CodeJobCeilingReached.
	// Zero means 8.
	MaxLive int
	// MaxEnded is how many ended jobs the plane keeps per strand for
	// polling and listing; past it the ones that ended longest ago are
	// forgotten (CodeUnknownJob), never the one ending. Zero means 32.
	MaxEnded int
	// Wall is a default-lifetime job's wall when its spec names none,
	// at most MaxWall; zero means 30 minutes. MaxWall clamps any asked
	// wall; zero means 4 hours.
	Wall, MaxWall time.Duration
	// MaxWait is the longest a poll waits. Zero means 30 s.
	MaxWait time.Duration
	// TailBytes is the window kept of each of a job's streams: the most
	// one poll returns of it. Zero means blob.OverflowThreshold (64 KiB);
	// a smaller value is raised to one UTF-8 character (utf8.UTFMax
	// bytes).
	TailBytes int
	// Heartbeat is the interval of idle heartbeats for a job that asked
	// for them. Zero means a minute.
	Heartbeat time.Duration
	// Notify, when set, is told when a job its owner holds ends, and at
	// each heartbeat of a job that asked for them while its owner holds
	// it. An attended job is held only once Release answered Released; a
	// session-lifetime job's end is told only if it asked for heartbeats.
	// Notify is called from the job's own goroutine with no lock held and
	// must not block for long. Nil means the host is told nothing.
	Notify func(Notice)
	// Blobs, when set, receives each stream's whole output when it
	// outgrows the window, so an ended job's Row.Spill can name it.
	Blobs *blob.Store
	// MaxOutputBytes bounds what one job may write to stdout and stderr
	// together. Zero means tool.MaxCommandOutputBytes, the bound bash
	// states for every command it runs; a larger value is clamped to it,
	// so a host can only lower it. At the bound the broker stops the
	// job's whole tree, and the row says Killed with cause
	// StopOutputBound. The windows keep the output's tail, and the spill
	// (with Blobs) holds everything up to the bound: what a job may spool.
	MaxOutputBytes int64
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxLive, defaultMaxLive)
	def(&o.MaxEnded, defaultMaxEnded)
	def(&o.TailBytes, defaultTailBytes)
	defDur(&o.Wall, defaultWall)
	defDur(&o.MaxWall, defaultMaxWall)
	defDur(&o.MaxWait, defaultMaxWait)
	defDur(&o.Heartbeat, defaultHeartbeat)
	o.Wall = min(o.Wall, o.MaxWall)
	if o.MaxOutputBytes <= 0 || o.MaxOutputBytes > tool.MaxCommandOutputBytes {
		o.MaxOutputBytes = tool.MaxCommandOutputBytes
	}
	return o
}

// NoticeKind says what a Notice reports.
type NoticeKind int

const (
	// NoticeEnded: a job its owner holds reached a terminal state.
	NoticeEnded NoticeKind = iota + 1
	// NoticeHeartbeat: a job that asked for heartbeats is still running.
	NoticeHeartbeat
)

// String returns "ended" or "heartbeat".
func (k NoticeKind) String() string {
	if k == NoticeHeartbeat {
		return "heartbeat"
	}
	return "ended"
}

// Notice is what a Plane tells its host about a job the owner holds.
type Notice struct {
	// Kind says what the notice reports.
	Kind NoticeKind
	// Owner is the job's owner, as it started the job.
	Owner Owner
	// Job is the job's row when the notice was sent.
	Job Row
	// Received is the bytes both streams received so far.
	Received int64
}

// Plane is the reference job plane. It clears jobs through a broker under
// the sibling step {operation, "job/<id>"}, with a per-strand ceiling on
// live jobs and a finite default wall (or none, for an explicitly
// session-lifetime job of a top-level strand). It keeps a bounded window
// over each stream with opaque cursors, writes standard input, kills
// whole trees and sends notices to the host. It implements Jobs and is
// safe for concurrent use. A Plane lives for a session: Close kills what
// still runs.
type Plane struct {
	broker *broker.Broker
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// jobs holds each strand's jobs (p.mu held): a job is live in it
	// while its row is pending, and its work is begun from admission
	// until its runner, or forget, is done with it.
	jobs *handles.Table[ID, *job]
}

var _ Jobs = (*Plane)(nil)

// NewPlane returns a plane running jobs through b. A nil b gives a plane
// that refuses every start with CodeJobPlaneUnavailable.
func NewPlane(b *broker.Broker, opts Options) *Plane {
	ctx, cancel := context.WithCancel(context.Background())
	opts = opts.withDefaults()
	return &Plane{broker: b, opts: opts, ctx: ctx, cancel: cancel,
		jobs: handles.New[ID, *job](opts.MaxLive, opts.MaxEnded)}
}

// Options returns the plane's options with every default filled in.
func (p *Plane) Options() Options { return p.opts }

// MaxWait returns the longest a poll waits.
func (p *Plane) MaxWait() time.Duration { return p.opts.MaxWait }

// Start clears spec and runs it as a job its owner holds from the start.
func (p *Plane) Start(ctx context.Context, o Owner, spec Spec) (Started, error) {
	return p.start(ctx, o, spec, true)
}

// Attend clears spec and runs it as a job the caller watches until
// Release.
func (p *Plane) Attend(ctx context.Context, o Owner, spec Spec) (Started, error) {
	return p.start(ctx, o, spec, false)
}

func (p *Plane) start(ctx context.Context, o Owner, spec Spec, released bool) (Started, error) {
	if err := CheckLifetime(o.Strand, spec.Lifetime); err != nil {
		return Started{}, err
	}
	if p.broker == nil {
		return Started{}, &Error{Code: CodeJobPlaneUnavailable, Reason: "this plane has no broker to run commands"}
	}
	if err := ctx.Err(); err != nil {
		return Started{}, &Error{Code: CodeJobPlaneUnavailable, Reason: "the call ended before the job started: " + err.Error()}
	}
	j, err := p.admit(o, spec, released)
	if err != nil {
		return Started{}, err
	}
	var timeout time.Duration
	if spec.Lifetime != LifetimeSession {
		timeout = spec.Wall
		if timeout <= 0 {
			timeout = p.opts.Wall
		}
		timeout = min(timeout, p.opts.MaxWall)
	}
	stdinR, stdinW, perr := os.Pipe()
	if perr != nil {
		p.forget(j)
		return Started{}, &Error{Code: CodeJobPlaneUnavailable, Reason: "could not make the job's standard input: " + perr.Error()}
	}
	ex, err := p.broker.Clear(p.ctx, sandbox.CallSpec{
		Key:     sandbox.StepKey{OpID: o.OpID, StepID: jobStepPrefix + string(j.id)},
		Argv:    spec.Argv,
		Dir:     spec.Dir,
		Env:     spec.Env,
		Stdin:   stdinR,
		Policy:  spec.Policy,
		Budget:  sandbox.Budget{MaxOutstanding: 1},
		Timeout: timeout,

		MaxOutputBytes: p.opts.MaxOutputBytes,
	})
	stdinR.Close() // the command holds its own copy
	if d := sandbox.DenialOf(err); d != nil {
		stdinW.Close()
		p.forget(j)
		return Started{}, &Error{Code: CodeJobClearanceRefused, Reason: d.Explain(), Denial: d}
	}
	j.sendMu.Lock()
	j.stdin = stdinW
	j.sendMu.Unlock()
	p.mu.Lock()
	j.ex = ex
	j.row.State, _ = advance(j.row.State, evCleared)
	if timeout > 0 {
		j.row.Deadline = j.row.Started.Add(timeout)
	}
	kill := j.cause != ""
	j.signal()
	started := Started{ID: j.id, Deadline: j.row.Deadline, Enforcement: ex.Enforcement}
	p.mu.Unlock()
	if kill { // killed or the plane closed while it was clearing
		ex.Cancel()
	}
	go p.run(j)
	return started, nil
}

// admit reserves a Starting record for o's strand, or refuses.
func (p *Plane) admit(o Owner, spec Spec, released bool) (*job, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lifetime := spec.Lifetime
	if lifetime == "" {
		lifetime = LifetimeDefault
	}
	j, err := p.jobs.Admit(o.Strand, func(n uint64) ID {
		return ID(fmt.Sprintf("j%d-%s", n, randomHex(2)))
	}, func(id ID, _ uint64) *job {
		return &job{
			id:       id,
			owner:    o,
			wake:     spec.Wake,
			released: released,
			out:      NewTail(p.opts.TailBytes),
			errs:     NewTail(p.opts.TailBytes),
			changed:  make(chan struct{}),
			settled:  make(chan struct{}),
			row:      Row{ID: id, Command: spec.Command, State: Starting, Started: time.Now(), Lifetime: lifetime},
		}
	})
	switch err {
	case nil:
	case handles.Closed:
		return nil, &Error{Code: CodeJobPlaneUnavailable, Reason: "the job plane is closed"}
	default:
		live := len(p.jobs.LiveKeys(o.Strand))
		return nil, &Error{Code: CodeJobCeilingReached, Reason: fmt.Sprintf(
			"%d of %d jobs already run for this agent; wait for one to end or kill one with job_kill", live, p.opts.MaxLive)}
	}
	if p.opts.Blobs != nil {
		j.spools = [2]*blob.Spool{p.opts.Blobs.NewSpool(), p.opts.Blobs.NewSpool()}
	}
	p.jobs.Begin() // cannot refuse: Admit found the plane open under this same lock
	return j, nil
}

// forget drops a record that never ran (its clearance was refused): the
// caller reports the refusal, so no listing shows it. A Kill already
// waiting on it answers Refused at once.
func (p *Plane) forget(j *job) {
	p.mu.Lock()
	p.jobs.Drop(j.id)
	j.row.State, _ = advance(j.row.State, evNeverRan)
	j.row.Refusal = "its clearance was refused"
	j.signal()
	close(j.settled)
	p.mu.Unlock()
	for _, sp := range j.spools {
		if sp != nil {
			sp.Abort()
		}
	}
	p.jobs.Done()
}

// ended records that j reached a terminal state: past MaxEnded, its
// strand forgets the jobs that ended longest ago (never j). p.mu held.
func (p *Plane) ended(j *job) { p.jobs.End(j.id) }

// lookup finds o's job id. p.mu held.
func (p *Plane) lookup(o Owner, id ID) (*job, error) {
	j, ok := p.jobs.Lookup(o.Strand, id)
	if !ok {
		return nil, &Error{Code: CodeUnknownJob, Reason: fmt.Sprintf("no job %s belongs to this agent; job_poll without a handle lists yours", quote(string(id)))}
	}
	return j, nil
}

// Close kills every job still running (their rows say StopShutdown) and
// refuses new ones, then waits for the jobs to settle until ctx ends.
// Jobs that did not settle by then are marked Lost and ctx's error is
// returned. Close may be called more than once.
func (p *Plane) Close(ctx context.Context) error {
	p.mu.Lock()
	live := p.jobs.Close()
	var kill []*sandbox.Execution
	for _, j := range live {
		if j.row.State.Pending() && j.cause == "" {
			j.cause = StopShutdown
			if j.ex != nil {
				kill = append(kill, j.ex)
			}
		}
	}
	p.mu.Unlock()
	for _, ex := range kill {
		ex.Cancel()
	}
	if err := p.jobs.Wait(ctx); err == nil {
		p.cancel()
		return nil
	}
	p.mu.Lock()
	for _, j := range live {
		if s, ok := advance(j.row.State, evLost); ok {
			j.row.State, j.row.Lost = s, LostUnsettled
			p.ended(j)
			j.signal()
		}
	}
	p.mu.Unlock()
	p.cancel()
	return ctx.Err()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
