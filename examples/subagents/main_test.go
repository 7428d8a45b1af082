package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"spawned sub:main/review-auth-",
		"result contract: {area: string, issues: integer}",
		`result: {"area":"auth","issues":1}`,
		`result: {"area":"storage","issues":1}`,
		"result: MISMATCH - the result did not meet its contract {area: string, issues: integer}: issues is a string, want integer",
		"/findings = {\"area\":\"storage\"",
		"3 sub-agents",
		"agent_wait refused (unknown_handle)",
		`agent_spawn refused (unknown_spawn_tool): tool "fs_raed" does not exist on this host`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, ": completed\n"); n != 3 {
		t.Errorf("%d children completed, want 3:\n%s", n, text)
	}
	if n := strings.Count(text, "[error]"); n != 2 {
		t.Errorf("%d error outcomes, want only the unknown tool's and the forged handle's:\n%s", n, text)
	}
}

// TestCodeModeFanOut: the code-mode fan-out, codemode.RecipeFanOut
// verbatim, runs on the orchestration seam: three reviewers joined,
// their verdicts (the contract mismatch included) printed and emitted.
func TestCodeModeFanOut(t *testing.T) {
	var out bytes.Buffer
	if err := runCodeMode(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"[ok]",
		`: completed, result valid {"area":"auth","issues":1}`,
		`: completed, result valid {"area":"storage","issues":1}`,
		`: completed, result mismatched {"area":"billing","issues":"two"} issues is a string, want integer`,
		"artifact: reviews.txt",
		"calls: 5 (5 ok)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
