package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/agentloom/loom/sandbox"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessageBytes bounds one line a stdio server writes: one JSON-RPC
// message. A longer line is refused as it arrives, before it is held
// whole, and the server stopped (CodeProtocol).
const MaxMessageBytes = 8 << 20

// pipeTransport is the go-sdk Transport over a jailed server's standard
// input and output: newline-delimited JSON-RPC, as the SDK's own
// IOTransport and CommandTransport speak it, with a bound on a line and
// a write deadline. It is connected once, to one run.
type pipeTransport struct{ conn *pipeConn }

// Connect returns the run's connection.
func (t pipeTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// pipeConn is one run's connection. Its reader splits and decodes the
// execution's output as the SDK reads (Read), with no goroutine between;
// its writer is the input pipe.
type pipeConn struct {
	r      *run
	stdin  *os.File
	out    <-chan sandbox.Output // the execution's output
	closed chan struct{}
	once   sync.Once
	// ended is closed once out is closed and every chunk read of it is
	// accounted for (its standard error's end kept).
	ended   chan struct{}
	endOnce sync.Once

	writeMu sync.Mutex

	// readMu guards what Read holds between calls: the rest of the last
	// chunk read, the start of a line not yet whole, and whether the
	// server broke the protocol.
	readMu sync.Mutex
	rest   []byte
	line   []byte
	broken bool
}

func newPipeConn(r *run, stdin *os.File, ex *sandbox.Execution) *pipeConn {
	return &pipeConn{r: r, stdin: stdin, out: ex.Output(), closed: make(chan struct{}), ended: make(chan struct{})}
}

// SessionID is empty: a stdio session has none.
func (c *pipeConn) SessionID() string { return "" }

// Read returns the next message the server sent, or an error once the
// connection ended (its output ended, it broke the protocol, or Close).
// It reads the execution's output itself: each line, decoded as one
// JSON-RPC message, is handed to the SDK by the goroutine that waits
// for it. The standard error's end is kept as it comes. A line past
// MaxMessageBytes, or one that is not one JSON-RPC message (a batch
// included), stops the run (CodeProtocol).
func (c *pipeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-c.closed: // drain may hold readMu until the output ends
		return nil, io.EOF
	default:
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for {
		if c.broken {
			return nil, io.EOF
		}
		if m, ok := c.next(); ok {
			if m != nil {
				return m, nil
			}
			continue
		}
		select {
		case <-c.closed:
			return nil, io.EOF
		default:
		}
		select {
		case o, ok := <-c.out:
			if !ok {
				c.endOnce.Do(func() { close(c.ended) })
				c.Close()
				return nil, io.EOF
			}
			if o.Stream == sandbox.Stderr {
				c.r.keepStderr(o.Bytes)
				continue
			}
			c.rest = o.Bytes
		case <-c.closed:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// next takes the next whole line of what Read holds: ok false when none
// is whole yet; a nil message for a blank line, or for one that broke
// the protocol (the run is then stopped and c.broken set).
func (c *pipeConn) next() (m jsonrpc.Message, ok bool) {
	if len(c.rest) == 0 {
		return nil, false
	}
	i := bytes.IndexByte(c.rest, '\n')
	part := c.rest
	if i >= 0 {
		part = c.rest[:i]
	}
	if len(c.line)+len(part) > MaxMessageBytes {
		c.fail(errorf(CodeProtocol, c.r.c.cfg.Name, "it sent a line longer than %d bytes", MaxMessageBytes))
		return nil, true
	}
	if i < 0 {
		c.line = append(c.line, part...)
		c.rest = nil
		return nil, false
	}
	c.rest = c.rest[i+1:]
	whole := part
	if len(c.line) > 0 {
		whole = append(c.line, part...)
		c.line = nil
	}
	whole = bytes.TrimRight(whole, "\r")
	if len(bytes.TrimSpace(whole)) == 0 {
		return nil, true
	}
	m, err := decodeLine(whole)
	if err != nil {
		c.fail(errorf(CodeProtocol, c.r.c.cfg.Name, "it sent a line that is not one JSON-RPC message: %s", oneLine(err.Error(), 200)))
		return nil, true
	}
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "notifications/tools/list_changed" {
		// Marked as it is read, before any answer read after it is
		// handed on: the SDK runs its handler later.
		c.r.c.announced(nil)
	}
	return m, true
}

// fail stops the run for e, a broken protocol: nothing more is read.
func (c *pipeConn) fail(e *Error) {
	c.broken, c.rest, c.line = true, nil, nil
	c.r.stop(e)
	c.Close()
}

// Write sends one message as one line. A server that reads none of it
// for WriteTimeout is stopped as hung.
func (c *pipeConn) Write(ctx context.Context, m jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	timeout := c.r.c.writeTimeout()
	c.stdin.SetWriteDeadline(time.Now().Add(timeout))
	_, err = c.stdin.Write(data)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.r.stop(errorf(CodeHung, c.r.c.cfg.Name, "it read nothing of its input for %d ms", timeout.Milliseconds()))
	}
	return err
}

// Close ends the connection: the server's input is closed (the way MCP
// asks a stdio server to exit), and Read returns. The execution's output
// keeps being drained, its standard error's end kept and the rest
// dropped, so the execution settles.
func (c *pipeConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.stdin.Close()
		go c.drain()
	})
	return nil
}

// drain reads the execution's output to its end once the connection is
// closed, keeping the end of its standard error; it takes over from Read
// (readMu), so one reader at a time takes the output and every chunk
// read is accounted for once ended closes.
func (c *pipeConn) drain() {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for {
		select {
		case o, ok := <-c.out:
			if !ok {
				c.endOnce.Do(func() { close(c.ended) })
				return
			}
			if o.Stream == sandbox.Stderr {
				c.r.keepStderr(o.Bytes)
			}
		case <-c.ended:
			return
		}
	}
}

// decodeLine decodes one line as one JSON-RPC message; a batch (an
// array) is refused, as MCP since 2025-06-18 has none.
func decodeLine(b []byte) (jsonrpc.Message, error) {
	if t := bytes.TrimLeft(b, " \t"); len(t) > 0 && t[0] == '[' {
		return nil, errors.New("a batch")
	}
	m, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// oneLine returns s with control characters escaped, cut to n bytes.
func oneLine(s string, n int) string {
	var b bytes.Buffer
	for _, r := range s {
		if b.Len() >= n {
			b.WriteString("...")
			break
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
