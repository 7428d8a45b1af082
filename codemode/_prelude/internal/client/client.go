// Package client is the program's one connection to the host: it opens
// the capability channel at ChannelFD on first use, sends each call as a
// cap_call frame under an id of its own, and hands every cap_result to
// the goroutine waiting for it. Programs never import it; the cap
// packages call Call.
package client

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"cap/internal/wire"
)

// ChannelFD is the descriptor the host hands the program its channel on.
// It must equal the host broker's ExtraFileFD; a test of the host holds
// the two equal.
const ChannelFD = 5

// The codes the prelude itself reports (every other code is the host's).
const (
	// ChannelClosed: the channel to the host is gone (closed, unreadable
	// or never open); no call can be answered any more.
	ChannelClosed = "channel_closed"
	// BadResult: the host's answer did not have the documented shape.
	BadResult = "bad_result"
	// FrameTooLarge: the call's arguments do not fit in one frame
	// (wire.MaxFrameBytes); nothing was sent. The host's word for the same
	// refusal.
	FrameTooLarge = "frame_too_large"
	// cancelled is the prelude's word for a call whose context ended.
	cancelled = "cancelled"
	// hostCancelled is the host's answer to a call the program cancelled
	// (code mode's call_cancelled).
	hostCancelled = "call_cancelled"
)

// Error is the one error type every cap package returns. Cap names the
// capability called ("fs.read"), Code is a stable snake_case word to
// switch on, Message a sentence saying what happened and what to do.
type Error struct {
	Cap     string
	Code    string
	Message string
	cause   error
}

// Error renders "cap: code: message".
func (e *Error) Error() string {
	s := e.Code
	if e.Cap != "" {
		s = e.Cap + ": " + s
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the cause: context.Canceled or context.DeadlineExceeded
// for a call whose context ended, else nil.
func (e *Error) Unwrap() error { return e.cause }

// reply is what a waiting call receives.
type reply struct {
	ok  map[string]any
	err *Error
}

// waiter is one call waiting for its answer.
type waiter struct {
	id         uint64
	ch         chan reply // buffered: the one answer, or the channel's end
	cancelSent atomic.Bool
}

// Client multiplexes calls from any number of goroutines over one
// channel.
type Client struct {
	fd   int
	once sync.Once
	r    *bufio.Reader // what the leader reads frames from
	ring *ring         // the shared ring pair, when the host granted one

	// lead is held by the one waiting call that reads frames for every
	// call (the leader): a call answered while it waits returns without
	// a hand-off to another goroutine. The leader blocks in read(2)
	// itself (the channel is a blocking descriptor), so an answer wakes
	// it without a trip through the runtime's poller.
	lead chan struct{}

	// wmu guards the frames waiting to be written. One caller at a time
	// writes (writing set); a caller that queues a frame meanwhile leaves
	// it to that writer, so calls made together go out in one write.
	wmu     sync.Mutex
	queued  []byte // frames waiting to be written
	spare   []byte // the last written batch's buffer, for reuse
	writing bool

	mu      sync.Mutex
	next    uint64
	pending map[uint64]*waiter
	dead    *Error // set once: every later call fails with it
}

// std is the process's client: the channel is one per process.
var std = &Client{fd: ChannelFD}

// Call calls capability capName with args on the process's channel and
// returns the "ok" map of its result, or an *Error.
func Call(ctx context.Context, capName string, args map[string]any) (map[string]any, error) {
	return std.Call(ctx, capName, args)
}

// readSpin is how long the leader's read that finds nothing asks again
// before it sleeps in read(2), while answers come quickly: a loop of
// cheap calls (kv, small reads, a tool of an MCP server on the host,
// which answers in 100–200 µs) then never pays a sleep and a wake-up
// per answer, and a slow call costs at most this much CPU before the
// read sleeps; after a read that waited longer, the next one sleeps at
// once, until a read finds its data within readSpin again. The host's
// reader waits for the program's next call, which comes sooner, and
// spins less (codemode's readSpin).
const readSpin = 300 * time.Microsecond

// fdReader reads the channel's blocking descriptor. Only the leader
// reads, one read at a time.
type fdReader struct {
	fd int
	// spin says the last read found its data within readSpin, so the
	// next one asks again before it sleeps.
	spin bool
}

func (r *fdReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	start := time.Now()
	if r.spin {
		for time.Since(start) < readSpin {
			n, _, err := syscall.Recvfrom(r.fd, p, syscall.MSG_DONTWAIT)
			switch {
			case err == syscall.EAGAIN || err == syscall.EINTR:
				// Let a host reader waiting for this CPU have it.
				syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
				continue
			case err != nil:
				return 0, err
			case n == 0:
				return 0, io.EOF
			}
			return n, nil
		}
	}
	for {
		n, err := syscall.Read(r.fd, p)
		r.spin = time.Since(start) < readSpin
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *Client) open() {
	c.once.Do(func() {
		c.pending = map[uint64]*waiter{}
		c.lead = make(chan struct{}, 1)
		// Blocking, so the leader's read sleeps in the kernel and wakes
		// when the host writes, with no poller in between.
		if err := syscall.SetNonblock(c.fd, false); err != nil {
			c.fail(&Error{Code: ChannelClosed, Message: "the capability channel is not open in this process"})
			return
		}
		var from io.Reader = &fdReader{fd: c.fd}
		rg, err := askRing(c.fd)
		switch {
		case err != nil:
			c.fail(&Error{Code: ChannelClosed, Message: "the capability channel broke while opening: " + err.Error()})
			return
		case rg != nil:
			c.ring, from = rg, rg
		}
		c.r = bufio.NewReaderSize(from, 64<<10)
	})
}

// write writes b to the host: through the ring when the host shared one.
func (c *Client) write(b []byte) error {
	if c.ring != nil {
		return c.ring.write(b)
	}
	return writeAll(c.fd, b)
}

// Call sends one call and waits for its answer or for ctx to end. When
// ctx ends first it sends cancel and returns a "cancelled" *Error that
// unwraps to ctx.Err(): at once, unless this call is the one reading
// the channel for every call, which returns once the next frame arrives
// (the host answers a cancelled call as soon as it stops).
func (c *Client) Call(ctx context.Context, capName string, args map[string]any) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Cap: capName, Code: cancelled, Message: "the call's context ended before it was sent", cause: err}
	}
	c.open()
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		return nil, c.dead.at(capName)
	}
	c.next++
	w := &waiter{id: c.next, ch: make(chan reply, 1)}
	c.pending[w.id] = w
	c.mu.Unlock()

	if err := c.send(wire.Frame{ID: w.id, Kind: wire.KindCapCall, Body: map[string]any{"cap": capName, "args": args}}); err != nil {
		c.forget(w.id)
		if errors.Is(err, wire.ErrFrameTooLarge) {
			return nil, &Error{Cap: capName, Code: FrameTooLarge, Message: "the arguments exceed the 16 MiB frame bound; send less per call"}
		}
		return nil, &Error{Cap: capName, Code: BadResult, Message: "the arguments could not be encoded: " + err.Error()}
	}
	cancelledErr := &Error{Cap: capName, Code: cancelled, Message: "the call's context ended before the host answered; the host was told to cancel it"}
	if r, ok := c.await(ctx, w); ok {
		if r.err != nil && r.err.Code == hostCancelled && ctx.Err() != nil {
			// The host's answer to this call's cancel.
			cancelledErr.cause = ctx.Err()
			return nil, cancelledErr
		}
		return r.result(capName)
	}
	if !c.forget(w.id) {
		// The answer (or the channel's end) was delivered meanwhile.
		return (<-w.ch).result(capName)
	}
	c.sendCancel(w)
	cancelledErr.cause = ctx.Err()
	return nil, cancelledErr
}

func (r reply) result(capName string) (map[string]any, error) {
	if r.err != nil {
		return nil, r.err.at(capName)
	}
	return r.ok, nil
}

// at returns a copy of e naming capName.
func (e *Error) at(capName string) *Error {
	c := *e
	c.Cap = capName
	return &c
}

// maxSpareBytes bounds the write buffer kept for the next batch.
const maxSpareBytes = 64 << 10

// send queues f and, unless another caller is writing, writes every
// queued frame. Its error is f's encoding's (nothing was queued); a
// write that fails ends the client instead.
func (c *Client) send(f wire.Frame) error {
	c.wmu.Lock()
	b, err := wire.AppendFrame(c.queued, f)
	if err != nil {
		c.wmu.Unlock()
		return err
	}
	c.queued = b
	if c.writing {
		c.wmu.Unlock()
		return nil
	}
	c.writing = true
	for len(c.queued) > 0 {
		out := c.queued
		c.queued = c.spare[:0]
		c.spare = nil
		c.wmu.Unlock()
		err := c.write(out)
		c.wmu.Lock()
		if cap(out) <= maxSpareBytes {
			c.spare = out[:0]
		}
		if err != nil {
			c.queued, c.writing = nil, false
			c.wmu.Unlock()
			c.fail(&Error{Code: ChannelClosed, Message: "writing to the host failed: " + err.Error()})
			return nil
		}
	}
	c.writing = false
	c.wmu.Unlock()
	return nil
}

// writeAll writes all of b to the blocking descriptor fd.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// sendCancel tells the host to abandon w's call, once.
func (c *Client) sendCancel(w *waiter) {
	if w.cancelSent.CompareAndSwap(false, true) {
		c.send(wire.Frame{ID: w.id, Kind: wire.KindCancel})
	}
}

// forget removes id from the pending calls and says whether it was
// still there.
func (c *Client) forget(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// isPending says whether id still waits for its answer.
func (c *Client) isPending(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	return ok
}

// fail ends the client: every pending call and every later one fails
// with e. The first failure wins.
func (c *Client) fail(e *Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead != nil {
		return
	}
	c.dead = e
	for id, w := range c.pending {
		w.ch <- reply{err: e}
		delete(c.pending, id)
	}
}

func (c *Client) deliver(id uint64, r reply) {
	c.mu.Lock()
	w, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ok { // an answer to a call already cancelled is dropped
		w.ch <- r
	}
}

// await waits for w's answer, reading frames for every call while it
// leads; ok is false when ctx ended first.
func (c *Client) await(ctx context.Context, w *waiter) (reply, bool) {
	for {
		select {
		case r := <-w.ch:
			return r, true
		case <-ctx.Done():
			return reply{}, false
		case c.lead <- struct{}{}:
		}
		r, ok, answered := c.leadUntil(ctx, w)
		<-c.lead
		if answered || !ok {
			return r, ok
		}
	}
}

// leadUntil reads and delivers frames until w holds an answer (answered)
// or ctx ends (ok false). A channel that ended answers every call. The
// leader's read cannot be interrupted, so when ctx ends while it waits
// it sends cancel at once: the host's answer to it (or any frame before
// it) ends the read.
func (c *Client) leadUntil(ctx context.Context, w *waiter) (r reply, ok, answered bool) {
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			if c.isPending(w.id) {
				c.sendCancel(w)
			}
		})
		defer stop()
	}
	for {
		select {
		case r := <-w.ch:
			return r, true, true
		default:
		}
		if ctx.Err() != nil {
			return reply{}, false, false
		}
		c.readOne() // false: the channel ended, and w.ch holds its failure
	}
}

// readOne reads one frame and delivers it; false means the channel ended
// (every pending call was failed).
func (c *Client) readOne() bool {
	{
		f, err := wire.ReadFrame(c.r)
		if err != nil {
			msg := "the host closed the channel"
			if err != io.EOF {
				msg = "the channel from the host broke: " + err.Error()
			}
			c.fail(&Error{Code: ChannelClosed, Message: msg})
			return false
		}
		switch f.Kind {
		case wire.KindCapResult:
			c.deliver(f.ID, decodeResult(f.Body))
		case wire.KindOutcome:
			e := &Error{Code: ChannelClosed, Message: "the host ended the execution"}
			if m, ok := f.Body.(map[string]any); ok {
				if code, ok := m["code"].(string); ok && code != "" {
					e.Code = code
				}
				if msg, ok := m["message"].(string); ok {
					e.Message = msg
				}
			}
			c.fail(e)
			return false
		default:
			c.fail(&Error{Code: ChannelClosed, Message: "the host sent a frame of unknown kind " + f.Kind})
			return false
		}
	}
	return true
}

// decodeResult reads a cap_result body: exactly one of {"ok": map} or
// {"err": {"code", "message"}}.
func decodeResult(body any) reply {
	m, ok := body.(map[string]any)
	if ok && len(m) == 1 {
		if v, ok := m["ok"]; ok {
			if okm, ok := v.(map[string]any); ok {
				return reply{ok: okm}
			}
			return reply{err: &Error{Code: BadResult, Message: "the host's result is not a map"}}
		}
		if v, ok := m["err"].(map[string]any); ok {
			code, _ := v["code"].(string)
			msg, _ := v["message"].(string)
			if code != "" {
				return reply{err: &Error{Code: code, Message: msg}}
			}
		}
	}
	return reply{err: &Error{Code: BadResult, Message: "the host's answer is neither {ok} nor {err: {code, message}}"}}
}
