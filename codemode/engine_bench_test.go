package codemode

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/wire"
	"golang.org/x/sys/unix"
)

// BenchmarkPipeline interleaves the whole pipeline — vet, the jailed
// build against warm archives (a fresh source each time, so no kept
// binary serves it) and the jailed run — of a trivial fmt program with a
// bare hermetic go build of the same file, alternating which goes first,
// and reports both medians and their ratio (the target is at most 0.8).
func BenchmarkPipeline(b *testing.B) {
	s := newSession(b, nil)
	bl, err := s.eng.buildStage()
	if err != nil {
		b.Fatal(err)
	}
	goBuild := bareGoBuild(b, bl.tc)
	ours := func(src string) time.Duration {
		start := time.Now()
		x, err := s.eng.Execute(b.Context(), s.call, Request{Source: []byte(src)})
		if err != nil || x.Run.Code != "" || x.Binary.Cached {
			b.Fatalf("the pipeline failed: %v %+v", err, x)
		}
		return time.Since(start)
	}
	goBuild(benchSource())
	ours(benchSource())
	versusGoBuild(b, "pipeline-ms", ours, goBuild)
}

// roundTripProgram calls kv.get n times from each of callers goroutines,
// timing every call with the program's own clock, and prints the median
// call in nanoseconds and the calls per second of the whole.
func roundTripProgram(callers, n int) string {
	return mainWith([]string{"context", "fmt", "sort", "sync", "time", "cap/kv"}, fmt.Sprintf(`ctx := context.Background()
	if err := kv.Set(ctx, "k", []byte("v")); err != nil {
		panic(err)
	}
	const callers, n = %d, %d
	lat := make([][]time.Duration, callers)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				t := time.Now()
				if _, _, err := kv.Get(ctx, "k"); err != nil {
					panic(err)
				}
				lat[c] = append(lat[c], time.Since(t))
			}
		}()
	}
	wg.Wait()
	total := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	fmt.Println(int64(all[len(all)/2]), int64(float64(len(all))/total.Seconds()))`, callers, n))
}

// BenchmarkCapabilityRoundTrip measures kv.get over the channel from
// inside a jailed program: the median round trip and calls per second,
// with one caller and with eight (targets for one: p50 ≤ 15 µs, ≥ 60k
// calls/s).
func BenchmarkCapabilityRoundTrip(b *testing.B) {
	s := newSession(b, nil)
	for _, callers := range []int{1, 8} {
		b.Run(fmt.Sprint("callers=", callers), func(b *testing.B) {
			var p50s, rates []time.Duration
			for b.Loop() {
				x, err := s.eng.Execute(b.Context(), s.call, Request{Source: []byte(roundTripProgram(callers, 20000/callers))})
				if err != nil || x.Run.Code != "" {
					b.Fatalf("%v %+v", err, x.Run)
				}
				f := strings.Fields(x.Run.Stdout)
				p50, _ := strconv.ParseInt(f[0], 10, 64)
				rate, _ := strconv.ParseInt(f[1], 10, 64)
				p50s, rates = append(p50s, time.Duration(p50)), append(rates, time.Duration(rate))
			}
			b.ReportMetric(float64(median(p50s))/float64(time.Microsecond), "p50-µs")
			b.ReportMetric(float64(median(rates)), "calls/s")
		})
	}
}

// floorProgram times n exchanges over the channel's descriptor with
// blocking reads and writes and no codec, printing the median exchange
// in nanoseconds and the exchanges per second as roundTripProgram does.
// With frame nil it sends floorMessageBytes and reads as many back (for
// an echo); else it sends frame, a whole encoded frame, each time and
// reads one answer frame back without decoding it.
func floorProgram(n int, frame []byte) string {
	msg := fmt.Sprintf("make([]byte, %d)", floorMessageBytes)
	if frame != nil {
		msg = fmt.Sprintf("%#v", frame)
	}
	return fmt.Sprintf(`package main

import (
	"encoding/binary"
	"fmt"
	"sort"
	"syscall"
	"time"
)

func readFull(fd int, buf []byte) {
	for got := 0; got < len(buf); {
		k, err := syscall.Read(fd, buf[got:])
		if err != nil || k == 0 {
			panic(fmt.Sprint("read: ", k, err))
		}
		got += k
	}
}

func main() {
	const fd, n, framed = 5, %d, %t
	if err := syscall.SetNonblock(fd, false); err != nil {
		panic(err)
	}
	msg := %s
	buf := make([]byte, 64<<10)
	all := make([]time.Duration, 0, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		t := time.Now()
		if _, err := syscall.Write(fd, msg); err != nil {
			panic(err)
		}
		if framed {
			readFull(fd, buf[:4])
			readFull(fd, buf[:binary.BigEndian.Uint32(buf)])
		} else {
			readFull(fd, buf[:len(msg)])
		}
		all = append(all, time.Since(t))
	}
	total := time.Since(start)
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	fmt.Println(int64(all[len(all)/2]), int64(float64(len(all))/total.Seconds()))
}
`, n, frame != nil, msg)
}

// floorMessageBytes is about the size of a kv.get call and its answer.
const floorMessageBytes = 48

// BenchmarkCapabilityRoundTripFloor puts the one-caller figure of
// BenchmarkCapabilityRoundTrip beside what it is made of on this
// machine, interleaved (each iteration runs every variant, in a
// rotating order), each reporting its median p50 and calls/s:
//   - bare: frame-sized messages between an unjailed process that sleeps
//     in read(2) for each answer and an echo on a transport.Conn (which asks
//     again before it sleeps), no codec and no router: the program's
//     wake-ups and the syscalls alone;
//   - bare-setsid: the same, the process in a session of its own as the
//     broker starts every jail (measured: that alone costs what the jail
//     does, on a machine others load: the scheduler no longer runs the
//     two as one group);
//   - raw: an unjailed process sending an encoded kv.get frame to the
//     real channel and router and reading the answer undecoded (bare
//     plus the host's work);
//   - raw-jailed: the same binary in the run jail (plus the jail's cost);
//   - client: the kv.get program of BenchmarkCapabilityRoundTrip, on the
//     prelude's client, unjailed (raw plus the program's client, and
//     the shared ring the client asks for instead of the socket: bare
//     and raw measure the socket alone);
//   - jailed: that program run by the engine, BenchmarkCapabilityRoundTrip's
//     one-caller figure.
func BenchmarkCapabilityRoundTripFloor(b *testing.B) {
	const n = 20000
	s := newSession(b, nil)
	var frame bytes.Buffer
	if err := wire.WriteFrame(&frame, wire.Frame{ID: 1, Kind: wire.FrameCapCall, Body: map[string]any{"cap": "kv.get", "args": map[string]any{"key": "k"}}}); err != nil {
		b.Fatal(err)
	}
	bare := buildWithPrelude(b, floorProgram(n, nil))
	raw := buildWithPrelude(b, floorProgram(n, frame.Bytes()))
	client := buildWithPrelude(b, roundTripProgram(1, n))
	parse := func(out string) (time.Duration, time.Duration) {
		f := strings.Fields(out)
		if len(f) != 2 {
			b.Fatalf("program printed %q", out)
		}
		p50, _ := strconv.ParseInt(f[0], 10, 64)
		rate, _ := strconv.ParseInt(f[1], 10, 64)
		return time.Duration(p50), time.Duration(rate)
	}
	hostOn := func(conn *os.File) *transport.Conn {
		fd, err := unix.Dup(int(conn.Fd()))
		if err != nil {
			b.Fatal(err)
		}
		return transport.NewConn(fd)
	}
	newHost := func() *seamHost {
		return s.eng.newSeamHost(s.call, WorkspaceSeam(), nil)
	}
	serve := func(conn *os.File) {
		hc := hostOn(conn)
		defer hc.Close()
		newChannel(b.Context(), hc, newHost().route, newRecorder(time.Now)).serve()
	}
	echo := func(conn *os.File) {
		hc := hostOn(conn)
		defer hc.Close()
		buf := make([]byte, floorMessageBytes)
		for {
			if _, err := io.ReadFull(hc, buf); err != nil {
				return
			}
			if _, err := hc.Write(buf); err != nil {
				return
			}
		}
	}
	variants := []struct {
		name string
		run  func() string
	}{
		{"bare", func() string { return runProbe(b, bare, "", echo) }},
		{"bare-setsid", func() string {
			return runProbeIn(b, bare, "", true, echo)
		}},
		{"raw", func() string { return runProbe(b, raw, "", serve) }},
		{"raw-jailed", func() string {
			res, err := runProgram(b.Context(), s.call, &Binary{Path: raw}, time.Minute, newHost())
			if err != nil || res.Code != "" {
				b.Fatalf("%v %+v", err, res)
			}
			return res.Stdout
		}},
		{"client", func() string { return runProbe(b, client, "", serve) }},
		{"jailed", func() string {
			x, err := s.eng.Execute(b.Context(), s.call, Request{Source: []byte(roundTripProgram(1, n))})
			if err != nil || x.Run.Code != "" {
				b.Fatalf("%v %+v", err, x.Run)
			}
			return x.Run.Stdout
		}},
	}
	p50s := make([][]time.Duration, len(variants))
	rates := make([][]time.Duration, len(variants))
	for i := 0; b.Loop(); i++ {
		for j := range variants {
			k := (i + j) % len(variants)
			p50, rate := parse(variants[k].run())
			p50s[k], rates[k] = append(p50s[k], p50), append(rates[k], rate)
		}
	}
	for k, v := range variants {
		b.ReportMetric(float64(median(p50s[k]))/float64(time.Microsecond), v.name+"-p50-µs")
		b.ReportMetric(float64(median(rates[k])), v.name+"-calls/s")
	}
}
