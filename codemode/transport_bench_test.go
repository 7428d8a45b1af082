package codemode

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/wire"
	"golang.org/x/sys/unix"
)

// benchHogs is how many CPU hogs BenchmarkRingVersusSocket's loaded
// variant runs beside the two ends.
var benchHogs = flag.Int("codemode.hogs", 4, "CPU-hog processes beside BenchmarkRingVersusSocket's loaded variant")

// startHogs starts n processes that spin until stopped, each in a
// session of its own; stop kills and reaps them.
func startHogs(tb testing.TB, n int) (stop func()) {
	tb.Helper()
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	return func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
}

// BenchmarkRingVersusSocket interleaves kv.get round trips of the
// prelude's client (the kv.get program of BenchmarkCapabilityRoundTrip,
// unjailed, in a session of its own as every jail is) over the shared
// ring and over the plain socket (the host refuses the ring, as it does
// when it cannot make one), idle and beside -codemode.hogs spinning
// processes, and reports each variant's median p50 and the ring's ratio
// to the socket (the goal: at most 1, idle or loaded). Each iteration
// runs both, in alternating order.
func BenchmarkRingVersusSocket(b *testing.B) {
	const n = 10000
	s := newSession(b, nil)
	client := buildWithPrelude(b, roundTripProgram(1, n))
	serve := func(refuseRing bool) func(conn *os.File) {
		return func(conn *os.File) {
			fd, err := unix.Dup(int(conn.Fd()))
			if err != nil {
				b.Error(err)
				return
			}
			hc := transport.NewConn(fd)
			defer hc.Close()
			if refuseRing {
				// The client asks first thing; answer as a host that
				// cannot make a ring does.
				if f, err := wire.ReadFrame(hc); err != nil || f.Kind != wire.FrameRing {
					b.Errorf("the client's first frame: %+v, %v", f, err)
					return
				}
				if err := wire.WriteFrame(hc, wire.Frame{Kind: wire.FrameRing}); err != nil {
					b.Error(err)
					return
				}
			}
			host := s.eng.newSeamHost(s.call, WorkspaceSeam(), nil)
			newChannel(context.Background(), hc, host.route, newRecorder(time.Now)).serve()
		}
	}
	p50 := func(out string) time.Duration {
		f := strings.Fields(out)
		if len(f) != 2 {
			b.Fatalf("program printed %q", out)
		}
		v, _ := strconv.ParseInt(f[0], 10, 64)
		return time.Duration(v)
	}
	for _, hogs := range []int{0, *benchHogs} {
		b.Run(fmt.Sprint("hogs=", hogs), func(b *testing.B) {
			stop := startHogs(b, hogs)
			defer stop()
			var ring, sock []time.Duration
			for i := 0; b.Loop(); i++ {
				r := func() { ring = append(ring, p50(runProbeIn(b, client, "", true, serve(false)))) }
				k := func() { sock = append(sock, p50(runProbeIn(b, client, "", true, serve(true)))) }
				if i%2 == 0 {
					r()
					k()
				} else {
					k()
					r()
				}
			}
			mr, ms := median(ring), median(sock)
			b.ReportMetric(float64(mr)/float64(time.Microsecond), "ring-p50-µs")
			b.ReportMetric(float64(ms)/float64(time.Microsecond), "socket-p50-µs")
			b.ReportMetric(float64(mr)/float64(ms), "ring/socket")
		})
	}
}
