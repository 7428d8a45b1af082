package plane

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloom/loom/tool"
)

// TestCallForSharesTheSessionsPins: every strand's and operation's
// template shares the session's pinned roots, so a workspace a command
// swapped for a link stays refused for a later CallFor too (red team: a
// fresh CallFor pinned the swapped workspace and read and wrote outside
// every root).
func TestCallForSharesTheSessionsPins(t *testing.T) {
	t.Parallel()
	ws, cfg := testDirs(t)
	cfg.Families = FamilyFiles
	p := newTestPlane(t, cfg)
	outside := filepath.Join(filepath.Dir(ws), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRET\n"), 0o600)
	call := func(c *tool.Call, name string, args map[string]string) tool.Outcome {
		raw, _ := json.Marshal(args)
		return p.Dispatcher().Dispatch(context.Background(), c, c.OpID, "s0", []ToolCall{{ID: "1", Name: name, Args: raw}})[0].Outcome
	}
	if o := call(p.CallFor("main", "op-1"), "fs_write", map[string]string{"path": "a.txt", "content": "x"}); o.IsError {
		t.Fatal(o.Text)
	}
	// What a command with a grant of the workspace's parent could do.
	if err := os.Rename(ws, ws+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, ws); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*tool.Call{p.CallFor("main", "op-2"), p.CallFor("sub:main/child-0000000000000000", "op-3"), p.Call} {
		if o := call(c, "fs_read", map[string]string{"path": "secret.txt"}); !o.IsError || o.Code != tool.CodeRootChanged {
			t.Errorf("%s/%s read through the swapped workspace: %s %.200s", c.Strand, c.OpID, o.Code, o.Text)
		}
		if o := call(c, "fs_write", map[string]string{"path": "pwned", "content": "x"}); !o.IsError {
			t.Errorf("%s/%s wrote through the swapped workspace: %.200s", c.Strand, c.OpID, o.Text)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "pwned")); err == nil {
		t.Error("a file was written outside every root")
	}
}
