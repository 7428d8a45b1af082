package broker

import (
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
	"testing"
	"time"

	"github.com/agentloom/loom/internal/jailtest"
)

// escapeFlavourEnv, set to the name of one of the escape suite's
// flavours, says the test process is that flavour's own: TestEscapeSuite
// runs that flavour, and only it, there. Unset, TestEscapeSuite runs
// every flavour in a process of its own, all at once. A flavour that
// ran beside another in one process would share with it what is the
// process's: its heap and environment, which a serial case measures or
// changes while no other case runs, and the record of the commands every
// Broker of the process runs, through which a command of another policy
// taints a primed flavour's priming under way (its cases run one at a
// time for that).
const escapeFlavourEnv = "LOOM_TEST_ESCAPE_FLAVOUR"

// escapeShardEnv, set in a flavour's own process (escapeFlavourEnv) to
// "i/n", says the process runs the i-th (from 0) of n shards of the
// flavour's cases: those whose index in escapeCases is i modulo n.
const escapeShardEnv = "LOOM_TEST_ESCAPE_SHARD"

// flavourRun is one process of an escape flavour: the tests it runs
// (the escape suite, and for one flavour of the unprivileged re-run the
// tests it adds), the shard of the flavour's cases it runs, and what
// became of it.
type flavourRun struct {
	f             escapeFlavour
	shard, shards int
	tests         []string
	out           []byte
	err           error
}

// name is the run's subtest name: its flavour's, and its shard's.
func (r flavourRun) name() string {
	if r.shards <= 1 {
		return r.f.name
	}
	return fmt.Sprintf("%s-%dof%d", r.f.name, r.shard+1, r.shards)
}

// flavourRuns are the processes that run flavours fs: one for each
// shard of each.
func flavourRuns(fs []escapeFlavour) []flavourRun {
	var runs []flavourRun
	for _, f := range fs {
		n := max(f.shards, 1)
		for i := range n {
			runs = append(runs, flavourRun{f: f, shard: i, shards: n, tests: []string{"TestEscapeSuite"}})
		}
	}
	return runs
}

// escapeShard is the shard of its flavour's cases this process runs
// (escapeShardEnv): i of n, or 0 of 1 when unset.
func escapeShard(t *testing.T) (i, n int) {
	v := os.Getenv(escapeShardEnv)
	if v == "" {
		return 0, 1
	}
	if _, err := fmt.Sscanf(v, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		t.Fatalf("%s=%q is not a shard i/n", escapeShardEnv, v)
	}
	return i, n
}

// runEscapeFlavours starts, all at once, a process of this test binary
// for each of runs (each made by cmd, running its flavour as its own: its
// run pattern selects its tests and flavour, escapeFlavourEnv names the
// flavour, jailtest.HelperEnv the package's helper, and env is the rest
// of its environment), waits for them, and then, in a subtest named for
// each flavour, logs the case lines of its verbose output and how many
// of its primed cases had their priming retired (by the host, or by
// another process's commands), and fails unless every test it ran
// passed.
func runEscapeFlavours(t *testing.T, runs []flavourRun, cmd func() *exec.Cmd, env []string, helper string) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range runs {
		r := &runs[i]
		if !runSelects(r.name()) {
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
		if d, ok := t.Deadline(); ok {
			args = append(args, "-test.timeout", (time.Until(d) * 9 / 10).Round(time.Second).String())
		}
		c := cmd()
		c.Args = append(c.Args, args...)
		c.Env = append(slices.Clip(env), escapeFlavourEnv+"="+r.f.name, fmt.Sprintf("%s=%d/%d", escapeShardEnv, r.shard, max(r.shards, 1)), jailtest.HelperEnv+"="+helper)
		wg.Go(func() { r.out, r.err = c.CombinedOutput() })
	}
	wg.Wait()
	for _, r := range runs {
		t.Run(r.name(), func(t *testing.T) {
			if r.err != nil {
				t.Fatalf("the %s run failed: %v\n%s", r.name(), r.err, r.out)
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
					t.Fatalf("the %s run did not pass (no %q):\n%s", r.name(), strings.TrimSpace(w), r.out)
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
