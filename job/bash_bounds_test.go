//go:build linux

package job

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

func runBashCtx(t *testing.T, ctx context.Context, c *tool.Call, args map[string]any) (tool.Outcome, BashDetails) {
	t.Helper()
	r, err := tool.NewRegistry(BashTool(nil))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	o := r.Dispatch(ctx, c, "bash", raw)
	d, _ := o.Details.(BashDetails)
	return o, d
}

// padded is a command of exactly n bytes that prints ok.
func padded(n int) string {
	const head = "echo ok #"
	return head + strings.Repeat("x", n-len(head))
}

// TestBashRefusesCommandsPastItsBound: a command of maxBashCommandBytes
// runs; one byte past it, a command far past it (where exec met E2BIG and
// the helper's config was cut), and a command holding a NUL byte (EINVAL
// from exec) are refused in band with invalid_arguments, naming the fix,
// before anything runs.
func TestBashRefusesCommandsPastItsBound(t *testing.T) {
	c := bashCall(t, true)
	o, d := runBashArgs(t, c, map[string]any{"command": padded(maxBashCommandBytes)})
	if o.IsError || d.ExitCode != 0 || !strings.Contains(o.Text, "ok\n") {
		t.Fatalf("a command at the bound: %s %.300s", o.Code, o.Text)
	}
	for _, tc := range []struct{ name, command, says string }{
		{"one past", padded(maxBashCommandBytes + 1), "fs_write"},
		{"1 MiB", padded(1 << 20), "fs_write"},
		{"15 MiB", padded(15 << 20), "fs_write"},
		{"NUL byte", "echo a\x00b", "NUL byte at byte 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, d := runBashArgs(t, c, map[string]any{"command": tc.command})
			if !o.IsError || o.Code != tool.CodeInvalidArguments || !strings.Contains(o.Text, tc.says) || d.Sandbox != nil {
				t.Fatalf("code %q, sandbox %v: %.300s", o.Code, d.Sandbox != nil, o.Text)
			}
			if len(o.Text) > 1024 {
				t.Errorf("the refusal is %d bytes: it echoes the command", len(o.Text))
			}
		})
	}
}

// TestBashReportsTheHostsDeadline: a command the call's own context ends
// (the host's deadline, the host's cancellation) is reported as that,
// coded cancelled, never as bash's timeout_ms it did not reach. The
// control is TestBashTimeout: timeout_ms itself is reported as a timeout.
func TestBashReportsTheHostsDeadline(t *testing.T) {
	c := bashCall(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	o, d := runBashCtx(t, ctx, c, map[string]any{"command": "echo started; sleep 30"})
	if !o.IsError || o.Code != tool.CodeCancelled || d.TimedOut || !d.Cancelled {
		t.Fatalf("code %q timed_out %v cancelled %v: %s", o.Code, d.TimedOut, d.Cancelled, o.Text)
	}
	if !strings.Contains(o.Text, "the host's deadline for this call passed") || strings.Contains(o.Text, "timed out") || !strings.Contains(o.Text, "started") {
		t.Fatalf("text: %s", o.Text)
	}

	ctx, cancelNow := context.WithCancel(context.Background())
	c = bashCall(t, true)
	c.ObserveOutput = func(tool.OutputTail) { cancelNow() } // cancel once the command is seen running
	o, d = runBashCtx(t, ctx, c, map[string]any{"command": "echo started; sleep 30"})
	if !o.IsError || o.Code != tool.CodeCancelled || d.TimedOut || !strings.Contains(o.Text, "the host cancelled this call") {
		t.Fatalf("cancelled: code %q timed_out %v: %s", o.Code, d.TimedOut, o.Text)
	}
}

// TestBashFindsItsShellInTheJail: the shell is looked up on the PATH the
// command gets inside the sandbox, never on the host's: a bash the host's
// PATH names in a directory the sandbox does not show is not used; a
// command whose PATH holds no bash runs with /bin/sh and the answer says
// so.
func TestBashFindsItsShellInTheJail(t *testing.T) {
	hostOnly := nonTmpDir(t)
	if err := os.WriteFile(filepath.Join(hostOnly, "bash"), []byte("#!/bin/sh\necho host-only bash\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", hostOnly+string(os.PathListSeparator)+os.Getenv("PATH"))

	c := bashCall(t, true)
	o, d := runBashArgs(t, c, map[string]any{"command": `echo "bash=${BASH_VERSION:+yes}"`})
	if o.IsError || !strings.Contains(o.Text, "bash=yes\n") || filepath.Base(d.Shell) != bashShell || strings.HasPrefix(d.Shell, hostOnly) {
		t.Fatalf("with a host-only bash on the host's PATH: shell %q, %s: %s", d.Shell, o.Code, o.Text)
	}
	if strings.Contains(o.Text, "note:") {
		t.Errorf("a note although bash ran: %s", o.Text)
	}

	c = bashCall(t, true)
	c.Env["PATH"] = hostOnly // the command's PATH: nothing the sandbox shows
	o, d = runBashArgs(t, c, map[string]any{"command": `echo "bash=${BASH_VERSION:+yes}"`})
	if o.IsError || !strings.Contains(o.Text, "bash=\n") || !strings.Contains(o.Text, "ran with "+fallbackShell) {
		t.Fatalf("with no bash on the command's PATH: shell %q, %s: %s", d.Shell, o.Code, o.Text)
	}
	if real, _ := filepath.EvalSymlinks(fallbackShell); d.Shell != real {
		t.Errorf("shell %q, want %s as the sandbox shows it (%s)", d.Shell, fallbackShell, real)
	}
}

// TestJailShellSeesOnlyTheJailsRoots: jailShell finds a shell only under
// the policy's system and readable roots, on the PATH the policy passes.
func TestJailShellSeesOnlyTheJailsRoots(t *testing.T) {
	t.Parallel()
	sys := sandbox.SystemReadableRoots()
	realBash, err := filepath.EvalSymlinks("/usr/bin/bash")
	if err != nil {
		t.Fatalf("this test needs /usr/bin/bash: %v", err)
	}
	realSh, _ := filepath.EvalSymlinks(fallbackShell)
	for _, tc := range []struct {
		name           string
		env            map[string]string
		pol            sandbox.Policy
		shell          string
		fallback, want bool
	}{
		{"PATH passed", map[string]string{"PATH": "/usr/bin"}, sandbox.Policy{SystemRoots: sys, EnvAllow: []string{"PATH"}}, realBash, false, true},
		{"PATH not passed: the default path", map[string]string{"PATH": "/nowhere"}, sandbox.Policy{SystemRoots: sys}, realBash, false, true},
		{"PATH without bash", map[string]string{"PATH": "/nowhere"}, sandbox.Policy{SystemRoots: sys, EnvAllow: []string{"PATH"}}, realSh, true, true},
		{"relative PATH entries are skipped", map[string]string{"PATH": "bin:."}, sandbox.Policy{SystemRoots: sys, EnvAllow: []string{"PATH"}}, realSh, true, true},
		{"no root shows a shell", map[string]string{"PATH": "/usr/bin"}, sandbox.Policy{SystemRoots: []string{"/etc"}, EnvAllow: []string{"PATH"}}, "", false, false},
		{"a readable root shows it", nil, sandbox.Policy{ReadableRoots: []string{"/usr"}}, realBash, false, true},
	} {
		shell, fallback, found := jailShell(tc.env, tc.pol)
		if shell != tc.shell || fallback != tc.fallback || found != tc.want {
			t.Errorf("%s: %q %v %v, want %q %v %v", tc.name, shell, fallback, found, tc.shell, tc.fallback, tc.want)
		}
	}
}
