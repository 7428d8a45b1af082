package codemode

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
)

// BenchmarkLaunchJoin interleaves, through the code_mode tool, mode
// launch followed by a join of a trivial program with mode run of the
// same program (its binary kept, so neither builds), alternating which
// goes first, and reports both medians and their ratio: what a
// background execution costs over a foreground one.
func BenchmarkLaunchJoin(b *testing.B) {
	s := newSession(b, nil)
	reg, err := tool.NewRegistry(s.eng.Tool())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.eng.Close(context.Background()) })
	const src = "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n"
	call := func(args map[string]any) tool.Outcome {
		raw, _ := json.Marshal(args)
		o := reg.Dispatch(b.Context(), s.call, ToolName, raw)
		if o.IsError {
			b.Fatalf("%v: %s: %s", args["mode"], o.Code, o.Text)
		}
		return o
	}
	run := func() time.Duration {
		start := time.Now()
		call(map[string]any{"program": src})
		return time.Since(start)
	}
	launchJoin := func() time.Duration {
		start := time.Now()
		h := call(map[string]any{"mode": "launch", "program": src}).Details.(ExecutionDetails).Handle
		if _, ok := call(map[string]any{"mode": "join", "handle": h, "wait_ms": maxJoinWait.Milliseconds()}).Details.(Details); !ok {
			b.Fatalf("the join of %s did not find it ended", h)
		}
		return time.Since(start)
	}
	run()
	launchJoin()
	var runs, launches []time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			runs = append(runs, run())
			launches = append(launches, launchJoin())
		} else {
			launches = append(launches, launchJoin())
			runs = append(runs, run())
		}
	}
	ml, mr := median(launches), median(runs)
	b.ReportMetric(float64(ml)/float64(time.Millisecond), "launch-join-ms")
	b.ReportMetric(float64(mr)/float64(time.Millisecond), "run-ms")
	b.ReportMetric(float64(ml)/float64(mr), "ratio")
}
