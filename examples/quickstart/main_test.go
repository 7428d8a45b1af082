package main

import (
	"strings"
	"testing"
)

func TestQuickstartRuns(t *testing.T) {
	var b strings.Builder
	if err := run(&b); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	out := b.String()
	for _, want := range []string{"stale digest", "permission denied", "hello, loom", "Fresh anchors:", "sandbox: ", "[exit code 1]"} {
		if !strings.Contains(out, want) {
			t.Errorf("quickstart output lacks %q", want)
		}
	}
	if strings.Contains(out, "WARNING") {
		t.Errorf("the jailed write outside the workspace succeeded:\n%s", out)
	}
}
