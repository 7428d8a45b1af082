package mcpgen

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// syntheticServer is a server of n tools, each with a typical input (a
// required string, an integer, an enum, a list of objects, a nested
// object, a definition) and every other one an output schema.
func syntheticServer(n int) []Tool {
	tools := make([]Tool, n)
	for i := range tools {
		tools[i] = Tool{
			Name:        fmt.Sprintf("resource_%d.list-items", i),
			Description: fmt.Sprintf("Lists the items of resource %d.\n\nPages with cursor.", i),
			InputSchema: []byte(`{"type":"object","properties":{
				"query":{"type":"string","description":"What to look for."},
				"limit":{"type":"integer","description":"At most this many."},
				"order":{"enum":["asc","desc"]},
				"filters":{"type":"array","items":{"type":"object","properties":{"field":{"type":"string"},"op":{"enum":["eq","ne","lt","gt"]},"value":{"oneOf":[{"type":"string"},{"type":"number"}]}},"required":["field","op"]}},
				"page":{"type":"object","properties":{"cursor":{"type":["string","null"]},"size":{"type":"integer"}}},
				"owner":{"$ref":"#/$defs/User"}},
				"required":["query"],
				"$defs":{"User":{"type":"object","properties":{"login":{"type":"string"},"manager":{"$ref":"#/$defs/User"}},"required":["login"]}}}`),
			Annotations: []byte(`{"readOnlyHint":true}`),
		}
		if i%2 == 0 {
			tools[i].OutputSchema = []byte(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"score":{"type":"number"}}}},"next":{"type":["string","null"]}},"required":["items"]}`)
		}
	}
	return tools
}

// BenchmarkGenerate500 generates the package of a 500-tool server.
func BenchmarkGenerate500(b *testing.B) {
	tools := syntheticServer(500)
	var size int
	for b.Loop() {
		p, err := Generate("synthetic", tools)
		if err != nil || len(p.Capabilities) != 500 {
			b.Fatal(err)
		}
		size = len(p.Source)
	}
	b.ReportMetric(float64(size), "source-bytes")
}

// BenchmarkTypeCheck500 type-checks the package of a 500-tool server
// against the prelude (the importers warmed first).
func BenchmarkTypeCheck500(b *testing.B) {
	p, err := Generate("synthetic", syntheticServer(500))
	if err != nil {
		b.Fatal(err)
	}
	if err := typeCheck(p.Name, p.Source); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := typeCheck(p.Name, p.Source); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild500 builds a program on the prelude and the package of
// a 500-tool server with the go command; the metric build-ms is the
// build after the first (the standard library and the prelude cached,
// the generated package and the program compiled afresh: each
// iteration's package differs by a comment).
func BenchmarkBuild500(b *testing.B) {
	p, err := Generate("synthetic", syntheticServer(500))
	if err != nil {
		b.Fatal(err)
	}
	main := "package main\n\nimport (\n\t\"context\"\n\n\t\"cap/mcp/synthetic\"\n)\n\nfunc main() {\n\tsynthetic.Resource0ListItems(context.Background(), synthetic.Resource0ListItemsInput{Query: \"x\"})\n}\n"
	buildOnPrelude(b, map[string][]byte{p.Path: p.Source}, main)
	var total time.Duration
	i := 0
	for b.Loop() {
		i++
		src := append(append([]byte(nil), p.Source...), "\n// build "+strconv.Itoa(i)+"\n"...)
		_, d := buildOnPrelude(b, map[string][]byte{p.Path: src}, main)
		total += d
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(i), "build-ms")
}
