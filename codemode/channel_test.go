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
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/transport/transporttest"
	"github.com/agentloom/loom/codemode/internal/wire"
	"github.com/agentloom/loom/tool"
)

// guest is the program's end of a channel under test: frames written and
// read by hand, so a test can send what no prelude would.
type guest struct {
	conn net.Conn
	mu   sync.Mutex
}

func (g *guest) send(t *testing.T, f wire.Frame) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := wire.WriteFrame(g.conn, f); err != nil {
		t.Fatal(err)
	}
}

func call(id uint64, cap string, args map[string]any) wire.Frame {
	if args == nil {
		args = map[string]any{}
	}
	return wire.Frame{ID: id, Kind: wire.FrameCapCall, Body: map[string]any{"cap": cap, "args": args}}
}

// testChannel serves route over a socketpair, returning the program's
// end and a function that ends the channel and returns serve's error and
// the record.
func testChannel(t *testing.T, route router) (*guest, func() (error, CallRecord)) {
	t.Helper()
	host, progConn := transporttest.Ends(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rec := newRecorder(time.Now)
	ch := newChannel(ctx, host, route, rec)
	served := make(chan error, 1)
	go func() { served <- ch.serve() }()
	return &guest{conn: progConn}, func() (error, CallRecord) {
		var err error
		select {
		case err = <-served:
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not return")
		}
		cancel()
		ch.end(codeExecutionEnding, "test over")
		return err, rec.finish()
	}
}

func echoRoute(_ context.Context, cap string, args map[string]any) (any, error) {
	if cap == "kv.get" {
		return map[string]any{"echo": args["key"]}, nil
	}
	return nil, &CapError{Code: codeUnknownCapability, Message: "no " + cap}
}

// TestChannelMultiplexesConcurrentCalls: sixteen calls in flight at once
// are each answered under their own id, in whatever order they finish.
func TestChannelMultiplexesConcurrentCalls(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	route := func(ctx context.Context, cap string, args map[string]any) (any, error) {
		<-release
		return echoRoute(ctx, cap, args)
	}
	g, finish := testChannel(t, route)
	const n = 16
	for i := range uint64(n) {
		g.send(t, call(i+1, "kv.get", map[string]any{"key": fmt.Sprint(i + 1)}))
	}
	close(release)
	seen := map[uint64]bool{}
	for range n {
		f, err := wire.ReadFrame(g.conn)
		if err != nil {
			t.Fatal(err)
		}
		ok, _ := f.Body.(map[string]any)["ok"].(map[string]any)
		if f.Kind != wire.FrameCapResult || seen[f.ID] || ok["echo"] != fmt.Sprint(f.ID) {
			t.Fatalf("answer %+v", f)
		}
		seen[f.ID] = true
	}
	g.conn.Close()
	err, rec := finish()
	if err != nil || rec.Total != n || rec.OK != n {
		t.Fatalf("serve = %v, record %+v", err, rec)
	}
}

// TestChannelFaults: what no prelude sends ends the channel with a
// channelFault naming it; a well-formed call first is still answered.
func TestChannelFaults(t *testing.T) {
	t.Parallel()
	cases := map[string]func(t *testing.T, g *guest){
		"duplicate_id": func(t *testing.T, g *guest) {
			g.send(t, call(7, "block", nil))
			g.send(t, call(7, "block", nil))
		},
		"garbage": func(t *testing.T, g *guest) {
			g.conn.Write([]byte{0, 0, 0, 3, 0xc1, 0xc1, 0xc1})
		},
		"oversized_length": func(t *testing.T, g *guest) {
			g.conn.Write([]byte{0xff, 0xff, 0xff, 0xff})
		},
		"host_kind": func(t *testing.T, g *guest) {
			g.send(t, wire.Frame{ID: 3, Kind: wire.FrameCapResult, Body: wire.ResultOK(nil)})
		},
		"bad_cap_call_body": func(t *testing.T, g *guest) {
			g.send(t, wire.Frame{ID: 3, Kind: wire.FrameCapCall, Body: "fs.read"})
		},
	}
	for name, send := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			route := func(ctx context.Context, cap string, args map[string]any) (any, error) {
				if cap == "block" {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return echoRoute(ctx, cap, args)
			}
			g, finish := testChannel(t, route)
			send(t, g)
			err, _ := finish()
			var cf *channelFault
			if !errors.As(err, &cf) {
				t.Fatalf("serve = %v, want a channelFault", err)
			}
		})
	}
}

// TestChannelCancelTimeoutAndPanic: a cancel frame cancels its call, a
// router panic is a failed call, and each is recorded as such.
func TestChannelCancelTimeoutAndPanic(t *testing.T) {
	t.Parallel()
	route := func(ctx context.Context, cap string, args map[string]any) (any, error) {
		switch cap {
		case "block":
			<-ctx.Done()
			return nil, ctx.Err()
		case "panic":
			panic("router bug")
		}
		return echoRoute(ctx, cap, args)
	}
	g, finish := testChannel(t, route)
	g.send(t, call(1, "block", nil))
	g.send(t, wire.Frame{ID: 1, Kind: wire.FrameCancel})
	g.send(t, call(2, "panic", nil))
	codes := map[uint64]string{}
	for range 2 {
		f, err := wire.ReadFrame(g.conn)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := f.Body.(map[string]any)["err"].(map[string]any)
		codes[f.ID], _ = e["code"].(string)
	}
	if codes[1] != string(codeCallCancelled) || codes[2] != "tool_panicked" {
		t.Fatalf("codes %v", codes)
	}
	g.conn.Close()
	_, rec := finish()
	if rec.Cancelled != 1 || rec.Failed != 1 {
		t.Fatalf("record %+v", rec)
	}
}

// TestChannelEndNeverWaitsOnAProgramThatDoesNotRead: a program that
// floods calls and never reads its answers cannot hold the host past
// the outcome write's bound.
func TestChannelEndNeverWaitsOnAProgramThatDoesNotRead(t *testing.T) {
	t.Parallel()
	big := make([]byte, 1<<20)
	route := func(context.Context, string, map[string]any) (any, error) {
		return map[string]any{"blob": big}, nil
	}
	host, prog, err := transport.Pair()
	if err != nil {
		t.Fatal(err)
	}
	progConn, _ := net.FileConn(prog)
	prog.Close()
	defer progConn.Close()
	rec := newRecorder(time.Now)
	ch := newChannel(context.Background(), host, route, rec)
	go ch.serve()
	g := &guest{conn: progConn}
	for i := range uint64(32) {
		g.send(t, call(i+1, "kv.get", nil))
	}
	done := make(chan struct{})
	go func() {
		ch.end(CodeWallDeadline, "deadline")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("end waited on a program that does not read")
	}
	host.Close()
	io.Copy(io.Discard, progConn)
}

// BenchmarkChannelHostRoundTrip is the host's share of a capability
// round trip: a guest in this process sends kv.get frames one at a time
// over the socketpair, blocking on its end as the prelude does, and
// waits for each answer, served by the real kv router. Both ends share
// one runtime and its two threads here, so this is not the figure
// between processes: BenchmarkCapabilityRoundTripFloor's raw against
// bare is.
func BenchmarkChannelHostRoundTrip(b *testing.B) {
	kvs := newKVStore()
	h := &seamHost{seam: WorkspaceSeam(), call: &tool.Call{Strand: "main"}, kv: kvs}
	reg, _ := tool.NewRegistry()
	h.reg = reg
	host, prog, err := transport.Pair()
	if err != nil {
		b.Fatal(err)
	}
	defer prog.Close()
	ch := newChannel(context.Background(), host, h.route, newRecorder(time.Now))
	go ch.serve()
	defer host.Close()
	r := bufio.NewReader(prog)
	for i := uint64(1); b.Loop(); i++ {
		if err := wire.WriteFrame(prog, call(i, "kv.get", map[string]any{"key": "k"})); err != nil {
			b.Fatal(err)
		}
		if _, err := wire.ReadFrame(r); err != nil {
			b.Fatal(err)
		}
	}
}

// TestChannelBoundsWhatCallsInFlightHold: calls whose frames together
// pass maxInFlightBytes are refused in band while the earlier ones are
// unanswered, and served again once they are.
func TestChannelBoundsWhatCallsInFlightHold(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	route := func(ctx context.Context, cap string, args map[string]any) (any, error) {
		if cap == "block" {
			<-release
		}
		return map[string]any{}, nil
	}
	g, finish := testChannel(t, route)
	big := make([]byte, 8<<20)
	n := maxInFlightBytes / len(big) // the first n-1 fit; the n-th passes the bound
	for i := range uint64(n) {
		g.send(t, call(i+1, "block", map[string]any{"content": big}))
	}
	f, err := wire.ReadFrame(g.conn)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := f.Body.(map[string]any)["err"].(map[string]any)
	if f.ID != uint64(n) || e["code"] != string(codeTooManyCalls) {
		t.Fatalf("the call past the bound got %+v", f)
	}
	close(release)
	for range n - 1 {
		if _, err := wire.ReadFrame(g.conn); err != nil {
			t.Fatal(err)
		}
	}
	g.send(t, call(100, "block", map[string]any{"content": big}))
	f, err = wire.ReadFrame(g.conn)
	if err != nil || f.ID != 100 || f.Body.(map[string]any)["ok"] == nil {
		t.Fatalf("after the answers the bound was not freed: %+v %v", f, err)
	}
	g.conn.Close()
	finish()
}

// TestChannelBoundsLargeAnswersWaitingOnAProgram: a program that sends
// many fs.read calls and reads no answer gets at most maxHeavyCalls of
// them routed: the rest wait, so the host holds a bounded number of large
// answers (without the bound all of them are routed at once).
func TestChannelBoundsLargeAnswersWaitingOnAProgram(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	routed := 0
	answer := make([]byte, 1<<20)
	route := func(context.Context, string, map[string]any) (any, error) {
		mu.Lock()
		routed++
		mu.Unlock()
		return map[string]any{"content": answer}, nil
	}
	g, finish := testChannel(t, route)
	const calls = 64
	for i := range uint64(calls) {
		g.send(t, call(i+1, "fs.read", map[string]any{"path": "x"}))
	}
	// Absence of progress can only be watched for a while.
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := routed
		mu.Unlock()
		if n > maxHeavyCalls {
			t.Fatalf("%d large answers routed for a program that reads none; at most %d may wait", n, maxHeavyCalls)
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.conn.Close()
	finish()
}

// BenchmarkChannelHostCPU is the host's work on one kv.get, without the
// socket: decoding its frame, routing it, recording it and encoding the
// answer.
func BenchmarkChannelHostCPU(b *testing.B) {
	h := &seamHost{seam: WorkspaceSeam(), call: &tool.Call{Strand: "main"}, kv: newKVStore()}
	h.reg, _ = tool.NewRegistry()
	if _, err := h.route(context.Background(), "kv.set", map[string]any{"key": "k", "value": []byte("v")}); err != nil {
		b.Fatal(err)
	}
	var in bytes.Buffer
	if err := wire.WriteFrame(&in, call(1, "kv.get", map[string]any{"key": "k"})); err != nil {
		b.Fatal(err)
	}
	frame := in.Bytes()[4:]
	f, _, err := channelWords.DecodeFrame(frame)
	if err != nil {
		b.Fatal(err)
	}
	cc, err := wire.DecodeCapCall(f.Body)
	if err != nil {
		b.Fatal(err)
	}
	res, err := h.route(context.Background(), cc.Cap, cc.Args)
	if err != nil {
		b.Fatal(err)
	}
	rec := newRecorder(time.Now)
	var out bytes.Buffer
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, _, _ := channelWords.DecodeFrame(frame)
			wire.DecodeCapCall(f.Body)
		}
	})
	b.Run("route", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.route(context.Background(), cc.Cap, cc.Args)
		}
	})
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ref := rec.begin(cc.Cap, func() string { return summary(cc.Cap, cc.Args) })
			rec.end(ref, CallOK, "", false)
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out.Reset()
			wire.AppendFrame(&out, wire.Frame{ID: 1, Kind: wire.FrameCapResult, Body: wire.OKBody(res)})
		}
	})
}

// TestWholeFrameBuffered: the serve loop holds answers back only while
// a whole frame is buffered, so it never blocks with answers unwritten.
func TestWholeFrameBuffered(t *testing.T) {
	t.Parallel()
	frame := func(n int) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(n)), make([]byte, n)...) }
	tests := []struct {
		name string
		in   []byte
		want bool
	}{
		{"nothing", nil, false},
		{"part of a length", []byte{0, 0}, false},
		{"a length alone", frame(3)[:4], false},
		{"a frame but its last byte", frame(3)[:6], false},
		{"a whole frame", frame(3), true},
		{"an empty frame", frame(0), true},
		{"a frame and part of the next", append(frame(2), 0, 0, 0), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			br := bufio.NewReader(bytes.NewReader(tt.in))
			br.Peek(len(tt.in)) // buffer all of it
			if got := wholeFrameBuffered(br); got != tt.want {
				t.Fatalf("wholeFrameBuffered(% x) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
