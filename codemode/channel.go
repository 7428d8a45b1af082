package codemode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/wire"
	"github.com/agentloom/loom/tool"
	"golang.org/x/sys/unix"
)

// Bounds of the capability channel.
const (
	// maxCallTimeout bounds one capability call, from its arrival to its
	// answer; past it the call is answered codeCallTimeout.
	maxCallTimeout = 120 * time.Second
	// maxCallsInFlight bounds the calls one program has unanswered at
	// once; a call past it is refused in band (codeTooManyCalls) and
	// served once the program has fewer.
	maxCallsInFlight = 256
	// outcomeWriteTimeout bounds the host's write of its terminal outcome
	// frame to a program that may not be reading.
	outcomeWriteTimeout = 100 * time.Millisecond
	// channelReadBuffer is the host's read buffer on a channel: most
	// frames arrive whole in one read.
	channelReadBuffer = 64 << 10
	// answerBatchBytes bounds the answers the serve loop holds back while
	// it serves more calls already read (one write for them all): past
	// it, or when no whole frame is left to serve, they are written.
	answerBatchBytes = 64 << 10
	// maxInFlightBytes bounds what a program's unanswered calls'
	// arguments hold in the host's memory together, each call counting
	// its frame's bytes and a bound on what decoding each value the frame
	// held allocates; a call past it is refused in band
	// (codeTooManyCalls).
	maxInFlightBytes = 64 << 20
	// maxHeavyCalls bounds the calls of capabilities with large answers
	// (up to tool.MaxFileBytes for fs.read) that are routed or waiting to
	// be written at once; more wait their turn within their own timeout.
	maxHeavyCalls = 8
)

// router serves one capability call; its error carries a code (codeOf).
type router func(ctx context.Context, cap string, args map[string]any) (any, error)

// channel is the host end of one execution's capability channel. It
// treats everything the program sends as hostile: frames are decoded
// totally under wire.MaxFrameBytes, a malformed frame or a duplicate
// in-flight id is a channel fault that ends the execution, and every
// call is bounded by maxCallTimeout and the execution's own context.
type channel struct {
	conn  *transport.Conn
	route router
	rec   *recorder
	ctx   context.Context // ends when the execution ends

	wmu sync.Mutex // one frame written at a time
	// out holds encoded answers not yet written, under wmu: the serve
	// loop's answers to instant calls wait there while it serves more
	// calls it has already read, so a burst is answered in one write.
	out bytes.Buffer

	mu       sync.Mutex
	inflight map[uint64]*pendingCall
	// unanswered counts admitted calls whose answer is not yet being
	// written: a call leaves inflight when its router returns (its id may
	// then be reused) but holds its maxCallsInFlight slot until it holds
	// the writer, so a program that never reads cannot pin routed calls
	// (goroutines and results) without bound, and a program that reads
	// never sees an answer whose slot is still taken.
	unanswered int
	held       int64 // bytes the calls in flight hold (see maxInFlightBytes)
	ending     bool
	calls      sync.WaitGroup
	// heavy holds a slot for each call of a capability whose answer may
	// be large, from its routing until its answer is written.
	heavy chan struct{}
}

type pendingCall struct {
	cancel    context.CancelFunc
	cancelled bool  // the program sent cancel
	bytes     int64 // what the call holds, against maxInFlightBytes
}

func newChannel(ctx context.Context, conn *transport.Conn, route router, rec *recorder) *channel {
	return &channel{conn: conn, route: route, rec: rec, ctx: ctx, inflight: map[uint64]*pendingCall{}, heavy: make(chan struct{}, maxHeavyCalls)}
}

// channelWords decodes the program's frames, sharing rather than
// allocating the words they repeat besides the protocol's own: the
// workspace seam's capability names and their arguments' names.
var channelWords = wire.NewDecoder(append([]string{
	"path", "content", "key", "value", "found", "pattern", "glob", "argv", "dir", "stdin",
	"timeout_ms", "edits", "find", "replace", "handle", "cursor", "wait_ms", "input", "close",
	"name", "media_type", "ignore_case", "max_results"}, workspaceCapabilities()...)...)

// channelFault is why an execution's channel was ended: a frame the host
// refused to decode, or a duplicate in-flight id. Its code is
// CodeChannelFault.
type channelFault struct {
	Reason string
}

func (e *channelFault) Error() string { return "channel fault: " + e.Reason }

// ErrorCode is CodeChannelFault, so tool.CodeOf reads it (see
// tool.CodedError).
func (e *channelFault) ErrorCode() string { return string(CodeChannelFault) }

// serve reads the program's frames until its end closes (nil), the
// execution ends (nil) or a fault (a *channelFault).
func (ch *channel) serve() error {
	br := bufio.NewReaderSize(ch.conn, channelReadBuffer)
	r := &countingReader{r: br}
	for {
		if !wholeFrameBuffered(br) {
			// The next read may block: first write the answers held back.
			ch.flush()
		}
		before := r.n
		f, values, err := channelWords.ReadFrame(r)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || ch.ctx.Err() != nil {
				return nil
			}
			var fe *wire.FrameError
			if errors.As(err, &fe) {
				return &channelFault{Reason: fe.Error()}
			}
			return nil // the program's end went away mid-frame: it exited
		}
		switch f.Kind {
		case wire.FrameCapCall:
			if err := ch.call(f, r.n-before+int64(values)*wire.DecodedValueBytes); err != nil {
				return err
			}
		case wire.FrameCancel:
			ch.cancel(f.ID)
		case wire.FrameRing:
			if err := ch.shareRing(br, f.Body); err != nil {
				return err
			}
		default:
			return &channelFault{Reason: fmt.Sprintf("the program sent a %s frame, which only the host sends", quoteArg(string(f.Kind)))}
		}
	}
}

// shareRing answers the program's ring frame: the channel moves onto a
// shared ring pair (see wire.FrameRing), or stays on the socket with a nil
// answer when the host cannot make one. Asking twice, with a body, or
// with anything sent after the ask is a fault: the program's bytes must
// not straddle the move.
func (ch *channel) shareRing(br *bufio.Reader, body any) error {
	switch {
	case ch.conn.OnRing():
		return &channelFault{Reason: "the program asked for a shared ring twice"}
	case body != nil:
		return &channelFault{Reason: "the program's ring frame has a body"}
	case br.Buffered() > 0:
		return &channelFault{Reason: "the program sent more after asking for a shared ring, before its answer"}
	}
	ch.wmu.Lock()
	defer ch.wmu.Unlock()
	ch.writeOut() // what the socket owes the program goes first
	r, memfd, err := transport.NewRing()
	if err != nil {
		_ = wire.AppendFrame(&ch.out, wire.Frame{Kind: wire.FrameRing})
		ch.writeOut()
		return nil
	}
	defer unix.Close(memfd)
	var granted bytes.Buffer
	_ = wire.AppendFrame(&granted, wire.Frame{Kind: wire.FrameRing, Body: wire.RingBody(transport.RingHeaderBytes, transport.RingBytes)})
	// A failed write is the program gone or not reading: the next read
	// or the deadline ends the execution.
	_ = ch.conn.ShareRing(r, memfd, granted.Bytes())
	return nil
}

// wholeFrameBuffered reports whether br holds a whole frame, which
// the next read of a frame then decodes without reading the channel.
func wholeFrameBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n < 4 {
		return false
	}
	hdr, _ := br.Peek(4)
	return int64(binary.BigEndian.Uint32(hdr)) <= int64(n-4)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// call admits one cap_call holding size bytes (its frame's and its
// decoded values') and serves it in a goroutine of
// its own.
func (ch *channel) call(f wire.Frame, size int64) error {
	cc, err := wire.DecodeCapCall(f.Body)
	if err != nil {
		return &channelFault{Reason: err.Error()}
	}
	ch.mu.Lock()
	if _, dup := ch.inflight[f.ID]; dup {
		ch.mu.Unlock()
		return &channelFault{Reason: fmt.Sprintf("cap_call id %d is already in flight", f.ID)}
	}
	ref := ch.rec.begin(cc.Cap, func() string { return ch.rec.summary(cc.Cap, cc.Args) })
	if ch.ending || ch.unanswered >= maxCallsInFlight || ch.held+size > maxInFlightBytes {
		var e *CapError
		switch {
		case ch.ending:
			e = &CapError{Code: codeExecutionEnding, Message: "the execution is ending; no call is served any more"}
		case ch.unanswered >= maxCallsInFlight:
			e = &CapError{Code: codeTooManyCalls, Message: fmt.Sprintf("%s refused: %d calls are unanswered, the most a program may have at once; wait for some before calling again", cc.Cap, maxCallsInFlight)}
		default:
			e = &CapError{Code: codeTooManyCalls, Message: fmt.Sprintf("%s refused: the unanswered calls already hold %d bytes of arguments and this one %d, past the %d a program may have in flight; wait for some before calling again", cc.Cap, ch.held, size, maxInFlightBytes)}
		}
		ch.mu.Unlock()
		ch.rec.end(ref, CallFailed, e.Code, true)
		ch.answer(f.ID, nil, e, nil, true)
		return nil
	}
	// An instant call is answered before the next frame is read, so no
	// cancel can reach it and no timeout applies: it runs under the
	// execution's context alone.
	ctx, cancel := ch.ctx, context.CancelFunc(func() {})
	if !instant(cc.Cap) {
		ctx, cancel = context.WithTimeoutCause(ch.ctx, maxCallTimeout, errCallTimeout)
	}
	p := &pendingCall{cancel: cancel, bytes: size}
	ch.inflight[f.ID] = p
	ch.held += size
	ch.unanswered++
	ch.calls.Add(1)
	ch.mu.Unlock()
	if instant(cc.Cap) {
		// Served in memory without blocking: answered here, sparing a
		// goroutine hand-off on the hottest path, its answer held back
		// while more calls already read wait to be served.
		ch.serveCall(ctx, f.ID, p, cc, ref, true)
		return nil
	}
	ch.conn.ArmNudge() // its answer nudges the serve loop (see answer)
	go ch.serveCall(ctx, f.ID, p, cc, ref, false)
	// The call starts on this thread now, and the serve loop's next read
	// waits its turn: the serve loop would otherwise sleep in read(2)
	// holding its processor while another thread is woken to take the
	// call, a wake-up on every routed call's path (tens of microseconds
	// of a call to an MCP server on a loaded host). A call that does not
	// soon block leaves the serve loop to another processor.
	runtime.Gosched()
	return nil
}

// heavy reports a capability whose answer may be large (a file, a
// command's output, a search): at most maxHeavyCalls of them are routed
// or waiting to be written at once.
func heavy(cap string) bool {
	switch cap {
	case "fs.read", "proc.run", "search.grep", "search.glob", "job.poll":
		return true
	}
	return false
}

// instant reports a capability served from memory under a short lock,
// never blocking on I/O: one the serve loop answers itself.
func instant(cap string) bool {
	return cap == "kv.get" || cap == "kv.set" || cap == "kv.delete"
}

var errCallTimeout = errors.New("the capability call ran past its timeout")

// serveCall routes one admitted call and answers it; inline is set for
// the serve loop's own calls (see answer).
func (ch *channel) serveCall(ctx context.Context, id uint64, p *pendingCall, cc wire.CapCall, ref callRef, inline bool) {
	defer ch.calls.Done()
	release := func() {
		ch.mu.Lock()
		ch.unanswered--
		ch.mu.Unlock()
	}
	if heavy(cc.Cap) {
		// Held until the answer is written, so a program that stops
		// reading pins at most maxHeavyCalls large answers.
		select {
		case ch.heavy <- struct{}{}:
			defer func() { <-ch.heavy }()
		case <-ctx.Done():
		}
	}
	res, err := ch.safeRoute(ctx, cc)
	ch.mu.Lock()
	delete(ch.inflight, id)
	ch.held -= p.bytes
	cancelled, ending := p.cancelled, ch.ending
	ch.mu.Unlock()
	p.cancel()
	status := CallOK
	switch {
	case ending && ctx.Err() != nil:
		// The execution ended under the call: finish() counts it
		// unsettled; nothing is answered.
		release()
		return
	case cancelled:
		status, err = CallCancelled, &CapError{Code: codeCallCancelled, Message: cc.Cap + " was cancelled by the program"}
	case errors.Is(context.Cause(ctx), errCallTimeout):
		status, err = CallFailed, &CapError{Code: codeCallTimeout, Message: fmt.Sprintf("%s ran past the %s a capability call may take", cc.Cap, maxCallTimeout)}
	case err != nil:
		status = CallFailed
	}
	var code tool.Code
	if err != nil {
		code = codeOf(err)
	}
	ch.rec.end(ref, status, code, false)
	ch.answer(id, res, err, release, inline)
}

// safeRoute runs the router, turning a panic into a failed call: a
// router's bug never reaches the host.
func (ch *channel) safeRoute(ctx context.Context, cc wire.CapCall) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, &CapError{Code: tool.CodeToolPanicked, Message: fmt.Sprintf("%s failed inside the host (a bug in the host, not in the program): %v", cc.Cap, p)}
		}
	}()
	return ch.route(ctx, cc.Cap, cc.Args)
}

func (ch *channel) cancel(id uint64) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if p, ok := ch.inflight[id]; ok {
		p.cancelled = true
		p.cancel()
	}
}

// answer writes one cap_result. A write that fails (the program stopped
// reading and exited, or the channel is closed) is dropped: the
// execution's end reports what happened. release, when set, frees the
// call's maxCallsInFlight slot once this answer holds the writer. held
// (the serve loop's own answers) leaves the answer in ch.out, under
// answerBatchBytes, for the serve loop's next flush; every other answer
// is written at once, with whatever ch.out held before it.
func (ch *channel) answer(id uint64, res any, err error, release func(), held bool) {
	body := wire.OKBody(res)
	if err != nil {
		body = wire.ResultErr(string(codeOf(err)), boundMessage(err))
	}
	ch.wmu.Lock()
	defer ch.wmu.Unlock()
	if release != nil {
		release()
	}
	err = wire.AppendFrame(&ch.out, wire.Frame{ID: id, Kind: wire.FrameCapResult, Body: body})
	var fe *wire.FrameError
	if errors.As(err, &fe) && fe.Code == wire.CodeFrameTooLarge {
		_ = wire.AppendFrame(&ch.out, wire.Frame{ID: id, Kind: wire.FrameCapResult, Body: wire.ResultErr(string(wire.CodeFrameTooLarge),
			fmt.Sprintf("the answer would exceed the channel's %d-byte frame bound; ask for less at a time", wire.MaxFrameBytes))})
	}
	if !held || ch.out.Len() >= answerBatchBytes {
		ch.writeOut()
	}
	if release != nil && !held {
		// A routed call's answer: when it was the last one unanswered the
		// program likely waits for it to send its next call, which the
		// serve loop, asleep since it routed this one, then need not be
		// rung awake for.
		ch.mu.Lock()
		last := ch.unanswered == 0
		ch.mu.Unlock()
		if last {
			ch.conn.Nudge()
		}
	}
}

// flush writes the answers held in ch.out.
func (ch *channel) flush() {
	ch.wmu.Lock()
	defer ch.wmu.Unlock()
	ch.writeOut()
}

// writeOut writes ch.out in one write and empties it; the caller holds
// wmu. A buffer grown past answerBatchBytes (a large answer) is not
// kept.
func (ch *channel) writeOut() {
	if ch.out.Len() == 0 {
		return
	}
	_, _ = ch.conn.Write(ch.out.Bytes())
	if ch.out.Cap() > 2*answerBatchBytes {
		ch.out = bytes.Buffer{}
		return
	}
	ch.out.Reset()
}

// maxErrorMessageBytes bounds the message of one refused call.
const maxErrorMessageBytes = 4 << 10

func boundMessage(err error) string {
	var ce *CapError
	msg := err.Error()
	if errors.As(err, &ce) {
		msg = ce.Message
	}
	if len(msg) > maxErrorMessageBytes {
		msg = msg[:maxErrorMessageBytes] + "…"
	}
	return msg
}

// end stops serving: every later call is refused, the program is sent
// the terminal outcome frame (bounded, so a program that never reads
// cannot hold the host), calls in flight are cancelled and waited for.
func (ch *channel) end(code tool.Code, message string) {
	ch.mu.Lock()
	if ch.ending {
		ch.mu.Unlock()
		return
	}
	ch.ending = true
	for _, p := range ch.inflight {
		p.cancel()
	}
	ch.mu.Unlock()
	// A deadline set before taking the write lock also ends a write that
	// holds it blocked on a program that stopped reading.
	ch.conn.SetWriteDeadline(time.Now().Add(outcomeWriteTimeout))
	ch.wmu.Lock()
	_ = wire.AppendFrame(&ch.out, wire.Frame{ID: 0, Kind: wire.FrameOutcome, Body: wire.OutcomeBody(string(code), message)})
	ch.writeOut()
	ch.wmu.Unlock()
	ch.calls.Wait()
}
