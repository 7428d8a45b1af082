package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/lsptest"
)

// BenchmarkReferences150Sites: Plane.References of a function called
// from 150 sites over 15 files, gopls warm, by name; beside it the
// server's own answer to the same request (the raw round trip through
// the jail, without the scan, decoding and anchoring Loom adds). Reports
// the p50 of each.
func BenchmarkReferences150Sites(b *testing.B) {
	bin := lsptest.RequireGopls(b)
	s := newSession(b)
	os.WriteFile(filepath.Join(s.ws, "go.mod"), []byte("module example.com/refs\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(s.ws, "hot.go"), []byte("package refs\n\n// Hot is called everywhere.\nfunc Hot(n int) int { return n + 1 }\n"), 0o644)
	for f := range 15 {
		var src strings.Builder
		fmt.Fprintf(&src, "package refs\n\nfunc caller%d(n int) int {\n", f)
		for range 10 {
			src.WriteString("\tn = Hot(n)\n")
		}
		src.WriteString("\treturn n\n}\n")
		os.WriteFile(filepath.Join(s.ws, fmt.Sprintf("c%02d.go", f)), []byte(src.String()), 0o644)
	}
	p := s.plane(b, Gopls(bin))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	at := Position{Symbol: "Hot"}
	if got, err := p.References(ctx, at); err != nil || got.Total != 151 {
		b.Fatalf("warm-up: total %d, %v", got.Total, err)
	}
	pl, err := p.place(ctx, p.files(), at)
	if err != nil {
		b.Fatal(err)
	}
	params := pl.params()
	params["context"] = map[string]any{"includeDeclaration": true}
	var whole, server []time.Duration
	b.ResetTimer()
	for b.Loop() {
		began := time.Now()
		if _, err := p.References(ctx, at); err != nil {
			b.Fatal(err)
		}
		whole = append(whole, time.Since(began))
		var raw json.RawMessage
		began = time.Now()
		if err := pl.s.query(ctx, func(r *run) error { return r.call(ctx, "textDocument/references", params, &raw) }); err != nil {
			b.Fatal(err)
		}
		server = append(server, time.Since(began))
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	b.ReportMetric(p50(whole), "p50-ms")
	b.ReportMetric(p50(server), "server-p50-ms")
}
