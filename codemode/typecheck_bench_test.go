package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
)

// BenchmarkHostTypeCheck measures what type-checking an accepted program
// on the host (go/types over the builder's warm archives, as a vet
// refusal is checked) would add before its jailed build, beside that
// build: it interleaves the check of a typical program with a whole
// uncached code_mode call of a unique one, and reports both medians
// (check-ms, call-ms).
func BenchmarkHostTypeCheck(b *testing.B) {
	s := newSession(b, nil)
	reg, err := tool.NewRegistry(s.eng.Tool())
	if err != nil {
		b.Fatal(err)
	}
	call := func(src string) time.Duration {
		raw, _ := json.Marshal(map[string]any{"program": src})
		start := time.Now()
		o := reg.Dispatch(context.Background(), s.call, ToolName, raw)
		d := time.Since(start)
		if o.IsError {
			b.Fatalf("%s: %s", o.Code, o.Text)
		}
		return d
	}
	good := "package main\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\t\"strings\"\n\n\t\"cap/fs\"\n\t\"cap/proc\"\n)\n\nfunc main() {\n\tctx := context.Background()\n\t_ = ctx\n\tfmt.Println(strings.ToUpper(\"x\"), fs.Read, proc.Run)\n}\n"
	call(good) // the archives are warm from here on
	p, err := vet([]byte(good), WorkspaceSeam())
	if err != nil {
		b.Fatal(err)
	}
	bs, err := s.eng.buildStage()
	if err != nil {
		b.Fatal(err)
	}
	arch, _, err := bs.archivesFor(context.Background(), p)
	if err != nil {
		b.Fatal(err)
	}
	files, err := readImportcfg(arch.linkCfg)
	if err != nil {
		b.Fatal(err)
	}
	check := func() time.Duration {
		start := time.Now()
		q, err := vet([]byte(good), WorkspaceSeam())
		if err != nil {
			b.Fatal(err)
		}
		r := checkStubbed(q.fset, q.file, gcImporter(q.fset, files), isMCPPath)
		d := time.Since(start)
		if !r.ok || len(r.diags) > 0 {
			b.Fatalf("check: ok %v, %v", r.ok, r.diags)
		}
		return d
	}
	var checks, calls []time.Duration
	b.ResetTimer()
	for i := range b.N {
		checks = append(checks, check())
		calls = append(calls, call(fmt.Sprintf("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"bench\", %d, %d) }\n", time.Now().UnixNano(), i)))
	}
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	b.ReportMetric(median(checks), "check-ms")
	b.ReportMetric(median(calls), "call-ms")
}
