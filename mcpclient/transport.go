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

// pipeConn is one run's connection. Its reader takes the execution's
// output (pump), its writer the input pipe.
type pipeConn struct {
	r        *run
	stdin    *os.File
	incoming chan jsonrpc.Message // one decoded message at a time
	closed   chan struct{}
	once     sync.Once
	writeMu  sync.Mutex
}

func newPipeConn(r *run, stdin *os.File) *pipeConn {
	return &pipeConn{r: r, stdin: stdin, incoming: make(chan jsonrpc.Message), closed: make(chan struct{})}
}

// SessionID is empty: a stdio session has none.
func (c *pipeConn) SessionID() string { return "" }

// Read returns the next message the server sent, or an error once the
// connection ended (its output ended, it broke the protocol, or Close).
func (c *pipeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.incoming:
		return m, nil
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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
// asks a stdio server to exit), and Read returns.
func (c *pipeConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.stdin.Close()
	})
	return nil
}

// pump splits the execution's standard output into lines, each decoded
// as one JSON-RPC message and handed to Read, and keeps the end of its
// standard error. A line past MaxMessageBytes, or one that is not one
// JSON-RPC message (a batch included), stops the run (CodeProtocol).
// Output keeps being drained, and dropped, once the connection ended, so
// the execution settles.
func (c *pipeConn) pump(ex *sandbox.Execution) {
	var line []byte
	broken := false
	deliver := func(b []byte) {
		b = bytes.TrimRight(b, "\r")
		if len(bytes.TrimSpace(b)) == 0 {
			return
		}
		m, err := decodeLine(b)
		if err != nil {
			broken = true
			c.r.stop(errorf(CodeProtocol, c.r.c.cfg.Name, "it sent a line that is not one JSON-RPC message: %s", oneLine(err.Error(), 200)))
			c.Close()
			return
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.Method == "notifications/tools/list_changed" {
			// Marked as it is read, before any answer read after it is
			// handed on: the SDK runs its handler later.
			c.r.c.announced(nil)
		}
		select {
		case c.incoming <- m:
		case <-c.closed:
		}
	}
	for o := range ex.Output() {
		if o.Stream == sandbox.Stderr {
			c.r.keepStderr(o.Bytes)
			continue
		}
		if broken {
			continue
		}
		b := o.Bytes
		for len(b) > 0 && !broken {
			i := bytes.IndexByte(b, '\n')
			part := b
			if i >= 0 {
				part = b[:i]
			}
			if len(line)+len(part) > MaxMessageBytes {
				broken = true
				c.r.stop(errorf(CodeProtocol, c.r.c.cfg.Name, "it sent a line longer than %d bytes", MaxMessageBytes))
				c.Close()
				break
			}
			if i < 0 {
				line = append(line, part...)
				break
			}
			if len(line) == 0 {
				deliver(part)
			} else {
				line = append(line, part...)
				deliver(line)
				line = nil
			}
			b = b[i+1:]
		}
	}
	c.Close()
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
