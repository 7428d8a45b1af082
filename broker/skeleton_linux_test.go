//go:build linux

package broker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
)

// usedSkeleton reports whether the execution's helper built its root
// from a prepared skeleton (its phase marks say so; the broker must
// trace them).
func usedSkeleton(b *Broker, ex *sandbox.Execution) bool {
	return slices.ContainsFunc(b.phasesOf(ex), func(m jail.PhaseMark) bool { return m.Name == jail.SkeletonMark })
}

// hadSkeleton reports whether the execution's helper made a skeleton
// before its command came (its phase marks say so; the broker must trace
// them).
func hadSkeleton(b *Broker, ex *sandbox.Execution) bool {
	return slices.ContainsFunc(b.phasesOf(ex), func(m jail.PhaseMark) bool { return m.Name == jail.SkeletonMadeMark })
}

// runTraced clears argv under p on b (which traces phases) and returns
// its stdout, how it settled and the execution.
func runTraced(t *testing.T, b *Broker, p sandbox.Policy, stdin *os.File, argv ...string) (string, sandbox.Settled, *sandbox.Execution) {
	t.Helper()
	spec := sandbox.CallSpec{Argv: argv, Policy: p, Env: map[string]string{"PATH": "/usr/bin:/bin"},
		Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second}
	if stdin != nil {
		spec.Stdin = stdin
	}
	ex, err := b.Clear(context.Background(), spec)
	if err != nil {
		t.Fatalf("Clear(%q): %v", argv, err)
	}
	var out strings.Builder
	for o := range ex.Output() {
		if o.Stream == sandbox.Stdout {
			out.Write(o.Bytes)
		}
	}
	return out.String(), ex.Wait(), ex
}

// A helper that built its root from a prepared skeleton reports exactly
// what a helper started for its command reports, layer by layer, for
// the same command under the same policy (with protected paths present
// and absent, and with a file as stdin, which only a fresh helper can
// take); and the warm one did use its skeleton while the fresh one had
// none (the control: without the skeleton the same reports come from the
// same code, so the comparison holds the skeleton to the fresh path).
func TestPreparedHelperConfinesAsAFreshOne(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for _, d := range []string{".git/hooks", ".git/objects"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, ".git/config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testPolicy(ws)
	p.Protected = DefaultProtected(ws)
	warm := newTestBroker(t, Options{})
	defer warm.Close()
	warm.test.tracePhases = true
	cold := newTestBroker(t, Options{WarmHelperIdle: -1})
	defer cold.Close()
	cold.test.tracePhases = true
	runTraced(t, warm, p, nil, "true")
	waitPool(t, warm, defaultWarmHelpers)
	probe := []string{"sh", "-c", "cat /proc/kcore /proc/keys 2>&1 | head -c 64; ls /dev; " +
		"(echo 5000 > /proc/sys/kernel/pid_max) 2>&1; (echo 5 > /proc/sys/user/max_mnt_namespaces) 2>&1; " +
		"cat /proc/sys/kernel/pid_max /proc/sys/user/max_mnt_namespaces /proc/sys/user/max_user_namespaces; " +
		// The mount table, without the ids and device numbers that
		// differ from one jail to the next, in a stable order.
		"cut -d' ' -f4- /proc/self/mountinfo | sort"}
	wantOut, wantSettled, fresh := runTraced(t, cold, p, nil, probe...)
	gotOut, gotSettled, prepared := runTraced(t, warm, p, nil, probe...)
	if !usedSkeleton(warm, prepared) || usedSkeleton(cold, fresh) {
		t.Fatalf("skeleton used: warm %v, cold %v; want true, false", usedSkeleton(warm, prepared), usedSkeleton(cold, fresh))
	}
	if gotOut != wantOut || gotSettled.ExitCode != wantSettled.ExitCode {
		t.Fatalf("a prepared helper's command saw %q (exit %d), a fresh one's %q (exit %d)", gotOut, gotSettled.ExitCode, wantOut, wantSettled.ExitCode)
	}
	if !strings.Contains(wantOut, "null") || !strings.Contains(wantOut, "0\n0\n") || !strings.Contains(wantOut, "Read-only file system") ||
		!strings.Contains(wantOut, " /proc/sys ro,") {
		t.Fatalf("the probe saw no /dev or no nested namespace limits: %q", wantOut)
	}
	if !slices.Equal(prepared.Enforcement.Layers, fresh.Enforcement.Layers) {
		t.Fatalf("a prepared helper reports\n%+v\na fresh one\n%+v", prepared.Enforcement.Layers, fresh.Enforcement.Layers)
	}
}

// A prepared helper holds nothing of a policy's: a workspace swapped for
// another directory, and a protected file replaced, after the pool was
// prepared are what its command sees (the new workspace, the new file,
// still read-only). The control is a command whose jail was built before
// the swap: it still sees the old workspace and file, so a view made
// ahead of the swap would show them.
func TestPreparedHelperSeesTheSwappedRoot(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	mkWorkspace := func(dir, word string) {
		if err := os.MkdirAll(filepath.Join(dir, ".git/hooks"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{"marker": word + "\n", ".git/config": "[" + word + "]\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mkWorkspace(ws, "old")
	p := testPolicy(ws)
	p.Protected = DefaultProtected(ws)
	b := newTestBroker(t, Options{})
	defer b.Close()
	b.test.tracePhases = true
	// The skeleton's own check: a primed helper would be retired by the
	// swap (TestPrimedHelperRetiredWhenTheRootIsSwapped).
	b.test.noPrime = true
	runTraced(t, b, p, nil, "true")
	waitPool(t, b, defaultWarmHelpers)

	// The control's jail is built now, before the swap; it reads once
	// told to.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type seen struct {
		out string
		s   sandbox.Settled
	}
	before := make(chan seen, 1)
	probe := "cat marker .git/config; echo changed >> .git/config && echo wrote"
	ready := make(chan struct{})
	go func() {
		ex, err := b.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"sh", "-c", "read go; " + probe}, Policy: p,
			Env: map[string]string{"PATH": "/usr/bin:/bin"}, Stdin: r, Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second,
			Key: sandbox.StepKey{OpID: "op", StepID: "control"}})
		close(ready)
		if err != nil {
			before <- seen{out: err.Error()}
			return
		}
		var out strings.Builder
		for o := range ex.Output() {
			if o.Stream == sandbox.Stdout {
				out.Write(o.Bytes)
			}
		}
		before <- seen{out.String(), ex.Wait()}
	}()
	<-ready
	waitPool(t, b, defaultWarmHelpers)

	// The swap: the workspace directory moves away and another takes its
	// path; the protected file in it is a new inode.
	if err := os.Rename(ws, ws+".old"); err != nil {
		t.Fatal(err)
	}
	mkWorkspace(ws, "new")

	out, s, ex := runTraced(t, b, p, nil, "sh", "-c", probe)
	if !usedSkeleton(b, ex) {
		t.Fatal("the command after the swap was not handed a prepared helper")
	}
	if out != "new\n[new]\n" || s.ExitCode == 0 {
		t.Fatalf("after the swap a prepared helper's command saw %q (exit %d), want the new workspace and its config read-only", out, s.ExitCode)
	}
	w.Write([]byte("go\n"))
	w.Close()
	ctl := <-before
	if !strings.HasPrefix(ctl.out, "old\n[old]\n") {
		t.Fatalf("control: a jail built before the swap saw %q, want the old workspace (the probe cannot tell a stale view)", ctl.out)
	}
	if body, err := os.ReadFile(filepath.Join(ws, ".git/config")); err != nil || string(body) != "[new]\n" {
		t.Fatalf("the new protected file holds %q (%v)", body, err)
	}
}

// policyRootOverflowLinks is how many roots that are long links
// TestSkeletonFallbackProtectsProc gives a policy: each link's target
// takes a page of the new root's tmpfs, so together they overflow its
// jail.PolicyRootBytes.
const policyRootOverflowLinks = jail.PolicyRootBytes/4096 + 16

// A warm helper whose policy root fails after its skeleton was attached
// (the roots' links overflow the root tmpfs) keeps the host view, as a
// fresh helper does, with a /proc of its own whose kernel knobs are
// read-only: the skeleton's read-only /proc went with the undone root,
// so it does not stand in for the host view's. A fresh helper's command
// under the same policy is the reference: its report and what the probe
// sees are the same.
func TestSkeletonFallbackProtectsProc(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	links := t.TempDir()
	p := testPolicy(ws)
	long := "/" + strings.Repeat("x", 3000)
	for i := range policyRootOverflowLinks {
		l := filepath.Join(links, "l"+strings.Repeat("0", 3)+string(rune('a'+i%26))+strings.Repeat("y", i/26))
		if err := os.Symlink(long, l); err != nil {
			t.Fatal(err)
		}
		p.ReadableRoots = append(p.ReadableRoots, l)
	}
	warm := newTestBroker(t, Options{})
	defer warm.Close()
	warm.test.tracePhases = true
	warm.test.noPrime = true // the skeleton of a helper holding no policy
	cold := newTestBroker(t, Options{WarmHelperIdle: -1})
	defer cold.Close()
	cold.test.tracePhases = true
	runTraced(t, warm, p, nil, "true")
	waitPool(t, warm, defaultWarmHelpers)
	probe := []string{"sh", "-c", "(echo 5000 > /proc/sys/kernel/pid_max) 2>&1; cat /proc/sys/kernel/pid_max"}
	wantOut, _, fresh := runTraced(t, cold, p, nil, probe...)
	gotOut, _, prepared := runTraced(t, warm, p, nil, probe...)
	if !hadSkeleton(warm, prepared) || usedSkeleton(warm, prepared) || hadSkeleton(cold, fresh) {
		t.Fatalf("skeleton made: warm %v, cold %v, and used by warm %v; want true, false, false", hadSkeleton(warm, prepared), hadSkeleton(cold, fresh), usedSkeleton(warm, prepared))
	}
	if l, _ := fresh.Enforcement.Layer(sandbox.LayerPolicyRoot); l.Applied || !strings.Contains(l.Reason, "link") {
		t.Fatalf("the policy root did not fail on its links: %+v", l)
	}
	if !strings.Contains(wantOut, "Read-only file system") {
		t.Fatalf("a fresh helper's host view let the command write pid_max: %q", wantOut)
	}
	if gotOut != wantOut || !slices.Equal(prepared.Enforcement.Layers, fresh.Enforcement.Layers) {
		t.Fatalf("a prepared helper's fallback saw %q and reported\n%+v\na fresh one's %q and\n%+v", gotOut, prepared.Enforcement.Layers, wantOut, fresh.Enforcement.Layers)
	}
}
