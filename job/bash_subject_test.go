package job

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/tool"
)

// TestBashRaiseNamesWhatRuns: bash raises its permissions naming the
// exact command line it runs and the directory it runs in, so a host
// shows those, never its own reading of the arguments.
func TestBashRaiseNamesWhatRuns(t *testing.T) {
	c := bashCall(t, true)
	extra := t.TempDir()
	sub := filepath.Join(c.Workspace, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	var got *tool.Subject
	c.RaiseRefusal = func(_ context.Context, r tool.RaisedRefusal) tool.Escalation {
		got = r.Subject
		return tool.Escalation{}
	}
	cmd := "printf 'a\\r\\n' > " + extra + "/f\n# and a second line"
	o, _ := runBashArgs(t, c, map[string]any{"command": cmd, "cwd": "sub", "permissions": map[string]any{"writable_roots": []string{extra}}})
	if !o.IsError {
		t.Fatalf("an unapproved write ran: %s", o.Text)
	}
	want := &tool.Subject{Kind: tool.SubjectCommand, Text: cmd, Dir: sub}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the raised subject (-want +got):\n%s", diff)
	}
}
