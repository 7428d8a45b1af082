//go:build linux

package broker

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// raceExitSleep is the GORACE setting TestMain gives this test binary's
// children: a race-instrumented program sleeps atexit_sleep_ms (a
// second, by default) before every successful exit, so each probe run
// of this binary that succeeds (every escape control, for one) would
// cost a second of nothing.
const raceExitSleep = "atexit_sleep_ms=0"

// leftBehindGrace is how long TestMain waits, once every test ran, for
// the processes the tests started to end before it names those still
// alive as left behind.
const leftBehindGrace = 5 * time.Second

// parallelPerCPU is how many of the package's parallel tests run at
// once per CPU unless -test.parallel says otherwise: a jail test spends
// most of its time waiting for jailed processes (a timeout to pass, a
// helper to start), so go test's default of one per CPU left the CPUs
// mostly idle while the tests queued.
const parallelPerCPU = 4

// parallelAsked is the -test.parallel the command line gave, if any.
var parallelAsked string

// TestMain runs the package's tests as a child subreaper, so that a
// process a test orphans (a control's grandchild whose shell was
// killed, say) is reparented to this process rather than to init, and
// fails the run, naming them, when any descendant outlives the tests.
// It runs parallelPerCPU parallel tests per CPU at once unless
// -test.parallel is given. Run as an escape probe (probeEnv set), it is the probe instead.
func TestMain(m *testing.M) {
	if mode := os.Getenv(probeEnv); mode != "" {
		os.Exit(runProbe(mode, os.Getenv("ARG")))
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "broker tests: cannot become a child subreaper, so processes left behind would go unseen: %v\n", err)
		return 1
	}
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", raceExitSleep) // before any test runs
	}
	flag.Parse()
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			parallelAsked = f.Value.String()
		}
	})
	if parallelAsked == "" {
		flag.Set("test.parallel", strconv.Itoa(parallelPerCPU*runtime.GOMAXPROCS(0)))
	}
	code := m.Run()
	testHelperCleanup()
	if left := awaitLeftBehind(os.Getpid(), leftBehindGrace); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "broker tests left %d processes behind (killed now):\n", len(left))
		for _, p := range left {
			fmt.Fprintf(os.Stderr, "\tpid %d (parent %d): %s\n", p.pid, p.ppid, p.cmdline)
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
		return 1
	}
	return code
}

// liveProc is a process found in /proc.
type liveProc struct {
	pid, ppid int
	zombie    bool
	cmdline   string
}

// processes reads every process's parent, state and command line.
func processes() map[int]liveProc {
	ents, _ := os.ReadDir("/proc")
	out := make(map[int]liveProc, len(ents))
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(st[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmd, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		out[pid] = liveProc{pid: pid, ppid: ppid, zombie: f[0] == "Z", cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))}
	}
	return out
}

// leftBehind returns the live (not zombie) descendants of root, in pid
// order.
func leftBehind(root int) []liveProc {
	all := processes()
	children := map[int][]int{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var out []liveProc
	queue := slices.Clone(children[root])
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if p := all[pid]; !p.zombie {
			out = append(out, p)
		}
		queue = append(queue, children[pid]...)
	}
	slices.SortFunc(out, func(a, b liveProc) int { return a.pid - b.pid })
	return out
}

// awaitLeftBehind waits up to grace for root's descendants to end,
// reaping the zombies among its own children (none is waited for by
// anyone else once every test ran), and returns those still alive.
func awaitLeftBehind(root int, grace time.Duration) []liveProc {
	deadline := time.Now().Add(grace)
	for {
		for {
			var ws unix.WaitStatus
			if pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
		left := leftBehind(root)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLeftBehindCheckSeesAnOrphan is the control of TestMain's check: a
// sleep whose shell exits at once is orphaned, reparented to this
// process (a child subreaper, not init), and listed by leftBehind until
// it is killed and reaped.
func TestLeftBehindCheckSeesAnOrphan(t *testing.T) {
	t.Parallel()
	var reaper int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&reaper)), 0, 0, 0); err != nil || reaper != 1 {
		t.Fatalf("the test process is not a child subreaper (%v, %d): orphans would go to init unseen", err, reaper)
	}
	out, err := exec.Command("sh", "-c", "sleep 120 </dev/null >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the orphan's pid: %v (%q)", err, out)
	}
	listed := func() bool {
		return slices.ContainsFunc(leftBehind(os.Getpid()), func(p liveProc) bool { return p.pid == pid })
	}
	if !listed() {
		t.Fatalf("the orphaned sleep %d is not listed as left behind: %v", pid, leftBehind(os.Getpid()))
	}
	if p := processes()[pid]; p.ppid != os.Getpid() {
		t.Errorf("the orphaned sleep's parent is %d, want this process %d", p.ppid, os.Getpid())
	}
	syscall.Kill(pid, syscall.SIGKILL)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatalf("reaping the orphan: %v", err)
	}
	if listed() {
		t.Fatalf("sleep %d is listed after it was killed and reaped", pid)
	}
}
