package codemode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/wire"
)

// buildClientProbe builds testdata/probe/client.go on the prelude, in
// the calling test's temporary directory.
func buildClientProbe(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("testdata/probe/client.go")
	if err != nil {
		t.Fatal(err)
	}
	return buildWithPrelude(t, string(src))
}

// runProbe starts bin with one end of a socketpair at fd 5 (fds 3 and
// 4 are /dev/null, where the broker keeps its own), runs host on the
// other end, and returns the program's stdout once both are done.
func runProbe(t testing.TB, bin string, arg string, host func(conn *os.File)) string {
	t.Helper()
	return runProbeIn(t, bin, arg, false, host)
}

// runProbeIn is runProbe, the program in a session of its own when
// setsid (as the broker starts a jail: the scheduler then no longer
// counts it with the host's session).
func runProbeIn(t testing.TB, bin string, arg string, setsid bool, host func(conn *os.File)) string {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	hostEnd, progEnd := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "program")
	defer hostEnd.Close()
	return runWithChannel(t, bin, arg, setsid, progEnd, func() { host(hostEnd) }, func() { hostEnd.Close() })
}

// runServed starts bin, unjailed, with the program's end of a channel
// at fd 5 (fds 3 and 4 /dev/null), serves its calls with route on the
// host's end as an execution does, and returns the program's stdout once
// it exited and serving ended.
func runServed(t *testing.T, bin string, route router) string {
	t.Helper()
	hc, progEnd, err := transport.Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	serve := func() { newChannel(context.Background(), hc, route, newRecorder(time.Now)).serve() }
	return runWithChannel(t, bin, "", false, progEnd, serve, func() { hc.Close() })
}

// runWithChannel starts bin (with arg, in a session of its own when
// setsid) with progEnd at fd 5 (fds 3 and 4 /dev/null) and closes its
// own copy of progEnd, runs host meanwhile, and once the program exited
// calls endHost (which ends a host still reading) and waits for host to
// return. It returns the program's stdout and fails the test when the
// program failed.
func runWithChannel(t testing.TB, bin, arg string, setsid bool, progEnd *os.File, host, endHost func()) string {
	t.Helper()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, arg)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.ExtraFiles = []*os.File{null, null, progEnd}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	err = cmd.Start()
	progEnd.Close()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		host()
	}()
	err = cmd.Wait()
	endHost()
	<-done
	if err != nil {
		t.Fatalf("program: %v\nstderr:\n%s", err, stderr.String())
	}
	return stdout.String()
}

// probeHost is the test's host end: it answers with canned results and
// checks ids, multiplexing, cancel and what follows the outcome.
type probeHost struct {
	t       *testing.T
	conn    io.ReadWriter
	seen    map[uint64]bool // every cap_call id
	cancels map[uint64]bool
}

func (h *probeHost) write(f wire.Frame) {
	if err := wire.WriteFrame(h.conn, f); err != nil {
		h.t.Errorf("host write: %v", err)
	}
}

// next reads the next cap_call, recording cancels on the way; false at
// the channel's end.
func (h *probeHost) next() (uint64, wire.CapCall, bool) {
	for {
		f, err := wire.ReadFrame(h.conn)
		if err != nil {
			// runProbeIn closes the host's end once the program exited: a
			// read begun after that is the channel's end too.
			if err != io.EOF && !errors.Is(err, os.ErrClosed) {
				h.t.Errorf("host read: %v", err)
			}
			return 0, wire.CapCall{}, false
		}
		switch f.Kind {
		case wire.FrameCancel:
			if !h.seen[f.ID] {
				h.t.Errorf("cancel of id %d never called", f.ID)
			}
			h.cancels[f.ID] = true
			// As the real host does: a cancelled call is answered at once
			// (a leading caller's read ends only with a frame).
			h.write(wire.Frame{ID: f.ID, Kind: wire.FrameCapResult, Body: wire.ResultErr(string(codeCallCancelled), "the call was cancelled by the program")})
			continue
		case wire.FrameRing:
			// This host keeps the channel on the socket, as a host that
			// cannot make a ring does.
			h.write(wire.Frame{Kind: wire.FrameRing})
			continue
		case wire.FrameCapCall:
		default:
			h.t.Errorf("program sent a %s frame", f.Kind)
			continue
		}
		if h.seen[f.ID] {
			h.t.Errorf("id %d reused", f.ID)
		}
		h.seen[f.ID] = true
		c, err := wire.DecodeCapCall(f.Body)
		if err != nil {
			h.t.Errorf("cap_call %d: %v", f.ID, err)
		}
		return f.ID, c, true
	}
}

// arg reads a typed argument; want names the Go type the contract sends.
func arg[T any](h *probeHost, c wire.CapCall, key string) T {
	v, ok := c.Args[key].(T)
	if !ok {
		h.t.Errorf("%s arg %s = %#v (%T), want a %T", c.Cap, key, c.Args[key], c.Args[key], v)
	}
	return v
}

// canned answers c with a result built from its arguments, checking
// each argument's wire type.
func (h *probeHost) canned(c wire.CapCall) any {
	str := func(k string) string { return arg[string](h, c, k) }
	bin := func(k string) []byte { return arg[[]byte](h, c, k) }
	num := func(k string) int64 { return arg[int64](h, c, k) }
	switch c.Cap {
	case "fs.read":
		p := str("path")
		return map[string]any{"path": p, "content": []byte("content of " + p), "size": len("content of " + p)}
	case "fs.list":
		p := str("path")
		return map[string]any{"path": p, "truncated": true, "entries": []map[string]any{
			{"name": p + "/a", "kind": "file", "size": 1}, {"name": "d", "kind": "dir", "size": 0}}}
	case "fs.write":
		return map[string]any{"path": str("path"), "bytes": len(bin("content")), "created": true, "diagnostics": ""}
	case "fs.edit":
		edits := arg[[]any](h, c, "edits")
		for _, e := range edits {
			m, _ := e.(map[string]any)
			if _, ok := m["find"].(string); !ok || len(m) != 2 {
				h.t.Errorf("fs.edit edit %#v", e)
			}
			if _, ok := m["replace"].(string); !ok {
				h.t.Errorf("fs.edit edit %#v", e)
			}
		}
		return map[string]any{"path": str("path"), "replaced": len(edits), "diagnostics": ""}
	case "search.glob":
		return map[string]any{"paths": []string{str("pattern"), str("path")}, "truncated": false}
	case "search.grep":
		return map[string]any{"truncated": arg[bool](h, c, "ignore_case"), "matches": []any{
			map[string]any{"path": str("path") + "/" + str("glob"), "line": num("max_results"), "text": str("pattern")}}}
	case "proc.run":
		argv := arg[[]any](h, c, "argv")
		return map[string]any{"exit": len(argv) + int(num("timeout_ms")), "stdout": bin("stdin"), "stderr": []byte(str("dir")), "truncated": false}
	case "kv.get":
		return map[string]any{"value": []byte("v:" + str("key")), "found": true}
	case "kv.set":
		bin("value")
		str("key")
		return map[string]any{}
	case "kv.delete":
		return map[string]any{"deleted": str("key") != ""}
	case "report.emit":
		if str("media_type") != "text/plain" {
			h.t.Errorf("report.emit media_type %q", str("media_type"))
		}
		return map[string]any{"digest": "sha-" + str("name"), "bytes": len(bin("content"))}
	case "job.start":
		return map[string]any{"handle": "h-" + str("command") + "@" + str("dir")}
	case "job.poll":
		return map[string]any{"state": "exited", "stdout": []byte(str("handle")), "stderr": []byte{}, "cursor": str("cursor") + "+", "exit": num("wait_ms")}
	case "job.list":
		if len(c.Args) != 0 {
			h.t.Errorf("job.list args %v", c.Args)
		}
		return map[string]any{"jobs": []map[string]any{{"handle": "h1", "command": "c", "state": "running"}}}
	case "job.send":
		_, closed := c.Args["close"]
		return map[string]any{"bytes": len(bin("input")) + map[bool]int{true: 100}[closed]}
	case "job.kill":
		str("handle")
		return map[string]any{"state": "killed"}
	}
	h.t.Errorf("unknown cap %q", c.Cap)
	return map[string]any{}
}

// wantLines is what the probe prints for goroutine g given canned.
func wantLines(g int) []string {
	p := fmt.Sprintf("p%d", g)
	send := len("input"+p) + map[bool]int{true: 100}[g%2 == 0]
	return []string{
		fmt.Sprintf("%d fs.read <nil> %s %q %d", g, p, "content of "+p, len("content of "+p)),
		fmt.Sprintf("%d fs.list <nil> %s [{%s/a file 1} {d dir 0}] true", g, p, p),
		fmt.Sprintf("%d fs.write <nil> %s %d true", g, p, len("w"+p)),
		fmt.Sprintf("%d fs.edit <nil> %s 2", g, p),
		fmt.Sprintf("%d search.glob <nil> [\"*.go\" %q] false", g, p),
		fmt.Sprintf("%d search.grep <nil> [{%s/*.go %d x%s}] true", g, p, g+1, p),
		fmt.Sprintf("%d proc.run <nil> %d %q %q false", g, 2+g+1, "in"+p, p),
		fmt.Sprintf("%d kv.get <nil> %q true", g, "v:"+p),
		fmt.Sprintf("%d kv.set <nil>", g),
		fmt.Sprintf("%d kv.delete <nil> true", g),
		fmt.Sprintf("%d report.emit <nil> sha-%s %d", g, p, len("art"+p)),
		fmt.Sprintf("%d job.start <nil> h-cmd%s@%s", g, p, p),
		fmt.Sprintf("%d job.poll <nil> exited %q \"\" c%s+ %d true", g, "h-cmd"+p+"@"+p, p, (g+1)*1000),
		fmt.Sprintf("%d job.list <nil> [{h1 c running}]", g),
		fmt.Sprintf("%d job.send <nil> %d", g, send),
		fmt.Sprintf("%d job.kill <nil> killed 0 false", g),
	}
}

// TestPreludeClient runs a program that calls every cap function from
// 16 goroutines at once against a host that answers each round of 16
// in-flight calls in reverse order, then error and malformed results,
// a cancelled call and its late answer, a call on an ended context, and
// the outcome frame failing pending and later calls.
func TestPreludeClient(t *testing.T) {
	t.Parallel()
	bin := buildClientProbe(t)
	t.Run("main", func(t *testing.T) {
		var maxInFlight int
		out := runProbe(t, bin, "main", func(conn *os.File) {
			h := &probeHost{t: t, conn: conn, seen: map[uint64]bool{}, cancels: map[uint64]bool{}}
			type call struct {
				id uint64
				c  wire.CapCall
			}
			var round []call
			for range 16 * 16 {
				id, c, ok := h.next()
				if !ok {
					t.Error("channel ended in the concurrent phase")
					return
				}
				round = append(round, call{id, c})
				if len(round) < 16 {
					continue
				}
				maxInFlight = max(maxInFlight, len(round))
				for _, r := range slices.Backward(round) {
					h.write(wire.Frame{ID: r.id, Kind: wire.FrameCapResult, Body: wire.ResultOK(h.canned(r.c))})
				}
				round = nil
			}
			var blockID, probeID uint64
			pending := 0
			for {
				id, c, ok := h.next()
				if !ok {
					break
				}
				key, _ := c.Args["key"].(string)
				if p, ok := c.Args["path"].(string); ok {
					key = p
				}
				switch key {
				case "missing":
					h.write(wire.Frame{ID: id, Kind: wire.FrameCapResult, Body: wire.ResultErr("not_found", "no such file: missing")})
				case "bad":
					h.write(wire.Frame{ID: id, Kind: wire.FrameCapResult, Body: wire.ResultOK(map[string]any{"path": "bad"})})
				case "block", "probe":
					if key == "block" {
						blockID = id
					} else {
						probeID = id
					}
					if blockID != 0 && probeID != 0 {
						h.write(wire.Frame{ID: probeID, Kind: wire.FrameCapResult, Body: wire.ResultOK(h.canned(c))})
					}
				case "after-cancel":
					if !h.cancels[blockID] {
						t.Errorf("no cancel for the blocked call %d before the next call", blockID)
					}
					// A second, late answer to the cancelled call must be
					// dropped.
					h.write(wire.Frame{ID: blockID, Kind: wire.FrameCapResult, Body: wire.ResultOK(map[string]any{"value": []byte("late"), "found": true})})
					h.write(wire.Frame{ID: id, Kind: wire.FrameCapResult, Body: wire.ResultOK(h.canned(c))})
				case "pending-0", "pending-1":
					if pending++; pending == 2 {
						h.write(wire.Frame{Kind: wire.FrameOutcome, Body: wire.OutcomeBody("execution_ending", "the wall deadline passed")})
					}
				default:
					t.Errorf("unexpected call %s %v (id %d)", c.Cap, c.Args, id)
				}
			}
			for i := uint64(1); i <= uint64(len(h.seen)); i++ {
				if !h.seen[i] {
					t.Errorf("ids are not 1..%d: %d missing", len(h.seen), i)
				}
			}
			if len(h.cancels) != 1 {
				t.Errorf("cancels %v, want exactly the blocked call's", h.cancels)
			}
		})
		var want []string
		for g := range 16 {
			want = append(want, wantLines(g)...)
		}
		slices.Sort(want)
		want = append(want,
			"missing: fs.read not_found no such file: missing",
			"bad: fs.read bad_result the host's result field content is missing or not bytes",
			"probe: <nil>",
			"block: kv.get cancelled the call's context ended before the host answered; the host was told to cancel it true",
			"after-cancel: <nil> v:after-cancel",
			"never: kv.get cancelled the call's context ended before it was sent true",
			"pending: kv.get execution_ending the wall deadline passed",
			"pending: kv.get execution_ending the wall deadline passed",
			"later: kv.get execution_ending the wall deadline passed",
		)
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if !slices.Equal(got, want) {
			for i := range max(len(got), len(want)) {
				g, w := "", ""
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g != w {
					t.Errorf("line %d:\n got %s\nwant %s", i, g, w)
				}
			}
		}
		if maxInFlight != 16 {
			t.Errorf("at most %d calls were in flight at once, want 16", maxInFlight)
		}
	})
	t.Run("close", func(t *testing.T) {
		out := runProbe(t, bin, "close", func(conn *os.File) {
			h := &probeHost{t: t, conn: conn, seen: map[uint64]bool{}, cancels: map[uint64]bool{}}
			for range 3 {
				if _, _, ok := h.next(); !ok {
					t.Error("channel ended before three calls")
				}
			}
			conn.Close()
		})
		want := strings.Repeat("pending: kv.get channel_closed the host closed the channel\n", 3) +
			"later: kv.get channel_closed the host closed the channel\n"
		if out != want {
			t.Errorf("got\n%s\nwant\n%s", out, want)
		}
	})
}

// leaderCancelProbe makes one call at a time, so each is the one reading
// the channel (blocked in read(2)): "hold", whose context ends while the
// host has not answered, then "after" on the same channel.
const leaderCancelProbe = `package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cap/kv"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := kv.Get(ctx, "hold")
	var e *kv.Error
	errors.As(err, &e)
	fmt.Println("hold:", e.Code, errors.Is(err, context.DeadlineExceeded))
	v, _, err := kv.Get(context.Background(), "after")
	fmt.Printf("after: %v %s\n", err, v)
}
`

// TestPreludeClientLeaderCancel: a call reading the channel for every
// call cannot be interrupted in its read; when its context ends it sends
// cancel at once, and returns cancelled (unwrapping to the context's
// error) when the host's answer to the cancel arrives, the channel still
// serving the next call. (Were cancel not sent, the program would wait
// for an answer the host never sends.)
func TestPreludeClientLeaderCancel(t *testing.T) {
	t.Parallel()
	bin := buildWithPrelude(t, leaderCancelProbe)
	out := runProbe(t, bin, "", func(conn *os.File) {
		h := &probeHost{t: t, conn: conn, seen: map[uint64]bool{}, cancels: map[uint64]bool{}}
		hold, c, ok := h.next()
		if !ok || c.Args["key"] != "hold" {
			t.Errorf("first call %v %v", c, ok)
			return
		}
		// Not answered: the cancel, answered inside next, must come first.
		id, c, ok := h.next()
		if !ok || c.Args["key"] != "after" || !h.cancels[hold] {
			t.Errorf("after the held call: %v %v, cancels %v", c, ok, h.cancels)
			return
		}
		h.write(wire.Frame{ID: id, Kind: wire.FrameCapResult, Body: wire.ResultOK(h.canned(c))})
		if _, _, ok := h.next(); ok {
			t.Error("a call after the last")
		}
	})
	want := "hold: cancelled true\nafter: <nil> v:after\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}
