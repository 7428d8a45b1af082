package broker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/sandbox"
	"golang.org/x/sys/unix"
)

// cgroup2Mount returns where this process's cgroup v2 hierarchy is
// mounted (the first cgroup2 mount in mountinfo), or why there is none.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "id parent maj:min root mountpoint opts ... - fstype source ..."
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if fields := strings.Fields(pre); len(fields) >= 5 {
			return jail.UnescapeMountinfo(fields[4]), nil
		}
	}
	return "", errors.New("no cgroup2 filesystem is mounted")
}

// ownCgroup2 is this process's cgroup in the v2 hierarchy ("0::<path>").
func ownCgroup2() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 line in /proc/self/cgroup")
}

// testCgroupParent makes a cgroup directory for the test beneath this
// process's own cgroup v2 (the host's delegation, in miniature) and
// removes it at the end. It fails the test, saying exactly why, when the
// machine offers none.
func testCgroupParent(t *testing.T) string {
	return testCgroupParentB(t)
}

func testCgroupParentB(t testing.TB) string {
	t.Helper()
	mnt, err := cgroup2Mount()
	if err != nil {
		t.Fatalf("this test needs a cgroup v2 hierarchy: %v", err)
	}
	own, err := ownCgroup2()
	if err != nil {
		t.Fatalf("this test needs a cgroup v2 hierarchy: %v", err)
	}
	dir := filepath.Join(mnt, own, fmt.Sprintf("loom-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("cannot make a test cgroup beneath this process's own (%s): %v; run as a user the cgroup is delegated to", filepath.Join(mnt, own), err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("the test cgroup %s is not empty at the end: %v", dir, err)
		}
	})
	return dir
}

// children lists the child cgroups of dir.
func children(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCgroupParent: with Options.CgroupParent, the command runs in a
// child cgroup of its own beneath it (as the command itself sees in
// /proc/self/cgroup), the report's cgroup layer says what was bounded
// (memory.max and pids.max where the parent offers those controllers,
// otherwise skipped, naming what is missing), and the child is gone once
// the execution settled.
func TestCgroupParent(t *testing.T) {
	parent := testCgroupParent(t)
	mnt, _ := cgroup2Mount()
	for _, tc := range []struct {
		name     string
		idle     time.Duration
		launched bool
	}{{"cold", -1, false}, {"cold-launched", -1, true}, {"warm", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBroker(t, Options{CgroupParent: parent, WarmHelperIdle: tc.idle})
			if tc.launched {
				b.test.launchAboveRSS = -1
			}
			p := testPolicy(t.TempDir())
			p.Limits.Processes = 77
			if tc.idle == 0 {
				run(t, b, p, 10*time.Second, "true")
				waitWarm(t, b)
			}
			r := run(t, b, p, 10*time.Second, "cat", "/proc/self/cgroup")
			var inside string
			for _, l := range strings.Split(r.stdout, "\n") {
				if c, ok := strings.CutPrefix(l, "0::"); ok {
					inside = filepath.Join(mnt, c)
				}
			}
			if filepath.Dir(inside) != parent || !strings.HasPrefix(filepath.Base(inside), cgroupChildPrefix) {
				t.Fatalf("the command ran in cgroup %q, want a %s* child of %s (stdout %q)", inside, cgroupChildPrefix, parent, r.stdout)
			}
			if _, err := os.Stat(inside); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the command's cgroup %s outlived its execution (%v)", inside, err)
			}
			l, ok := r.enf.Layer(sandbox.LayerCgroup)
			if !ok {
				t.Fatalf("no cgroup layer in %+v", r.enf)
			}
			offered := strings.Fields(readFileString(filepath.Join(parent, "cgroup.controllers")))
			switch {
			case slices.Contains(offered, "pids"):
				if !l.Applied || !strings.Contains(l.Params, "pids.max=77") {
					t.Fatalf("pids offered, but the layer says %+v", l)
				}
			case slices.Contains(offered, "memory"):
				if !l.Applied || !strings.Contains(l.Params, "memory.max=") {
					t.Fatalf("memory offered, but the layer says %+v", l)
				}
			default:
				// This host: the memory and pids controllers are bound to
				// cgroup v1 hierarchies (see /proc/cgroups), so v2 cannot
				// offer them; the report must not claim a bound.
				if l.Applied || !strings.Contains(l.Reason, "memory not offered") || !strings.Contains(l.Reason, "pids not offered") {
					t.Fatalf("no controller offered (%v), but the layer says %+v", offered, l)
				}
				t.Logf("no memory or pids controller in cgroup v2 here; the layer is honestly skipped: %s", l.Reason)
			}
			b.Close()
			if tc.idle == 0 {
				// The warm helper Close discarded leaves with its cgroup.
				deadline := time.Now().Add(10 * time.Second)
				for len(children(t, parent)) > 0 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
			}
			if left := children(t, parent); len(left) > 0 {
				t.Fatalf("child cgroups left behind: %v", left)
			}
		})
	}
}

func readFileString(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// TestCgroupParentUnusable: a CgroupParent that is not a cgroup v2
// directory never makes a command fail; its report skips the cgroup
// layer, saying why, and is degraded.
func TestCgroupParentUnusable(t *testing.T) {
	t.Parallel()
	for _, parent := range []string{t.TempDir(), "relative/cgroup", "/nonexistent/loom"} {
		b := newTestBroker(t, Options{CgroupParent: parent, WarmHelperIdle: -1})
		r := run(t, b, testPolicy(t.TempDir()), 10*time.Second, "echo", "ran")
		l, ok := r.enf.Layer(sandbox.LayerCgroup)
		if r.stdout != "ran\n" || !ok || l.Applied || l.Reason == "" || !r.enf.Degraded {
			t.Fatalf("parent %q: stdout %q, cgroup layer %+v (present %v), degraded %v", parent, r.stdout, l, ok, r.enf.Degraded)
		}
		b.Close()
	}
}

// TestNoCgroupLayerWithoutParent: without CgroupParent the report has no
// cgroup line at all (nothing was asked, nothing is claimed).
func TestNoCgroupLayerWithoutParent(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, Options{WarmHelperIdle: -1})
	defer b.Close()
	r := run(t, b, testPolicy(t.TempDir()), 10*time.Second, "true")
	if _, ok := r.enf.Layer(sandbox.LayerCgroup); ok {
		t.Fatalf("a cgroup layer without CgroupParent: %+v", r.enf)
	}
}

// BenchmarkCgroupTrue measures what the cgroup layer adds to a cold
// jailed `true` (a child cgroup made, the helper cloned into it, limits
// written, the cgroup killed, drained and removed): the two brokers run
// interleaved, one command each per iteration, and each reports its
// median; cgroup-delta-ms is the difference of the medians.
func BenchmarkCgroupTrue(b *testing.B) {
	parent := testCgroupParentB(b)
	helper := jailtest.HostHelper(b)
	plain := New(Options{HelperPath: helper, WarmHelperIdle: -1})
	withCg := New(Options{HelperPath: helper, WarmHelperIdle: -1, CgroupParent: parent})
	defer plain.Close()
	defer withCg.Close()
	p := testPolicy(b.TempDir())
	runTrue := func(br *Broker) time.Duration {
		start := time.Now()
		ex, d := br.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"true"}, Policy: p,
			Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 1}})
		if d != nil {
			b.Fatal(d)
		}
		for range ex.Output() {
		}
		if s := ex.Wait(); s.ExitCode != 0 {
			b.Fatalf("settled %+v", s)
		}
		return time.Since(start)
	}
	runTrue(plain) // probes, untimed
	runTrue(withCg)
	var a, c []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a = append(a, runTrue(plain))
		c = append(c, runTrue(withCg))
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	b.ReportMetric(med(a), "plain-median-ms")
	b.ReportMetric(med(c), "cgroup-median-ms")
	b.ReportMetric(med(c)-med(a), "cgroup-delta-ms")
}

// TestCgroupKillsEscapedProcesses: where the jail has no pid namespace
// (forced here as if the host refused user namespaces), a process that
// left the command's process group (setsid) outlives the command; in a
// delegated cgroup it is killed with the cgroup before the execution
// settles. The control, without CgroupParent, shows it survives.
func TestCgroupKillsEscapedProcesses(t *testing.T) {
	parent := testCgroupParent(t)
	for _, withCgroup := range []bool{false, true} {
		t.Run(fmt.Sprint("cgroup=", withCgroup), func(t *testing.T) {
			opts := Options{WarmHelperIdle: -1}
			if withCgroup {
				opts.CgroupParent = parent
			}
			b := newTestBroker(t, opts)
			defer b.Close()
			b.probed()
			b.probe.usernsErr = unix.EPERM // no namespaces: no pid namespace to take the tree down
			marker := fmt.Sprintf("loom-escapee-%d-%d", os.Getpid(), time.Now().UnixNano())
			defer killWithArg(marker)
			// The escapee says it runs (its argv already carries the
			// marker) before the command exits.
			script := `setsid sh -c 'touch ready; while :; do sleep 1; done' ` + marker + ` </dev/null >/dev/null 2>&1 &
until [ -e ready ]; do :; done; echo started`
			r := run(t, b, testPolicy(t.TempDir()), 10*time.Second, "sh", "-c", script)
			if r.stdout != "started\n" || r.enf.Applied(sandbox.LayerNamespaces) {
				t.Fatalf("stdout %q, report %s", r.stdout, r.enf)
			}
			alive := killWithArg(marker)
			if withCgroup && alive {
				t.Fatalf("a process that left the command's group outlived its execution in a cgroup")
			}
			if !withCgroup && !alive {
				t.Fatalf("control: the setsid process did not survive without a cgroup, so the test shows nothing")
			}
		})
	}
}

// killWithArg kills every live process with arg as a whole argument and
// reports whether there was one.
func killWithArg(arg string) bool {
	ents, _ := os.ReadDir("/proc")
	found := false
	for _, ent := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), arg) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
			continue
		}
		var pid int
		fmt.Sscan(ent.Name(), &pid)
		unix.Kill(pid, unix.SIGKILL)
		found = true
	}
	return found
}
