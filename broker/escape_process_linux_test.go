package broker

import (
	"errors"
	"flag"
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

// flavourRun is one escape flavour's own process: the tests it runs
// (the escape suite, and for one flavour of the unprivileged re-run the
// tests it adds) and what became of it.
type flavourRun struct {
	f     escapeFlavour
	tests []string
	out   []byte
	err   error
}

// flavourRuns are the processes that run flavours fs, one each.
func flavourRuns(fs []escapeFlavour) []flavourRun {
	var runs []flavourRun
	for _, f := range fs {
		runs = append(runs, flavourRun{f: f, tests: []string{"TestEscapeSuite"}})
	}
	return runs
}

// escapeProcesses orders the processes of the escape flavours (of
// TestEscapeSuite and TestUnprivileged alike): those of unprimed
// flavours run together, and a primed flavour's runs alone, once none
// of the others is running. Two primed flavours' processes at once, or
// one beside an unprimed one, retire each other's primings (their cases
// bind and remove host sockets, which a priming under way in the other
// did not see or masked, for one), so a tenth to a fifth of the primed
// flavours' cases ran on helpers confined afresh; one alone ran none so. An unprimed process that comes while a
// primed one waits runs first.
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
// fails unless every test it ran passed.
func runEscapeFlavours(t *testing.T, runs []flavourRun, cmd func() *exec.Cmd, env []string, helper string) {
	t.Helper()
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
		wg.Go(func() {
			defer enterEscapeProcess(r.f.primed)()
			if d, ok := t.Deadline(); ok {
				args = append(args, "-test.timeout", (time.Until(d) * 9 / 10).Round(time.Second).String())
			}
			for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
				c := cmd()
				c.Args = append(c.Args, args...)
				c.Env = append(slices.Clip(env), escapeFlavourEnv+"="+r.f.name, jailtest.HelperEnv+"="+helper)
				r.out, r.err = c.CombinedOutput()
				if !errors.Is(r.err, syscall.ETXTBSY) || time.Since(start) > textBusyWait {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, r := range runs {
		t.Run(r.f.name, func(t *testing.T) {
			if r.err != nil {
				t.Fatalf("the %s run failed: %v\n%s", r.f.name, r.err, r.out)
			}
			retired, unprimed := 0, 0
			for _, line := range strings.Split(string(r.out), "\n") {
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
			if r.f.primed {
				t.Logf("re-validation retired the priming %d times; %d cases were never served by a primed helper", retired, unprimed)
			}
			want := []string{"--- PASS: TestEscapeSuite/" + r.f.name + " "}
			for _, name := range r.tests {
				want = append(want, "--- PASS: "+name+" ")
			}
			for _, w := range want {
				if !strings.Contains(string(r.out), w) {
					t.Fatalf("the %s run did not pass (no %q):\n%s", r.f.name, strings.TrimSpace(w), r.out)
				}
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
