package codemode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
)

// mainWith is a whole vetted program: imports and the body of main.
func mainWith(imports []string, body string) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, i := range imports {
		fmt.Fprintf(&b, "\t%q\n", i)
	}
	b.WriteString(")\n\nfunc main() {\n" + body + "\n}\n")
	return b.String()
}

// TestRunEndings: how a program ends is its result's code, with what it
// printed and the tail of its stderr.
func TestRunEndings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		src    string
		within time.Duration
		code   tool.Code
		stdout string
		stderr string
	}{
		{name: "silent", src: mainWith(nil, ""), stdout: ""},
		{name: "exit_code", src: mainWith([]string{"fmt"}, `fmt.Println("before"); panicOrExit()`) + "\nfunc panicOrExit() { var m map[string]int; m[\"x\"] = 1 }\n",
			code: CodeRunFailed, stdout: "before\n", stderr: "assignment to entry in nil map"},
		{name: "panic", src: mainWith(nil, `panic("the program gave up")`), code: CodeRunFailed, stderr: "the program gave up"},
		{name: "wall_deadline", src: mainWith([]string{"time"}, `time.Sleep(time.Hour)`), within: time.Second, code: CodeWallDeadline},
	}
	s := newSession(t, nil)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			x, err := s.exec(t, c.src, c.within)
			if err != nil {
				t.Fatal(err)
			}
			r := x.Run
			if r.Code != c.code || r.Stdout != c.stdout && c.stdout != "" || !strings.Contains(r.Stderr, c.stderr) {
				t.Fatalf("code %q stdout %q stderr %q", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}

// TestLargeStdoutSpills: 10 MB of stdout is kept whole in the blob store
// and answered as an overflow notice, not inline.
func TestLargeStdoutSpills(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	res := s.mustRun(t, mainWith([]string{"fmt", "strings"}, `line := strings.Repeat("x", 99)
	for i := 0; i < 100000; i++ {
		fmt.Println(line)
	}`))
	if res.Overflow == nil || res.StdoutBytes != 10_000_000 || len(res.Stdout) > 16<<10 {
		t.Fatalf("overflow %+v, %d bytes, %d shown", res.Overflow, res.StdoutBytes, len(res.Stdout))
	}
}

// TestCapabilitiesFromGoroutines: sixteen goroutines calling kv and fs
// at once each get their own answers.
func TestCapabilitiesFromGoroutines(t *testing.T) {
	t.Parallel()
	s := newSession(t, map[string]string{"a.txt": "alpha\n"})
	res := s.mustRun(t, mainWith([]string{"context", "fmt", "sync", "cap/fs", "cap/kv"}, `ctx := context.Background()
	var wg sync.WaitGroup
	bad := make(chan string, 64)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprint("k", i)
			for j := 0; j < 20; j++ {
				if err := kv.Set(ctx, key, []byte(fmt.Sprint(i, j))); err != nil {
					bad <- err.Error()
					return
				}
				v, ok, err := kv.Get(ctx, key)
				if err != nil || !ok || string(v) != fmt.Sprint(i, j) {
					bad <- fmt.Sprint("goroutine ", i, " read ", string(v))
					return
				}
				f, err := fs.Read(ctx, "a.txt")
				if err != nil || f.Text() != "alpha\n" {
					bad <- fmt.Sprint("read: ", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(bad)
	for b := range bad {
		fmt.Println("BAD", b)
	}
	fmt.Println("done")`))
	if res.Stdout != "done\n" || res.Record.Total != 16*20*3 || res.Record.OK != res.Record.Total {
		t.Fatalf("stdout %q record total %d ok %d", res.Stdout, res.Record.Total, res.Record.OK)
	}
	if len(res.Record.Calls) != maxRecordedCalls || res.Record.Omitted != res.Record.Total-maxRecordedCalls {
		t.Errorf("record itemised %d, omitted %d", len(res.Record.Calls), res.Record.Omitted)
	}
}

// TestEmitCeiling: report.emit is admitted maxEmits times per execution;
// the next is refused in band, naming the ceiling.
func TestEmitCeiling(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	res := s.mustRun(t, mainWith([]string{"context", "errors", "fmt", "cap/report"}, fmt.Sprintf(`ctx := context.Background()
	for i := 0; i < %d; i++ {
		if _, err := report.Emit(ctx, fmt.Sprint("r", i), []byte(fmt.Sprint(i)), "text/plain"); err != nil {
			var e *report.Error
			errors.As(err, &e)
			fmt.Println(i, e.Code)
			return
		}
	}
	fmt.Println("no ceiling")`, maxEmits+5)))
	if want := fmt.Sprintf("%d %s\n", maxEmits, codeAdmissionCeiling); res.Stdout != want {
		t.Fatalf("stdout %q, want %q", res.Stdout, want)
	}
	if len(res.Artifacts) != maxEmits {
		t.Errorf("%d artifacts", len(res.Artifacts))
	}
}

// TestHostCancellationEndsTheRun: the host's context ending mid-run
// kills the program and answers run_cancelled at once.
func TestHostCancellationEndsTheRun(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	p, err := s.eng.Vet([]byte(mainWith([]string{"time"}, `time.Sleep(time.Hour)`)))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := s.eng.Build(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	// The wall is a minute: a cancellation the run ignored would end as
	// wall_deadline, not run_cancelled.
	res, err := s.eng.Run(ctx, s.call, bin, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != CodeRunCancelled {
		t.Fatalf("code %q", res.Code)
	}
}

// TestOutputBoundStopsTheRunAndSaysSo: a program writing past the call's
// output bound is stopped, and the answer names the bound as the cause,
// first.
func TestOutputBoundStopsTheRunAndSaysSo(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	s.call.MaxOutputBytes = 1 << 20
	o := s.dispatch(t, map[string]any{"program": mainWith([]string{"fmt", "strings"}, `for {
		fmt.Println(strings.Repeat("y", 1000))
	}`)})
	if !o.IsError || o.Code != CodeRunFailed || !strings.HasPrefix(o.Text, "the program wrote more than its output bound") {
		t.Fatalf("%s:\n%.400s", o.Code, o.Text)
	}
}

// TestStderrKeepsItsHead: a long stderr keeps its first lines (where a
// panic says what happened) and its tail, saying how much was left out.
func TestStderrKeepsItsHead(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	x, err := s.exec(t, mainWith(nil, `println("FIRST LINE: what went wrong")
	for i := 0; i < 2000; i++ {
		println("noise noise noise noise noise noise")
	}
	panic("at the end")`), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := x.Run.Stderr
	if !strings.HasPrefix(r, "FIRST LINE: what went wrong") || !strings.Contains(r, "bytes of stderr left out") || !strings.Contains(r, "at the end") {
		t.Fatalf("stderr:\n%s", r)
	}
	if len(r) > maxStderrHeadBytes+maxStderrTailBytes+128 {
		t.Fatalf("stderr of %d bytes kept", len(r))
	}
}
