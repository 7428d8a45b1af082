package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// MaxMessageBytes bounds one inbound JSON-RPC message: one line, its
	// newline not counted. It is twice tool.MaxArgumentBytes, so a call
	// whose arguments are too large for any tool still reaches
	// Registry.Dispatch and is refused in band, with the request's id,
	// instead of at the transport.
	MaxMessageBytes = 32 << 20
	// idScanBytes is how much of an oversized or malformed message is
	// kept to recover its request id for the error response.
	idScanBytes = 4 << 10
	// maxErrorBytes bounds the message of a JSON-RPC error the transport
	// writes, and its data: a longer message (one quoting a value the
	// client sent, say) is cut with its length said, and longer data is
	// dropped, so no error echoes a large value back.
	maxErrorBytes = 1 << 10
	// CodeInputEnded is the JSON-RPC error code of the response the
	// transport gives a call the server made to the client once the
	// client's input has ended (in the range JSON-RPC 2.0 reserves for
	// implementation-defined server errors).
	CodeInputEnded = -32000
)

// inputEnded answers a server-to-client call the client can no longer
// answer.
var inputEnded = &jsonrpc.Error{Code: CodeInputEnded, Message: "the client's input ended before it answered this request"}

// Transport is newline-delimited JSON-RPC over a reader and a writer (the
// MCP stdio transport) that survives bad input. The SDK's own stdio
// transport ends the session at the first line that does not decode; this
// one answers such a line with a JSON-RPC error response and reads on:
//
//   - a line that is not JSON gets a parse error (-32700);
//   - JSON that is not a JSON-RPC 2.0 message, and a batch (an array, which
//     MCP dropped in protocol 2025-06-18), get an invalid-request error
//     (-32600);
//   - a line longer than MaxMessageBytes is discarded unparsed and gets an
//     invalid-request error.
//
// Each error response carries the request's id when the first bytes of
// the line reveal it (so the client's pending call ends), and null
// otherwise, as JSON-RPC 2.0 prescribes. Blank lines are ignored.
//
// The transport also keeps the MCP rule that a request the client
// cancelled (notifications/cancelled) gets no response: the SDK answers
// it once its handler returns, and the transport drops that answer.
//
// The end of input is not the end of the work: a client that pipes a
// batch of requests and closes its end gets an answer to every request
// read before the end. The connection reports the end to the SDK only
// once each of them is answered (each tool runs to its own deadline), so
// a tool already running is not cancelled; a call the server makes to
// the client after the end is answered by the transport with an error
// (CodeInputEnded), since the client can no longer answer it. The
// context given to Connect is the session's: when it ends (a signal, a
// host shutting down), the connection ends at once and the SDK cancels
// every request still running.
type Transport struct {
	// Reader carries the client's messages, one per line.
	Reader io.Reader
	// Writer receives the server's messages, one per line. Each message
	// is written with a single Write call.
	Writer io.Writer
	// MaxMessageBytes bounds one inbound line; 0 means MaxMessageBytes.
	MaxMessageBytes int
}

// errNoStream is returned by Transport.Connect when Reader or Writer is nil.
var errNoStream = errors.New("mcpserve: Transport needs a Reader and a Writer")

// Connect implements mcp.Transport. Call it once per Transport: the
// connection owns Reader and Writer, and Close closes whichever of them
// is an io.Closer.
// ctx is the session's: when it ends, Read reports ctx's error at once,
// and the SDK cancels whatever runs.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	if t.Reader == nil || t.Writer == nil {
		return nil, errNoStream
	}
	max := t.MaxMessageBytes
	if max <= 0 {
		max = MaxMessageBytes
	}
	c := &lineConn{
		w:        t.Writer,
		max:      max,
		incoming: make(chan jsonrpc.Message),
		closed:   make(chan struct{}),
		aborted:  make(chan struct{}),
		changed:  make(chan struct{}, 1),
		inflight: map[jsonrpc.ID]bool{},
		outgoing: map[jsonrpc.ID]bool{},
	}
	c.closers = closersOf(t.Reader, t.Writer)
	c.stopWatch = context.AfterFunc(ctx, func() { c.abort(ctx.Err()) })
	go c.readLoop(bufio.NewReaderSize(t.Reader, 64<<10))
	return c, nil
}

func closersOf(xs ...any) []io.Closer {
	var out []io.Closer
	for _, x := range xs {
		if cl, ok := x.(io.Closer); ok {
			out = append(out, cl)
		}
	}
	return out
}

// lineConn is the mcp.Connection a Transport returns.
type lineConn struct {
	w   io.Writer
	wmu sync.Mutex
	max int

	incoming chan jsonrpc.Message // closed by readLoop when reading ends
	readErr  error                // set by readLoop before closing incoming

	closed    chan struct{}
	closeOnce sync.Once
	closers   []io.Closer
	stopWatch func() bool // stops watching the session's context

	// aborted is closed, with abortErr set first, when the session's
	// context ends.
	aborted   chan struct{}
	abortErr  error
	abortOnce sync.Once

	mu sync.Mutex
	// inflight maps the id of every request read and not yet answered to
	// whether the client has cancelled it.
	inflight map[jsonrpc.ID]bool
	// outgoing holds the id of every call the server wrote to the client
	// and the client has not answered.
	outgoing map[jsonrpc.ID]bool
	// writeErr is the first failure to write; once set, no answer can
	// reach the client.
	writeErr error
	// changed gets a token whenever inflight, outgoing or writeErr
	// change, for a Read draining after the end of input.
	changed chan struct{}
}

// Read implements mcp.Connection. Once the input has ended it returns
// the end only when every request read has been answered (or a write has
// failed, so none can be), answering first every call the server made to
// the client with an inputEnded error.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-c.aborted:
		return nil, c.abortErr
	default:
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case <-c.aborted:
		return nil, c.abortErr
	case m, ok := <-c.incoming:
		if !ok {
			return c.drain(ctx)
		}
		c.track(m)
		return m, nil
	}
}

// drain waits, after the end of input, until nothing read is left to
// answer; see Read.
func (c *lineConn) drain(ctx context.Context) (jsonrpc.Message, error) {
	for {
		c.mu.Lock()
		if c.writeErr == nil {
			for id := range c.outgoing {
				delete(c.outgoing, id)
				c.mu.Unlock()
				return &jsonrpc.Response{ID: id, Error: inputEnded}, nil
			}
		}
		done := c.writeErr != nil || len(c.inflight) == 0
		c.mu.Unlock()
		if done {
			return nil, c.readErr
		}
		select {
		case <-c.changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case <-c.aborted:
			return nil, c.abortErr
		}
	}
}

// signal tells a draining Read that the state it waits on changed; the
// caller holds mu.
func (c *lineConn) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// abort ends the connection at once with err (the session's context
// ended).
func (c *lineConn) abort(err error) {
	c.abortOnce.Do(func() {
		c.abortErr = err
		close(c.aborted)
	})
}

// notificationCancelled is the MCP notification that cancels a request.
const notificationCancelled = "notifications/cancelled"

// track records a request read, or the cancellation of one in flight.
func (c *lineConn) track(m jsonrpc.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp, ok := m.(*jsonrpc.Response); ok {
		delete(c.outgoing, resp.ID)
		return
	}
	req, ok := m.(*jsonrpc.Request)
	if !ok {
		return
	}
	if req.IsCall() {
		c.inflight[req.ID] = false
		return
	}
	if req.Method != notificationCancelled {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	if _, ok := c.inflight[id]; ok {
		c.inflight[id] = true
	}
}

// cancelled reports whether m answers a request the client cancelled,
// forgetting the request either way once it is answered.
func (c *lineConn) cancelled(m jsonrpc.Message) bool {
	resp, ok := m.(*jsonrpc.Response)
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	gone, ok := c.inflight[resp.ID]
	delete(c.inflight, resp.ID)
	c.signal()
	return ok && gone
}

// Write implements mcp.Connection. An error response is held to
// maxErrorBytes.
func (c *lineConn) Write(_ context.Context, m jsonrpc.Message) error {
	if c.cancelled(m) {
		return nil
	}
	if resp, ok := m.(*jsonrpc.Response); ok && resp.Error != nil {
		m = &jsonrpc.Response{ID: resp.ID, Error: boundedError(resp.Error)}
	}
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		c.failed(err)
		return err
	}
	call, _ := m.(*jsonrpc.Request)
	if call != nil && call.IsCall() {
		c.mu.Lock()
		c.outgoing[call.ID] = true
		c.signal()
		c.mu.Unlock()
	}
	err = c.writeLine(data)
	if err != nil && call != nil && call.IsCall() {
		c.mu.Lock()
		delete(c.outgoing, call.ID)
		c.mu.Unlock()
	}
	return err
}

// writeLine writes data and its newline with one Write call.
func (c *lineConn) writeLine(data []byte) error {
	line := make([]byte, 0, len(data)+1)
	line = append(append(line, data...), '\n')
	c.wmu.Lock()
	_, err := c.w.Write(line)
	c.wmu.Unlock()
	if err != nil {
		c.failed(err)
	}
	return err
}

// failed records the first failure to write.
func (c *lineConn) failed(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writeErr == nil {
		c.writeErr = err
		c.signal()
	}
}

// Close implements mcp.Connection. It may be called more than once.
func (c *lineConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.stopWatch()
		close(c.closed)
		for _, cl := range c.closers {
			err = errors.Join(err, cl.Close())
		}
	})
	return err
}

// SessionID implements mcp.Connection; stdio sessions have none.
func (c *lineConn) SessionID() string { return "" }

// readLoop reads lines until the reader ends or the connection closes,
// handing every decodable message to Read and answering every other line.
func (c *lineConn) readLoop(r *bufio.Reader) {
	var err error
	defer func() {
		if err == nil {
			err = io.EOF
		}
		c.readErr = err
		close(c.incoming)
	}()
	for {
		var line []byte
		var over bool
		line, over, err = readLine(r, c.max)
		if len(line) > 0 || over {
			msg, bad := classify(line, over, c.max)
			if bad != nil {
				if werr := c.writeLine(bad); werr != nil {
					err = werr
					return
				}
			} else if msg != nil {
				select {
				case c.incoming <- msg:
				case <-c.closed:
					return
				case <-c.aborted:
					return
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.EOF
			}
			return
		}
	}
}

// readLine returns the next line without its terminator. A line whose
// content (terminator excluded) is longer than max is consumed to its
// end, but only its first idScanBytes are returned, with over set.
func readLine(r *bufio.Reader, max int) (line []byte, over bool, err error) {
	for {
		chunk, e := r.ReadSlice('\n')
		if e == nil {
			chunk = chunk[:len(chunk)-1] // the terminator is not content
		}
		switch {
		case over:
			// Already past the bound: discard.
		case len(line)+len(chunk) > max:
			if len(line) < idScanBytes {
				line = append(line, chunk[:min(len(chunk), idScanBytes-len(line))]...)
			}
			line = line[:min(len(line), idScanBytes)]
			over = true
		default:
			line = append(line, chunk...)
		}
		if e == bufio.ErrBufferFull {
			continue
		}
		return line, over, e
	}
}

// classify turns one line into a message, or into the bytes of the error
// response that answers it. Both are nil for a blank line.
func classify(line []byte, over bool, max int) (jsonrpc.Message, []byte) {
	if over {
		return nil, errorResponse(recoverID(line, true), jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("message exceeds the limit of %d bytes per message; it was discarded unparsed", max))
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if !json.Valid(trimmed) {
		return nil, errorResponse(recoverID(trimmed, false), jsonrpc.CodeParseError, "parse error: the message is not valid JSON")
	}
	if trimmed[0] == '[' {
		return nil, errorResponse(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported; send one message per line")
	}
	msg, err := jsonrpc.DecodeMessage(trimmed)
	if err != nil {
		return nil, errorResponse(recoverID(trimmed, false), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	return msg, nil
}

// wireError is a JSON-RPC 2.0 error response written by the transport
// itself, for lines the SDK never sees.
type wireError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   wireErrorBody   `json:"error"`
}

type wireErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func errorResponse(id json.RawMessage, code int, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, err := json.Marshal(wireError{JSONRPC: "2.0", ID: id, Error: wireErrorBody{Code: code, Message: cutMessage(message)}})
	if err != nil {
		// Unreachable: every field marshals. Fall back to a fixed reply.
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return data
}

// recoverID returns the JSON encoding of the "id" member of the object
// that data begins with, when data (possibly malformed further on)
// reveals it as a string or a number before anything goes wrong;
// otherwise nil. Only the first idScanBytes of data are examined.
// truncated says data is the head of a longer message: then an id that
// runs to the very end of what is examined is not trusted, since a number
// cut there would read as a different number.
func recoverID(data []byte, truncated bool) json.RawMessage {
	if len(data) > idScanBytes {
		data, truncated = data[:idScanBytes], true
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		if key != "id" {
			if !skipValue(dec) {
				return nil
			}
			continue
		}
		v, err := dec.Token()
		if err != nil || truncated && dec.InputOffset() >= int64(len(data)) {
			return nil
		}
		switch v := v.(type) {
		case string:
			raw, _ := json.Marshal(v)
			return raw
		case json.Number:
			return json.RawMessage(v.String())
		}
		return nil
	}
	return nil
}

// skipValue consumes one JSON value from dec, reporting whether it could.
func skipValue(dec *json.Decoder) bool {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return true
		}
	}
}

// boundedError returns err as a JSON-RPC error whose message is at most
// maxErrorBytes (cutMessage) and whose data, when longer, is dropped. The
// code is err's (as the SDK would encode it).
func boundedError(err error) *jsonrpc.Error {
	var w *jsonrpc.Error
	out := &jsonrpc.Error{Message: err.Error()}
	if errors.As(err, &w) {
		out.Code = w.Code
		if len(w.Data) <= maxErrorBytes {
			out.Data = w.Data
		}
	}
	out.Message = cutMessage(out.Message)
	return out
}

// cutMessage returns msg, or when it is longer than maxErrorBytes its
// head, cut at a rune boundary, and how long it was.
func cutMessage(msg string) string {
	if len(msg) <= maxErrorBytes {
		return msg
	}
	end := maxErrorBytes
	for end > 0 && !utf8.RuneStart(msg[end]) {
		end--
	}
	return msg[:end] + "… (" + strconv.Itoa(len(msg)) + " bytes)"
}
