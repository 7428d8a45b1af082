package main

import (
	"strings"
	"testing"
)

func TestCodeModeExampleRuns(t *testing.T) {
	var b strings.Builder
	if err := run(&b); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	out := b.String()
	for _, want := range []string{"3 Go files", "TODO greet/greet.go:4", "a demo module", "report ", "\"total\":", "build stage: ", "run stage:   sandbox: ", "empty_root",
		"> code_mode mode launch (error: false", "ready; endpoints: paths, default", "sent 7 bytes", "endpoint paths",
		"> code_mode mode join (error: false", "main.go: 6 lines\ngreet/greet.go: 4 lines\n---"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
