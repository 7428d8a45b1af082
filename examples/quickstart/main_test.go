package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
)

func TestQuickstartRuns(t *testing.T) {
	var b strings.Builder
	if err := run(&b); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	out := b.String()
	for _, want := range []string{"stale digest", "permission denied", "hello, loom", "Fresh anchors:", "sandbox: ", "[exit code 1]", "/etc is a system root", "greet/hello.go: ", "hook write refused: protected_path", "sandbox: build: "} {
		if !strings.Contains(out, want) {
			t.Errorf("quickstart output lacks %q", want)
		}
	}
	if strings.Contains(out, "WARNING") {
		t.Errorf("the jailed write outside the workspace succeeded:\n%s", out)
	}
}

// TestBasePolicyKeepsSystemRootsFromTheFileTools: with the quickstart's
// base policy, fs_read of /etc/shadow is refused in band, saying why
// (/etc is a system root, read by the jail only) and what would be
// accepted (the workspace); a file in the workspace reads. The control:
// the policy the examples used before, with the system directories among
// the readable roots, lets fs_read return /etc/shadow.
func TestBasePolicyKeepsSystemRootsFromTheFileTools(t *testing.T) {
	if _, err := os.Stat("/etc/shadow"); err != nil {
		t.Fatalf("this test needs /etc/shadow: %v", err)
	}
	ws, err := os.MkdirTemp("/var/tmp", "loom-quickstart-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ws) })
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	reg, err := tool.NewRegistry(tool.ReadTool())
	if err != nil {
		t.Fatal(err)
	}
	read := func(c *tool.Call, path string) tool.Outcome {
		raw, _ := json.Marshal(map[string]string{"path": path})
		return reg.Dispatch(context.Background(), c, "fs_read", raw)
	}
	c := &tool.Call{Workspace: ws, Base: basePolicy(ws)}
	out := read(c, "/etc/shadow")
	if !out.IsError || out.Code != tool.CodeOutsideRoots {
		t.Fatalf("fs_read /etc/shadow: %+v", out)
	}
	for _, want := range []string{"/etc is a system root", "the file tools never do", "read only under " + ws} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("refusal %q does not say %q", out.Text, want)
		}
	}
	if out := read(c, "a.txt"); out.IsError {
		t.Fatalf("workspace read refused: %s", out.Text)
	}

	old := basePolicy(ws)
	old.ReadableRoots, old.SystemRoots = old.SystemRoots, nil
	if out := read(&tool.Call{Workspace: ws, Base: old}, "/etc/shadow"); out.IsError {
		t.Fatalf("control: with system directories among the readable roots fs_read should read /etc/shadow, got %s", out.Text)
	}
}
