package lsp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/lsptest"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// benchPackages is how many packages the benchmark's module has.
const benchPackages = 50

// writeBenchModule writes a module of benchPackages packages under ws,
// each of three files, each importing the one before it (and fmt), and
// returns the file the benchmark edits: one in the middle, with
// dependencies below it and dependents above.
func writeBenchModule(tb testing.TB, ws string) (edited string) {
	tb.Helper()
	write := func(rel, content string) {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	write("go.mod", "module example.com/bench\n\ngo 1.22\n")
	for i := range benchPackages {
		name := fmt.Sprintf("p%02d", i)
		imp, use := `import "fmt"`, "0"
		if i > 0 {
			imp = fmt.Sprintf("import (\n\t\"fmt\"\n\n\t\"example.com/bench/p%02d\"\n)", i-1)
			use = fmt.Sprintf("p%02d.Sum(n)", i-1)
		}
		for f := range 3 {
			var b strings.Builder
			fmt.Fprintf(&b, "package %s\n\n", name)
			if f == 0 {
				fmt.Fprintf(&b, "%s\n\n// Sum adds up what the packages below give.\nfunc Sum(n int) int {\n\treturn helper0(n) + %s\n}\n\n", imp, use)
				fmt.Fprintf(&b, "// Describe renders n.\nfunc Describe(n int) string { return fmt.Sprintf(\"%s:%%d\", Sum(n)) }\n", name)
			}
			for k := range 8 {
				fmt.Fprintf(&b, "\n// helper%d is one more function to check.\nfunc helper%d(n int) int {\n\tx := n*%d + %d\n\tfor i := 0; i < n; i++ {\n\t\tx += i %% %d\n\t}\n\treturn x\n}\n",
					f*8+k, f*8+k, k+1, f, k+2)
			}
			write(filepath.Join(name, fmt.Sprintf("f%d.go", f)), b.String())
		}
	}
	return filepath.Join(ws, fmt.Sprintf("p%02d", benchPackages/2), "f0.go")
}

// BenchmarkDiagnosticsOneLineEdit measures, with gopls warm on a module of
// benchPackages packages, the time from a one-line edit's write to its
// settled diagnostics (what fs_edit waits for), against `go vet` of the
// edited package run in the same jail (the server's policy, environment
// and broker), the two interleaved. The edit alternates between a clean
// line and one with a type error, so every diagnosis is new work. It
// reports the p50 of each and their ratio.
//
//	go test -run '^$' -bench DiagnosticsOneLineEdit -benchtime 20x ./lsp/
func BenchmarkDiagnosticsOneLineEdit(b *testing.B) {
	bin := lsptest.RequireGopls(b)
	s := newSession(b)
	edited := writeBenchModule(b, s.ws)
	p := s.plane(b, Gopls(bin))
	srv := p.servers[0]
	orig, err := os.ReadFile(edited)
	if err != nil {
		b.Fatal(err)
	}
	variants := [2][]byte{
		[]byte(strings.Replace(string(orig), "return helper0(n) + ", "return helper0(n) + 1 + ", 1)),
		[]byte(strings.Replace(string(orig), "return helper0(n) + ", "return helper0(n) + undefinedName + ", 1)),
	}
	diagnose := func(i int) (time.Duration, tool.FileDiagnostics) {
		content := variants[i%2]
		began := time.Now()
		if err := os.WriteFile(edited, content, 0o644); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		got := p.Diagnose(ctx, []tool.ChangedFile{{Path: edited, Content: content}})
		return time.Since(began), got[0]
	}
	vet := func() time.Duration {
		began := time.Now()
		ex, err := s.broker.Clear(context.Background(), sandbox.CallSpec{
			Argv: []string{"go", "vet", "./" + filepath.Base(filepath.Dir(edited))}, Dir: s.ws,
			Env: srv.env, Policy: srv.pol, Timeout: 5 * time.Minute,
		})
		if err != nil {
			b.Fatal(err)
		}
		var out []byte
		for o := range ex.Output() {
			out = append(out, o.Bytes...)
		}
		// Vet fails on the variant with the type error; it must have
		// vetted, not failed to run.
		if st := ex.Wait(); st.Failed != "" || st.TimedOut || (st.ExitCode != 0 && !strings.Contains(string(out), "undefinedName")) {
			b.Fatalf("go vet: %+v\n%s", st, out)
		}
		return time.Since(began)
	}

	// Warm: the module loaded and type-checked, vet's cache filled, each
	// variant seen once by both.
	for i := range 4 {
		if _, got := diagnose(i); got.Status != tool.DiagnosticsSettled {
			b.Fatalf("warm-up diagnosis: %+v", got)
		}
		vet()
	}
	var diag, vetted []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, got := diagnose(i)
		if got.Status != tool.DiagnosticsSettled || (i%2 == 1) != (got.Errors == 1) {
			b.Fatalf("edit %d: %+v", i, got)
		}
		diag = append(diag, d)
		vetted = append(vetted, vet())
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) time.Duration {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	dp, vp := p50(diag), p50(vetted)
	b.ReportMetric(float64(dp.Microseconds())/1000, "diag-p50-ms")
	b.ReportMetric(float64(vp.Microseconds())/1000, "vet-p50-ms")
	b.ReportMetric(float64(dp)/float64(vp), "diag/vet")
	b.ReportMetric(0, "ns/op")
}
