//go:build linux

package job

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// bashBroker is shared by the bash tests, probing the kernel once; it
// runs the package's host-built jail helper.
var bashBroker struct {
	once sync.Once
	b    *broker.Broker
}

// bashBrokerFor returns bashBroker, made on the first call.
func bashBrokerFor(t *testing.T) *broker.Broker {
	helper := JailHelperForTests(t)
	bashBroker.once.Do(func() { bashBroker.b = broker.New(broker.Options{HelperPath: helper}) })
	return bashBroker.b
}

func bashCall(t *testing.T, withStore bool) *tool.Call {
	t.Helper()
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
	c := &tool.Call{
		Workspace: ws,
		OpID:      "op", StepID: t.Name(),
		Base: sandbox.Policy{
			SystemRoots:   sandbox.SystemReadableRoots(),
			WritableRoots: []string{ws},
			Protected:     broker.DefaultProtected(ws),
			Network:       sandbox.NetworkOff,
			EnvAllow:      []string{"PATH", "HOME"},
		},
		Env:    map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": ws, "API_TOKEN": "s3cr3t"},
		Broker: bashBrokerFor(t),
	}
	if withStore {
		store, err := blob.Open(filepath.Join(root, "blobs"))
		if err != nil {
			t.Fatal(err)
		}
		c.Blobs = store
	}
	return c
}

// nonTmpDir returns a fresh directory outside /tmp, which the jail
// replaces, so a command's access to it is about the roots alone.
func nonTmpDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "loom-job-test-")
	if err != nil {
		t.Fatalf("no /var/tmp to build a non-/tmp directory in: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func runBashArgs(t *testing.T, c *tool.Call, args map[string]any) (tool.Outcome, BashDetails) {
	t.Helper()
	r, err := tool.NewRegistry(BashTool(nil))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	o := r.Dispatch(context.Background(), c, "bash", raw)
	d, _ := o.Details.(BashDetails)
	return o, d
}

func TestBashDeclaration(t *testing.T) {
	b := BashTool(nil)
	if b.Replay != tool.ReplayNever || b.Mode != tool.Exclusive {
		t.Fatalf("bash is %v/%v, want never/exclusive", b.Replay, b.Mode)
	}
	req := b.Requirements("/w")
	if len(req.WritableRoots) != 1 || req.WritableRoots[0] != "/w" || req.Network != sandbox.NetworkOff {
		t.Fatalf("requirements %+v", req)
	}
	if len(req.ReadableRoots) != 0 || !slices.Equal(req.SystemRoots, sandbox.SystemReadableRoots()) {
		t.Fatalf("bash must need the system directories as system roots, not readable roots: %+v", req)
	}
	if !strings.Contains(b.Description, strconv.Itoa(tool.MaxCommandOutputBytes)+" bytes of output") {
		t.Fatalf("the description does not state the output bound: %s", b.Description)
	}
	if err := sandbox.Validate(req); err != nil {
		t.Fatal(err)
	}
}

// TestBashStatesItsTimeoutFromItsConstants: the description, the
// timeout_ms schema and the prompt snippet state the default and the
// bound as the constants have them, and no other number of milliseconds.
func TestBashStatesItsTimeoutFromItsConstants(t *testing.T) {
	b := BashTool(nil)
	def, maxMs := strconv.FormatInt(defaultBashTimeout.Milliseconds(), 10), strconv.FormatInt(maxBashTimeout.Milliseconds(), 10)
	var schema struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	tm := schema.Properties["timeout_ms"]
	for _, tc := range []struct{ where, text string }{
		{"description", b.Description},
		{"timeout_ms schema", tm.Description},
	} {
		if !strings.Contains(tc.text, "default"+" "+def) && !strings.Contains(tc.text, "defaults to "+def) {
			t.Errorf("the %s does not state the default %s ms: %s", tc.where, def, tc.text)
		}
		if !strings.Contains(tc.text, maxMs) {
			t.Errorf("the %s does not state the bound %s ms: %s", tc.where, maxMs, tc.text)
		}
		for _, n := range regexp.MustCompile(`\b[0-9]{4,}\b`).FindAllString(tc.text, -1) {
			if n != def && n != maxMs && n != strconv.Itoa(tool.MaxCommandOutputBytes) {
				t.Errorf("the %s states %s, which no bash constant has: %s", tc.where, n, tc.text)
			}
		}
	}
	if tm.Type != "integer" {
		t.Errorf("timeout_ms is %q, want integer", tm.Type)
	}
	if want := strconv.Itoa(int(defaultBashTimeout.Seconds())) + " s default timeout"; !strings.Contains(b.PromptSnippet, want) {
		t.Errorf("the snippet does not say %q: %s", want, b.PromptSnippet)
	}
	if want := strconv.Itoa(blob.OverflowThreshold>>10) + " KiB"; !strings.Contains(b.Description, want) {
		t.Errorf("the description does not state the inline limit as %q: %s", want, b.Description)
	}
	if want := "command over " + strconv.Itoa(maxBashCommandBytes>>10) + " KiB"; !strings.Contains(b.Description, want) {
		t.Errorf("the description does not state the command bound as %q: %s", want, b.Description)
	}
}

func TestBashRunsJailed(t *testing.T) {
	c := bashCall(t, true)
	o, d := runBashArgs(t, c, map[string]any{"command": "echo hello; echo oops >&2; echo \"token=$API_TOKEN\"; pwd"})
	if o.IsError || d.ExitCode != 0 {
		t.Fatalf("outcome %+v", o)
	}
	for _, want := range []string{"hello\n", "oops\n", "token=\n", c.Workspace + "\n", "[exit code 0]", "sandbox: "} {
		if !strings.Contains(o.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, o.Text)
		}
	}
	// Every layer this host offers was applied to the command: a skipped
	// layer fails the test even though the report then says Degraded.
	if d.Sandbox == nil {
		t.Fatalf("no sandbox report: %s", o.Text)
	}
	offered := 0
	for _, l := range c.Broker.Available().Layers {
		if !l.Applied {
			continue
		}
		offered++
		if !d.Sandbox.Applied(l.Name) {
			t.Errorf("the host offers layer %s but the command ran without it: %+v", l.Name, d.Sandbox)
		}
	}
	if offered == 0 || !d.Sandbox.Applied(sandbox.LayerNamespaces) && !d.Sandbox.Applied(sandbox.LayerLandlock) {
		t.Fatalf("no jail confined the command (host offers %d layers): %+v", offered, d.Sandbox)
	}
}

func TestBashExitCodeAndError(t *testing.T) {
	c := bashCall(t, true)
	o, d := runBashArgs(t, c, map[string]any{"command": "exit 3"})
	if !o.IsError || d.ExitCode != 3 || o.Code != "nonzero_exit" || !strings.Contains(o.Text, "[exit code 3]") {
		t.Fatalf("outcome %+v", o)
	}
}

func TestBashTimeout(t *testing.T) {
	c := bashCall(t, true)
	o, d := runBashArgs(t, c, map[string]any{"command": "echo started; sleep 30", "timeout_ms": 300})
	if !o.IsError || !d.TimedOut || o.Code != "timeout" || !strings.Contains(o.Text, "timed out after 300 ms") || !strings.Contains(o.Text, "started") {
		t.Fatalf("outcome %+v", o)
	}
}

func TestBashTimeoutClamp(t *testing.T) {
	max := maxBashTimeout.Milliseconds()
	for _, tc := range []struct {
		ms      int64
		want    int64
		clamped bool
	}{
		{0, defaultBashTimeout.Milliseconds(), false},
		{1, 1000 / 1000, false},
		{max, max, false},
		{max + 1, max, true},
		{1 << 54, max, true},   // milliseconds as a Duration would wrap negative
		{1<<63 - 1, max, true}, // the largest JSON integer an int takes
	} {
		t.Run(fmt.Sprint(tc.ms), func(t *testing.T) {
			c := bashCall(t, true)
			args := map[string]any{"command": "true"}
			if tc.ms != 0 {
				args["timeout_ms"] = tc.ms
			}
			o, d := runBashArgs(t, c, args)
			if d.TimeoutMs != tc.want {
				t.Fatalf("timeout %d, want %d (%s)", d.TimeoutMs, tc.want, o.Text)
			}
			if got := strings.Contains(o.Text, "clamped"); got != tc.clamped {
				t.Fatalf("clamp note %v, want %v:\n%s", got, tc.clamped, o.Text)
			}
		})
	}
	o, _ := runBashArgs(t, bashCall(t, true), map[string]any{"command": "true", "timeout_ms": -1})
	if !o.IsError || o.Code != "invalid_arguments" {
		t.Fatalf("negative timeout: %+v", o)
	}
}

func TestBashCwd(t *testing.T) {
	c := bashCall(t, true)
	sub := filepath.Join(c.Workspace, "sub")
	os.Mkdir(sub, 0o755)
	o, _ := runBashArgs(t, c, map[string]any{"command": "pwd", "cwd": "sub"})
	if o.IsError || !strings.Contains(o.Text, sub+"\n") {
		t.Fatalf("cwd sub: %+v", o)
	}
	for _, bad := range []struct {
		cwd  string
		code tool.Code
	}{
		{"/usr", "outside_writable_roots"},
		{"/etc", "outside_writable_roots"},
		{"..", "outside_writable_roots"},
		{"missing", "not_a_directory"},
		{".git/hooks", "protected_path"},
	} {
		o, _ := runBashArgs(t, c, map[string]any{"command": "pwd", "cwd": bad.cwd})
		if !o.IsError || o.Code != bad.code {
			t.Errorf("cwd %q: %s %+v, want code %s", bad.cwd, o.Code, o.Text, bad.code)
		}
	}
	// Another writable root of the session is a directory bash runs in.
	extra := nonTmpDir(t)
	c.Base.WritableRoots = append(c.Base.WritableRoots, extra)
	o, _ = runBashArgs(t, c, map[string]any{"command": "pwd", "cwd": extra})
	if o.IsError || !strings.Contains(o.Text, extra+"\n") {
		t.Fatalf("cwd in another writable root: %+v", o)
	}
	// The directory working_directory selected is checked again: one a
	// command replaced with a link out since is refused.
	c.Shell = &tool.Shell{}
	c.Shell.SetDir(sub)
	os.Rename(sub, sub+".real")
	os.Symlink("/etc", sub)
	if o, _ := runBashArgs(t, c, map[string]any{"command": "pwd"}); o.Code != "outside_writable_roots" {
		t.Fatalf("a shell directory swapped for a link to /etc: %+v", o)
	}
}

// TestBashRootsThroughSymlinks is the attack of a link in the workspace
// onto "/": asked for as a readable root, it must reach Compose as "/"
// (so the operator is asked for "/"), never as a path inside the
// workspace that the workspace's writable root covers. The control is
// the lexical root the tool used to send, which Compose does find
// covered.
func TestBashRootsThroughSymlinks(t *testing.T) {
	c := bashCall(t, true)
	ws := c.Workspace
	os.Symlink("/", filepath.Join(ws, "rootfs"))
	os.Mkdir(filepath.Join(ws, "src"), 0o755)
	os.Symlink("src", filepath.Join(ws, "srclink"))

	if _, d := sandbox.Compose(c.Base, sandbox.Policy{ReadableRoots: []string{filepath.Join(ws, "rootfs")}}, nil); d != nil {
		t.Fatalf("control: the lexical root should look covered by the workspace, got %v", d)
	}
	for _, tc := range []struct {
		name   string
		perm   map[string]any
		wanted []sandbox.Grant
	}{
		{"readable rootfs", map[string]any{"readable_roots": []string{"rootfs"}}, []sandbox.Grant{{Kind: sandbox.GrantReadableRoot, Path: "/"}}},
		{"readable rootfs/root", map[string]any{"readable_roots": []string{"rootfs/root"}}, []sandbox.Grant{{Kind: sandbox.GrantReadableRoot, Path: "/root"}}},
		{"absolute through the link", map[string]any{"readable_roots": []string{ws + "/rootfs/etc"}}, []sandbox.Grant{{Kind: sandbox.GrantReadableRoot, Path: "/etc"}}},
		{"writable rootfs/etc", map[string]any{"writable_roots": []string{"rootfs/etc"}}, []sandbox.Grant{{Kind: sandbox.GrantWritableRoot, Path: "/etc"}}},
		{"a link inside stays inside", map[string]any{"writable_roots": []string{"srclink"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var raised []tool.RaisedRefusal
			c.RaiseRefusal = func(_ context.Context, r tool.RaisedRefusal) tool.Escalation {
				raised = append(raised, r)
				return tool.Escalation{}
			}
			o, d := runBashArgs(t, c, map[string]any{"command": "true", "mode": "foreground", "permissions": tc.perm})
			if tc.wanted == nil {
				if len(raised) != 0 || o.IsError {
					t.Fatalf("a root inside the workspace raised %+v: %s", raised, o.Text)
				}
				return
			}
			if len(raised) != 1 || !slices.Equal(raised[0].Denial.Wanted, tc.wanted) {
				t.Fatalf("raised %+v, want one refusal wanting %+v", raised, tc.wanted)
			}
			if !o.IsError || o.Code != tool.Code(sandbox.DenialRequirementsNotCovered) || !slices.Equal(d.Wanted, tc.wanted) {
				t.Fatalf("unapproved: %+v", o)
			}
		})
	}
}

// TestBashOutputBound: a command writing exactly its output bound runs to
// its end; one byte past it is stopped by the broker, and the answer says
// the output bound ended it, keeping the head and tail.
func TestBashOutputBound(t *testing.T) {
	const bound = 256 << 10
	for _, tc := range []struct {
		n       int
		limited bool
	}{
		{bound, false},
		{bound + 1, true},
	} {
		for _, store := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/store=%v", tc.n, store), func(t *testing.T) {
				c := bashCall(t, store)
				c.MaxOutputBytes = bound
				// Past the bound the command then waits to be stopped: only
				// the bound can end it before its timeout.
				cmd := fmt.Sprintf("printf HEAD; head -c %d /dev/zero | tr '\\0' x; printf TAIL", tc.n-8)
				if tc.limited {
					cmd += "; exec sleep 60"
				}
				o, d := runBashArgs(t, c, map[string]any{"mode": "foreground", "timeout_ms": 60000, "command": cmd})
				if d.OutputBound != bound {
					t.Fatalf("output bound %d, want %d", d.OutputBound, bound)
				}
				if tc.limited {
					if !o.IsError || o.Code != CodeOutputLimited || !d.OutputLimited || d.TimedOut || d.Bytes != bound {
						t.Fatalf("past the bound: error %q limited %v timed out %v bytes %d:\n%.400s", o.Code, d.OutputLimited, d.TimedOut, d.Bytes, o.Text)
					}
					if !strings.Contains(o.Text, "the output bound ended the command") || !strings.Contains(o.Text, strconv.Itoa(bound)+"-byte output bound") || !strings.Contains(o.Text, "HEAD") {
						t.Fatalf("past the bound the text does not say so:\n%.600s", o.Text)
					}
					return
				}
				if o.IsError || d.OutputLimited || d.Bytes != bound || !strings.Contains(o.Text, "TAIL") {
					t.Fatalf("at the bound: error %q limited %v bytes %d:\n%.400s", o.Code, d.OutputLimited, d.Bytes, o.Text)
				}
			})
		}
	}
}

func TestBashOutputOverflow(t *testing.T) {
	for _, tc := range []struct {
		n       int
		spilled bool
	}{
		{blob.OverflowThreshold, false},
		{blob.OverflowThreshold + 1, true},
		{1 << 20, true},
	} {
		for _, store := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/store=%v", tc.n, store), func(t *testing.T) {
				c := bashCall(t, store)
				var mu sync.Mutex
				var last tool.OutputTail
				calls := 0
				c.ObserveOutput = func(ot tool.OutputTail) {
					mu.Lock()
					defer mu.Unlock()
					calls++
					if len(ot.Tail) > tool.TailBytes {
						t.Errorf("observed tail of %d bytes > %d", len(ot.Tail), tool.TailBytes)
					}
					last = ot
				}
				o, d := runBashArgs(t, c, map[string]any{"command": fmt.Sprintf("head -c %d /dev/zero | tr '\\0' 'x'; printf END", tc.n-3)})
				if o.IsError || d.Bytes != int64(tc.n) {
					t.Fatalf("bytes %d want %d: %.300s", d.Bytes, tc.n, o.Text)
				}
				if calls == 0 || last.TotalBytes != int64(tc.n) || !strings.HasSuffix(last.Tail, "END") {
					t.Fatalf("observer: %d calls, last total %d", calls, last.TotalBytes)
				}
				if got := d.Overflow != nil; store && got != tc.spilled {
					t.Fatalf("spilled %v want %v", got, tc.spilled)
				}
				if tc.spilled && (len(o.Text) > blob.OverflowThreshold/2 || !strings.Contains(o.Text, "END")) {
					t.Fatalf("spilled output shown as %d bytes", len(o.Text))
				}
				if !tc.spilled && !strings.Contains(o.Text, strings.Repeat("x", tc.n-3)+"END") {
					t.Fatalf("inline output missing")
				}
			})
		}
	}
}

func TestBashWriteOutsideGetsHint(t *testing.T) {
	c := bashCall(t, true)
	outside := t.TempDir()
	c.Base.ReadableRoots = append(c.Base.ReadableRoots, outside)
	o, d := runBashArgs(t, c, map[string]any{"command": fmt.Sprintf("echo x > %s/f", outside), "permissions": map[string]any{"readable_roots": []string{outside}}})
	if !o.IsError || d.ExitCode == 0 || !strings.Contains(o.Text, "hint:") {
		t.Fatalf("outcome %+v", o)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Fatal("the write outside the workspace landed")
	}
	o, _ = runBashArgs(t, c, map[string]any{"command": "echo x > .git/hooks/pre-commit"})
	if !o.IsError || !strings.Contains(o.Text, "hint:") {
		t.Fatalf("protected write: %+v", o)
	}
	if _, err := os.Stat(filepath.Join(c.Workspace, ".git", "hooks", "pre-commit")); err == nil {
		t.Fatal("a hook was planted")
	}
}

func TestBashPermissionsRaiseRefusal(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(fmt.Sprint("approve=", approve), func(t *testing.T) {
			c := bashCall(t, true)
			extra := t.TempDir()
			var raised []tool.RaisedRefusal
			c.RaiseRefusal = func(_ context.Context, r tool.RaisedRefusal) tool.Escalation {
				raised = append(raised, r)
				if !approve {
					return tool.Escalation{}
				}
				return tool.Escalation{Resume: true, Grants: r.Denial.Wanted}
			}
			o, _ := runBashArgs(t, c, map[string]any{
				"command":     fmt.Sprintf("echo granted > %s/f", extra),
				"permissions": map[string]any{"writable_roots": []string{extra}},
			})
			if len(raised) != 1 {
				t.Fatalf("raised %d refusals", len(raised))
			}
			w := raised[0].Denial.Wanted
			if len(w) != 1 || w[0].Kind != sandbox.GrantWritableRoot || w[0].Path != extra {
				t.Fatalf("wanted %+v", w)
			}
			_, err := os.Stat(filepath.Join(extra, "f"))
			if approve && (o.IsError || err != nil) {
				t.Fatalf("approved write failed: %+v", o)
			}
			if !approve && (!o.IsError || o.Code != tool.Code(sandbox.DenialRequirementsNotCovered) || err == nil) {
				t.Fatalf("unapproved: %+v (stat err %v)", o, err)
			}
		})
	}
}

func TestBashNetworkPermission(t *testing.T) {
	c := bashCall(t, true)
	var wanted []sandbox.Grant
	c.RaiseRefusal = func(_ context.Context, r tool.RaisedRefusal) tool.Escalation {
		wanted = r.Denial.Wanted
		return tool.Escalation{}
	}
	o, _ := runBashArgs(t, c, map[string]any{"command": "true", "permissions": map[string]any{"network": "full"}})
	if !o.IsError || len(wanted) != 1 || wanted[0].Kind != sandbox.GrantNetwork {
		t.Fatalf("outcome %+v wanted %+v", o, wanted)
	}
	o, _ = runBashArgs(t, c, map[string]any{"command": "true", "permissions": map[string]any{"network": "some"}})
	if !o.IsError || o.Code != "invalid_arguments" {
		t.Fatalf("bad network: %+v", o)
	}
}

func TestBashNoBroker(t *testing.T) {
	c := bashCall(t, true)
	c.Broker = nil
	o, _ := runBashArgs(t, c, map[string]any{"command": "true"})
	if !o.IsError || o.Code != "no_broker" {
		t.Fatalf("%+v", o)
	}
}

func TestBashPermissionHint(t *testing.T) {
	for _, tc := range []struct {
		stderr string
		hint   bool
		root   string
	}{
		{"sh: 1: cannot create /etc/x: Permission denied", true, ""},
		{"touch: cannot touch 'a': Read-only file system", true, ""},
		{"fatal: Unable to create '/w/repo/.git/index.lock': Read-only file system", true, "/w/repo/.git"},
		{"error: file not found", false, ""},
	} {
		if got := permissionError([]byte(tc.stderr)); got != tc.hint {
			t.Errorf("%q: permission error %v, want %v", tc.stderr, got, tc.hint)
		}
		h := permissionHint([]byte(tc.stderr))
		if tc.root != "" && !strings.Contains(h, tc.root+" may need") {
			t.Errorf("%q: hint %q lacks %s", tc.stderr, h, tc.root)
		}
		if tc.root == "" && strings.Contains(h, "metadata") {
			t.Errorf("%q: hint %q names a git directory", tc.stderr, h)
		}
	}
}

// TestGoModuleUnreachable: the go command failing to fetch a module file
// at the dial is told apart from other failures, a file refusal and a
// dial that fetched no module included.
func TestGoModuleUnreachable(t *testing.T) {
	for _, tc := range []struct {
		stderr string
		want   bool
	}{
		{`github.com/google/go-cmp@v0.5.1: Get "https://proxy.golang.org/github.com/google/go-cmp/@v/v0.5.1.zip": dial tcp: lookup proxy.golang.org on 10.0.0.53:53: dial udp 10.0.0.53:53: socket: operation not permitted`, true},
		{`go: example.com/x@v1.2.3: Get "https://goproxy.example/example.com/x/@v/v1.2.3.mod": dial tcp 10.1.1.1:443: connect: network is unreachable`, true},
		{`open /etc/shadow: permission denied`, false},
		{`Get "https://example.com/": dial tcp: lookup example.com: no such host`, false},
		{`main.go:2:8: missing go.sum entry for module providing package github.com/google/go-cmp/cmp`, false},
	} {
		if got := goModuleUnreachable([]byte(tc.stderr)); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.stderr, got, tc.want)
		}
		if tc.want && !strings.Contains(goModuleHint([]byte(tc.stderr)), "@v") {
			t.Errorf("%q: the hint names no module: %s", tc.stderr, goModuleHint([]byte(tc.stderr)))
		}
	}
}

// FuzzGoModuleHint: whatever stderr holds, the hint is one line of
// printable ASCII of bounded length.
func FuzzGoModuleHint(f *testing.F) {
	f.Add([]byte(`m.example/x@v1.0.0: Get "https://p.example/m.example/x/@v/v1.0.0.zip": dial tcp: x`))
	f.Fuzz(func(t *testing.T, stderr []byte) {
		h := goModuleHint(stderr)
		if len(h) > 1024 || strings.Count(h, "\n") != 1 || !strings.HasSuffix(h, "\n") || !printableASCII([]byte(strings.ReplaceAll(strings.TrimSuffix(h, "\n"), " ", "_"))) {
			t.Fatalf("hint %q", h)
		}
	})
}

func FuzzBashPermissionHint(f *testing.F) {
	f.Add([]byte("fatal: Unable to create '/a/.git/index.lock': File exists"))
	f.Add([]byte("Permission denied"))
	f.Fuzz(func(t *testing.T, stderr []byte) {
		h := permissionHint(stderr)
		if !strings.HasPrefix(h, "hint: ") || !strings.HasSuffix(h, "\n") {
			t.Fatalf("hint %q", h)
		}
		if m := gitLockPattern.FindSubmatch(stderr); m != nil && !strings.HasSuffix(string(m[1]), "/.git") {
			t.Fatalf("git root %q does not end in /.git", m[1])
		}
	})
}

func TestBashProtectedCreatedMovedAside(t *testing.T) {
	c := bashCall(t, true)
	os.RemoveAll(filepath.Join(c.Workspace, ".git", "hooks"))
	o, d := runBashArgs(t, c, map[string]any{"command": "mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit"})
	if len(d.ProtectedCreated) != 1 || d.ProtectedCreated[0].MovedTo == "" || !strings.Contains(o.Text, "moved aside") {
		t.Fatalf("outcome %+v", o)
	}
	if _, err := os.Stat(filepath.Join(c.Workspace, ".git", "hooks", "pre-commit")); err == nil {
		t.Fatal("the planted hook is still in place")
	}
}

// bash runs one command in the jail and states the exit code and the
// sandbox report in its text.
func ExampleBashTool() {
	ws, _ := os.MkdirTemp("", "loom-bash-example-")
	defer os.RemoveAll(ws)
	c := &tool.Call{
		Workspace: ws,
		OpID:      "op1", StepID: "step1",
		Base: sandbox.Policy{
			SystemRoots:   sandbox.SystemReadableRoots(),
			WritableRoots: []string{ws},
			Protected:     broker.DefaultProtected(ws),
			EnvAllow:      []string{"PATH"},
		},
		Env:    map[string]string{"PATH": "/usr/bin:/bin"},
		Broker: broker.New(broker.Options{}),
	}
	r, _ := tool.NewRegistry(BashTool(nil))
	o := r.Dispatch(context.Background(), c, "bash", json.RawMessage(`{"command":"exec 2>&1; echo hello; echo x > /etc/loom-example"}`))
	lines := strings.Split(o.Text, "\n")
	fmt.Println(lines[0])
	fmt.Println(o.IsError, strings.HasPrefix(lines[len(lines)-1], "sandbox: "))
	// Output:
	// hello
	// true true
}

// TestBashScratchLinkedOut: the harness creates the session scratch
// directory itself, unjailed. A command that replaced .loom with a link
// out of the workspace must not make it create a directory there.
func TestBashScratchLinkedOut(t *testing.T) {
	c := bashCall(t, false)
	outside := filepath.Join(filepath.Dir(c.Workspace), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(c.Workspace, ".loom")); err != nil {
		t.Fatal(err)
	}
	o, _ := runBashArgs(t, c, map[string]any{"command": "true", "mode": "foreground"})
	if _, err := os.Stat(filepath.Join(outside, "tmp")); err == nil {
		t.Errorf("the harness created the scratch directory outside the workspace: %s", o.Text)
	}
}

// TestBashShowsWhatTheGitGuardDisarmed: a command that plants a git
// config with a key git runs as a program hears that the guard took it
// out, in the text and in the details.
func TestBashShowsWhatTheGitGuardDisarmed(t *testing.T) {
	c := bashCall(t, true)
	script := "mkdir -p sub/.git/objects sub/.git/refs && echo 'ref: refs/heads/main' > sub/.git/HEAD && " +
		"printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > sub/.git/config"
	o, d := runBashArgs(t, c, map[string]any{"command": script})
	if len(d.GitNeutralised) == 0 {
		t.Fatalf("no neutralisation reported: %+v", o)
	}
	n := d.GitNeutralised[0]
	if !strings.HasSuffix(n.Path, filepath.Join("sub", ".git", "config")) || !slices.Contains(n.Removed, "core.fsmonitor") {
		t.Fatalf("neutralisation %+v, want core.fsmonitor removed from sub/.git/config", n)
	}
	if !strings.Contains(o.Text, "git guard removed core.fsmonitor from") {
		t.Fatalf("the text does not say what the guard did:\n%s", o.Text)
	}
	cfg, err := os.ReadFile(filepath.Join(c.Workspace, "sub", ".git", "config"))
	if err != nil || strings.Contains(string(cfg), "fsmonitor") {
		t.Fatalf("the planted key is still there (%v): %q", err, cfg)
	}
}

// TestBashSaysWhyAPathIsMissingOrBusy: a command reading a host file
// outside every root fails with ENOENT in its jail and is told why and
// how to ask for it; replacing the protected .git/config fails as busy
// and is told it is protected. Controls: with the file's directory
// approved through permissions.readable_roots the same command reads
// it, and a file missing inside the workspace gets no such line.
func TestBashSaysWhyAPathIsMissingOrBusy(t *testing.T) {
	c := bashCall(t, true)
	if !c.Broker.Available().Applied(sandbox.LayerNamespaces) {
		t.Skip("the jail applies no mount namespace here, so it hides no path")
	}
	outside := nonTmpDir(t)
	f := filepath.Join(outside, "notes.txt")
	os.WriteFile(f, []byte("HOST NOTES\n"), 0o644)
	o, _ := runBashArgs(t, c, map[string]any{"command": "cat " + f})
	if !o.IsError || !strings.Contains(o.Text, "hint: "+f+" is outside every directory") || !strings.Contains(o.Text, "ask the user") {
		t.Fatalf("missing host file, no one to ask: %s", o.Text)
	}
	c.RaiseRefusal = func(_ context.Context, r tool.RaisedRefusal) tool.Escalation {
		return tool.Escalation{Resume: true, Grants: r.Denial.Wanted}
	}
	o, _ = runBashArgs(t, c, map[string]any{"command": "cat " + f})
	if !o.IsError || !strings.Contains(o.Text, "hint: "+f+" is outside every directory") || !strings.Contains(o.Text, "readable_roots") {
		t.Fatalf("missing host file: %s", o.Text)
	}
	if o, _ := runBashArgs(t, c, map[string]any{"command": "cat " + f, "permissions": map[string]any{"readable_roots": []string{f}}}); o.IsError || !strings.Contains(o.Text, "HOST NOTES") {
		t.Fatalf("control: approved, the command should read it: %s", o.Text)
	}
	if o, _ := runBashArgs(t, c, map[string]any{"command": "cat " + filepath.Join(c.Workspace, "absent")}); !o.IsError || strings.Contains(o.Text, "hint: "+c.Workspace) {
		t.Fatalf("control: a file missing in the workspace: %s", o.Text)
	}
	o, _ = runBashArgs(t, c, map[string]any{"command": "printf '[x]\\n' > .git/c2 && mv .git/c2 .git/config"})
	if !o.IsError || !strings.Contains(o.Text, "busy") {
		t.Skipf("replacing a protected file did not fail as busy here: %s", o.Text)
	}
	if !strings.Contains(o.Text, "hint: "+filepath.Join(c.Workspace, ".git", "config")+" is protected") {
		t.Fatalf("busy protected config: %s", o.Text)
	}
}
