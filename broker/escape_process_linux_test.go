package broker

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/jailtest"
	"golang.org/x/sys/unix"
)

// escapeFlavourEnv, set to the name of one of the escape suite's
// flavours, says the test process is that flavour's own: TestEscapeSuite
// runs that flavour, and only it, there. Unset, TestEscapeSuite runs
// every flavour in a process of its own, all at once (primed ones one
// after the other: escapeProcesses). A flavour that ran beside another in
// one process would share with it what is the process's: its heap and
// environment, which a serial case measures or changes while no other
// case runs, and the record of the commands every Broker of the process
// runs, through which a command of another policy taints a primed
// flavour's priming under way (its cases run one at a time for that).
const escapeFlavourEnv = "LOOM_TEST_ESCAPE_FLAVOUR"

// escapeShardEnv, set to "i/n" in a flavour's own process, says the
// process runs the i-th of n shards of its flavour's cases (inShard):
// a primed flavour runs its cases one at a time, so its cases are split
// among primedShards processes, each with its own brokers, pool and
// record of the commands running (primeLedger), which run side by side.
const escapeShardEnv = "LOOM_TEST_ESCAPE_SHARD"

// primedShards is how many processes a primed flavour's cases are split
// among when the processes run in network namespaces of their own
// (ownNetwork): each runs a third of the cases, one at a time.
const primedShards = 3

// flavourRun is one escape flavour's own processes: the tests they run
// (the escape suite, and for one flavour of the unprivileged re-run the
// tests it adds) and what became of each shard.
type flavourRun struct {
	f      escapeFlavour
	tests  []string
	shards []shardRun
}

// shardRun is what became of one of a flavour's processes.
type shardRun struct {
	out []byte
	err error
}

// flavourRuns are the processes that run flavours fs, one each.
func flavourRuns(fs []escapeFlavour) []flavourRun {
	var runs []flavourRun
	for _, f := range fs {
		runs = append(runs, flavourRun{f: f, tests: []string{"TestEscapeSuite"}})
	}
	return runs
}

// inShard says whether the escape suite's k-th case is run by this
// flavour process's shard (escapeShardEnv; every case when unset).
func inShard(k int, shard string) bool {
	var i, n int
	if _, err := fmt.Sscanf(shard, "%d/%d", &i, &n); err != nil || n <= 0 {
		return true
	}
	return k%n == i
}

// escapeProcesses orders the processes of the escape flavours (of
// TestEscapeSuite and TestUnprivileged alike) that share this process's
// network namespace (ownNetwork cannot give them one each): those of
// unprimed flavours run together, and a primed flavour's runs alone,
// once none of the others is running. Two primed flavours' processes at
// once, or one beside an unprimed one, in one network namespace retire
// each other's primings (their cases bind and remove host sockets, which
// a priming under way in the other did not see or masked, for one), so
// a tenth to a fifth of the primed flavours' cases ran on helpers
// confined afresh; one alone ran none so. An unprimed process that comes
// while a primed one waits runs first. Processes in network namespaces
// of their own run all at once.
var escapeProcesses struct {
	mu       sync.Mutex
	changed  *sync.Cond
	unprimed int  // running
	primed   bool // one is running
}

// enterEscapeProcess waits until a process of a flavour primed or not
// may run (see escapeProcesses) and returns what to call once it ended.
func enterEscapeProcess(primed bool) (leave func()) {
	p := &escapeProcesses
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed == nil {
		p.changed = sync.NewCond(&p.mu)
	}
	for p.primed || primed && p.unprimed > 0 {
		p.changed.Wait()
	}
	if primed {
		p.primed = true
	} else {
		p.unprimed++
	}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if primed {
			p.primed = false
		} else {
			p.unprimed--
		}
		p.changed.Broadcast()
	}
}

// textBusyWait bounds how long a flavour's process is started again
// while the kernel refuses to run its binary as busy: a copy of the test
// binary just written (TestUnprivileged) is, until every child another
// goroutine forked meanwhile, holding its write descriptor, has exec'd.
const textBusyWait = 30 * time.Second

// runEscapeFlavours starts, as escapeProcesses lets it, a process of
// this test binary for each of runs (each made by cmd, running its
// flavour as its own: its run pattern selects its tests and flavour,
// escapeFlavourEnv names the flavour, jailtest.HelperEnv the package's
// helper, and env is the rest of its environment), waits for them, and
// then, in a subtest named for each flavour, logs the case lines of its
// verbose output and how often re-validation retired a priming, and
// fails unless every test it ran passed. As root, each process runs in a
// network namespace of its own (ownNetwork), and they all run at once.
func runEscapeFlavours(t *testing.T, runs []flavourRun, cmd func() *exec.Cmd, env []string, helper string) {
	t.Helper()
	// As root, each flavour's process runs in a network namespace of
	// its own, so the host sockets one flavour's cases bind are not in
	// another's unix socket table: none masks, or is retired for, the
	// others' sockets, and primed flavours run beside the rest.
	isolated := os.Geteuid() == 0
	var wg sync.WaitGroup
	for i := range runs {
		r := &runs[i]
		if !runSelects(r.f.name) {
			continue // its subtest will not run
		}
		args := []string{"-test.run", "^(" + strings.Join(r.tests, "|") + ")$/^" + regexp.QuoteMeta(r.f.name) + "$" + caseLevel(), "-test.v", "-test.count=1"}
		// The flavours' processes run beside one another, so each runs
		// as many parallel cases as go test's default gives one, or as
		// -test.parallel asked for.
		parallel := parallelAsked
		if parallel == "" {
			parallel = strconv.Itoa(runtime.GOMAXPROCS(0))
		}
		args = append(args, "-test.parallel", parallel)
		if s := flag.Lookup("test.skip"); s != nil && s.Value.String() != "" {
			args = append(args, "-test.skip", s.Value.String())
		}
		shards := 1
		if isolated && r.f.primed {
			shards = primedShards
		}
		r.shards = make([]shardRun, shards)
		for i := range r.shards {
			sr := &r.shards[i]
			tests := args
			if i > 0 {
				// The tests a run adds run in its first shard only.
				tests = slices.Clone(args)
				tests[1] = "^TestEscapeSuite$/^" + regexp.QuoteMeta(r.f.name) + "$" + caseLevel()
			}
			wg.Go(func() {
				defer enterEscapeProcess(r.f.primed && !isolated)()
				if d, ok := t.Deadline(); ok {
					tests = append(slices.Clip(tests), "-test.timeout", (time.Until(d) * 9 / 10).Round(time.Second).String())
				}
				for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
					c := cmd()
					c.Args = append(c.Args, tests...)
					c.Env = append(slices.Clip(env), escapeFlavourEnv+"="+r.f.name, jailtest.HelperEnv+"="+helper,
						escapeShardEnv+"="+strconv.Itoa(i)+"/"+strconv.Itoa(shards))
					var out bytes.Buffer
					c.Stdout, c.Stderr = &out, &out
					if isolated {
						sr.err = ownNetwork(c.Start)
					} else {
						sr.err = c.Start()
					}
					if sr.err == nil {
						sr.err = c.Wait()
					}
					sr.out = out.Bytes()
					if !errors.Is(sr.err, syscall.ETXTBSY) || time.Since(start) > textBusyWait {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for _, r := range runs {
		if len(r.shards) == 0 {
			continue
		}
		t.Run(r.f.name, func(t *testing.T) {
			retired, unprimed := 0, 0
			for i, sr := range r.shards {
				if sr.err != nil {
					t.Fatalf("the %s run (shard %d of %d) failed: %v\n%s", r.f.name, i, len(r.shards), sr.err, sr.out)
				}
				for _, line := range strings.Split(string(sr.out), "\n") {
					if strings.Contains(line, "sandbox:") || strings.HasPrefix(strings.TrimSpace(line), "--- ") {
						t.Log(strings.TrimSpace(line))
					}
					if strings.Contains(line, primingRetired) {
						if strings.Contains(line, "no primed helper served") {
							unprimed++
						} else {
							retired++
						}
					}
				}
				want := []string{"--- PASS: TestEscapeSuite/" + r.f.name + " "}
				if i == 0 {
					for _, name := range r.tests {
						want = append(want, "--- PASS: "+name+" ")
					}
				}
				for _, w := range want {
					if !strings.Contains(string(sr.out), w) {
						t.Fatalf("the %s run (shard %d of %d) did not pass (no %q):\n%s", r.f.name, i, len(r.shards), strings.TrimSpace(w), sr.out)
					}
				}
			}
			if r.f.primed {
				t.Logf("re-validation retired the priming %d times; %d cases were never served by a primed helper", retired, unprimed)
			}
		})
	}
}

// caseLevel is the part of this process's -test.run pattern past its
// flavour level ("/kill_host_pid" of "TestEscapeSuite/primed/kill_host_pid"),
// so a flavour's own process runs only the cases asked for; empty when
// there is none, or when the pattern's top level has alternatives.
func caseLevel() string {
	if l := runLevels(); len(l) > 2 {
		return "/" + strings.Join(l[2:], "/")
	}
	return ""
}

// runSelects says whether this process's -test.run pattern may select a
// subtest named name of the test running: false only when the pattern's
// second level is a regular expression that does not match name.
func runSelects(name string) bool {
	l := runLevels()
	if len(l) < 2 {
		return true
	}
	re, err := regexp.Compile(l[1])
	return err != nil || re.MatchString(name)
}

// runLevels splits this process's -test.run pattern into its levels, at
// each slash outside brackets and parentheses, as go test does; nil
// when the pattern is empty or its top level has alternatives.
func runLevels() []string {
	r := flag.Lookup("test.run")
	if r == nil || r.Value.String() == "" {
		return nil
	}
	s := r.Value.String()
	var levels []string
	brackets, parens := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			brackets++
		case ']':
			brackets = max(brackets-1, 0)
		case '(':
			if brackets == 0 {
				parens++
			}
		case ')':
			if brackets == 0 {
				parens--
			}
		case '\\':
			i++
		case '|':
			if brackets == 0 && parens == 0 {
				return nil
			}
		case '/':
			if brackets == 0 && parens == 0 {
				levels = append(levels, s[:i])
				s, i = s[i+1:], -1
			}
		}
	}
	return append(levels, s)
}

// ownNetwork calls start (an exec.Cmd's Start) on a thread moved into a
// network namespace made for it, whose loopback is up, so the process
// it starts lives there: its unix socket table, which the broker reads
// for the host sockets to mask, lists only the sockets bound in that
// namespace. A pathname socket is still reached through the file system
// from any namespace, as the jail's masks assume. The thread then moves
// back to this process's namespace and returns to the runtime: it must
// not end, since a helper some test started from it before dies with it
// (a helper's parent-death signal follows the thread that forked it);
// when it cannot move back, it stays locked and parked. It needs
// CAP_SYS_ADMIN and CAP_NET_ADMIN (root).
func ownNetwork(start func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		host, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("this thread's network namespace: %w", err)
			return
		}
		defer host.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("a network namespace for an escape flavour's process: %w", err)
			return
		}
		if err = loopbackUp(); err != nil {
			err = fmt.Errorf("the loopback of an escape flavour's network namespace: %w", err)
		} else {
			err = start()
		}
		if back := unix.Setns(int(host.Fd()), unix.CLONE_NEWNET); back != nil {
			errc <- errors.Join(err, fmt.Errorf("moving back to the host's network namespace: %w", back))
			select {} // parked for good: neither ended nor handed back in another namespace
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// loopbackUp brings up the loopback of the calling thread's network
// namespace (a new one has it down, with no address).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// TestInShardPartitions checks that the shards of a flavour split its
// cases between them: every case is run by exactly one of n shards, and
// by the one process of an unsharded flavour.
func TestInShardPartitions(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 4; n++ {
		for k := range 50 {
			runs := 0
			for i := range n {
				if inShard(k, strconv.Itoa(i)+"/"+strconv.Itoa(n)) {
					runs++
				}
			}
			if runs != 1 {
				t.Errorf("case %d is run by %d of %d shards, want 1", k, runs, n)
			}
		}
	}
	for _, unset := range []string{"", "x", "1/0"} {
		if !inShard(7, unset) {
			t.Errorf("inShard(7, %q) = false: a process with no shard must run every case", unset)
		}
	}
}
