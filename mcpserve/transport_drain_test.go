package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// eofReader reads r and closes hit the first time r reports the end.
type eofReader struct {
	r    io.Reader
	once sync.Once
	hit  chan struct{}
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		e.once.Do(func() { close(e.hit) })
	}
	return n, err
}

// lockedBuffer is a Writer safe for the transport's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("the server wrote a line that is not JSON: %q", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

const initLines = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
`

// A batch of requests piped in and then closed is answered whole: every
// request read before the end of input runs to its result, every result
// is written, and only then does Run return. The tools are held until the
// transport has met the end of input, so all of them are in flight then.
func TestTransportFinishesRequestsReadBeforeEOF(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 10} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			var batch strings.Builder
			batch.WriteString(initLines)
			for i := range n {
				fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"record","arguments":{"text":"w%d"}}}`+"\n", i, i)
			}
			in := &eofReader{r: strings.NewReader(batch.String()), hit: make(chan struct{})}
			var mu sync.Mutex
			done := map[string]bool{}
			record := tool.Typed(tool.Tool{Name: "record", Description: "records its text once input has ended"},
				func(ctx context.Context, _ *tool.Call, a echoArgs) tool.Outcome {
					select {
					case <-in.hit:
					case <-ctx.Done():
						return tool.Fail("cancelled", "cancelled before the end of input")
					}
					mu.Lock()
					done[a.Text] = true
					mu.Unlock()
					return tool.Success("recorded " + a.Text)
				})
			out := &lockedBuffer{}
			errc := make(chan error, 1)
			go func() {
				errc <- newServer(t, nil, nil, record).Run(context.Background(), &Transport{Reader: in, Writer: out})
			}()
			select {
			case err := <-errc:
				if err != nil && !errors.Is(err, io.EOF) {
					t.Fatalf("Run = %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return after the input ended")
			}
			answered := map[any]bool{}
			for _, m := range out.lines(t) {
				res, _ := m["result"].(map[string]any)
				if res == nil || res["isError"] == true {
					t.Errorf("answer %v is not a successful result", m)
					continue
				}
				answered[m["id"]] = true
			}
			if !answered["init"] {
				t.Error("initialize was not answered")
			}
			for i := range n {
				if !answered[float64(i)] {
					t.Errorf("request %d was not answered", i)
				}
				if !done[fmt.Sprint("w", i)] {
					t.Errorf("request %d's tool did not run to its end", i)
				}
			}
			if len(answered) != n+1 {
				t.Errorf("%d answers, want %d", len(answered), n+1)
			}
		})
	}
}

// Cancelling Run's context ends the session at once, whatever runs: the
// running tool's context is cancelled and Run returns.
func TestTransportCancelEndsAtOnce(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	stopped := make(chan error, 1)
	block := tool.Typed(tool.Tool{Name: "block", Description: "waits for cancellation"},
		func(ctx context.Context, _ *tool.Call, _ noArgs) tool.Outcome {
			close(started)
			<-ctx.Done()
			stopped <- ctx.Err()
			return tool.Fail("cancelled", "cancelled")
		})
	inR, inW := io.Pipe()
	defer inW.Close()
	out := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- newServer(t, nil, nil, block).Run(ctx, &Transport{Reader: inR, Writer: out}) }()
	go func() {
		io.WriteString(inW, initLines+`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{}}}`+"\n")
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the tool never started")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return when its context was cancelled")
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the tool saw %v, want context.Canceled", err)
		}
	default:
		t.Error("Run returned before the running tool was cancelled")
	}
}

// Cancelling the context also ends a session that is draining after the
// end of input.
func TestTransportCancelEndsDrain(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	block := tool.Typed(tool.Tool{Name: "block", Description: "waits for cancellation"},
		func(ctx context.Context, _ *tool.Call, _ noArgs) tool.Outcome {
			close(started)
			<-ctx.Done()
			return tool.Fail("cancelled", "cancelled")
		})
	in := strings.NewReader(initLines + `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{}}}` + "\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- newServer(t, nil, nil, block).Run(ctx, &Transport{Reader: in, Writer: &lockedBuffer{}})
	}()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("Run = %v before the tool read before the end of input started", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the tool never started")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return when its context was cancelled during the drain")
	}
}

// A call the server makes to the client once the client's input has
// ended can never be answered by it; the connection answers it with an
// error so the handler waiting on it goes on, and the drain ends.
func TestTransportAnswersOutgoingCallsAfterEOF(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	conn, err := (&Transport{Reader: strings.NewReader(`{"jsonrpc":"2.0","id":"req","method":"ping"}` + "\n"), Writer: out}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	m, err := conn.Read(ctx)
	if err != nil {
		t.Fatalf("first Read = %v", err)
	}
	req := m.(*jsonrpc.Request)
	id, _ := jsonrpc.MakeID("srv-1")
	if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "roots/list"}); err != nil {
		t.Fatal(err)
	}
	// The input has ended; the request read is still unanswered, so Read
	// does not report the end: it answers the server's own call first.
	m, err = conn.Read(ctx)
	if err != nil {
		t.Fatalf("Read after EOF with a call outstanding = %v", err)
	}
	resp, ok := m.(*jsonrpc.Response)
	if !ok || resp.ID != id || resp.Error == nil {
		t.Fatalf("Read = %#v, want an error response to %v", m, id)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := conn.Read(ctx)
		ended <- err
	}()
	select {
	case err := <-ended:
		t.Fatalf("Read ended (%v) while a request read is unanswered", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := conn.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, io.EOF) {
			t.Errorf("Read after the last answer = %v, want io.EOF", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Read did not end once every request was answered")
	}
}

// A request the client cancelled before its input ended is not waited
// for: its answer is dropped, and the drain ends once its handler returns.
func TestTransportDrainEndsAfterCancelledRequest(t *testing.T) {
	t.Parallel()
	block := tool.Typed(tool.Tool{Name: "block", Description: "waits for cancellation"},
		func(ctx context.Context, _ *tool.Call, _ noArgs) tool.Outcome {
			<-ctx.Done()
			return tool.Fail("cancelled", "cancelled")
		})
	in := strings.NewReader(initLines +
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")
	out := &lockedBuffer{}
	errc := make(chan error, 1)
	go func() {
		errc <- newServer(t, nil, nil, block).Run(context.Background(), &Transport{Reader: in, Writer: out})
	}()
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the drain waited for a cancelled request")
	}
	ids := map[any]bool{}
	for _, m := range out.lines(t) {
		ids[m["id"]] = true
	}
	if !ids["init"] || !ids[2.0] || ids[1.0] {
		t.Errorf("answered ids %v; want init and 2, not the cancelled 1", ids)
	}
}
