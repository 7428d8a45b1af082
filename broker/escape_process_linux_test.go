package broker

import (
	"flag"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/jailtest"
)

// escapeFlavourEnv, set to the name of one of the escape suite's
// flavours, says the test process is that flavour's own: TestEscapeSuite
// runs the flavour there rather than in a process of its own.
const escapeFlavourEnv = "LOOM_TEST_ESCAPE_FLAVOUR"

// ownProcess says whether TestEscapeSuite runs flavour f in a process of
// its own: a primed flavour does, unless this process is f's own. A
// primed flavour's cases run one at a time, since a command of another
// policy started by any Broker of the process taints a priming under
// way; in a process of its own the flavour runs beside the others.
func ownProcess(f escapeFlavour) bool {
	return f.primed && os.Getenv(escapeFlavourEnv) != f.name
}

// runEscapeFlavour re-runs this test binary as cmd's credentials say,
// with its run pattern for tests whose subtest f it selects (the escape
// suite's flavour, and, in tests, the only other tests it runs), as f's
// own process, and fails t unless every test it ran passed. env is the
// process's environment, to which escapeFlavourEnv and the package's
// helper (jailtest.HelperEnv) are added; helper is that helper's path.
// The case lines of its verbose output are logged, and how many of its
// primed cases had their priming retired (by the host, or by another
// process's commands).
func runEscapeFlavour(t *testing.T, cmd *exec.Cmd, f escapeFlavour, tests []string, env []string, helper string) {
	t.Helper()
	args := []string{"-test.run", "^(" + strings.Join(tests, "|") + ")$/^" + regexp.QuoteMeta(f.name) + "$" + caseLevel(), "-test.v", "-test.count=1"}
	if s := flag.Lookup("test.skip"); s != nil && s.Value.String() != "" {
		args = append(args, "-test.skip", s.Value.String())
	}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout", (time.Until(d) * 9 / 10).Round(time.Second).String())
	}
	cmd.Args = append(cmd.Args, args...)
	cmd.Env = append(env, escapeFlavourEnv+"="+f.name, jailtest.HelperEnv+"="+helper)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the %s flavour's run failed: %v\n%s", f.name, err, out)
	}
	retired := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "sandbox:") || strings.HasPrefix(strings.TrimSpace(line), "--- ") {
			t.Log(strings.TrimSpace(line))
		}
		if strings.Contains(line, primingRetired) {
			retired++
		}
	}
	if f.primed {
		t.Logf("re-validation retired the priming of %d cases", retired)
	}
	for _, name := range tests {
		w := "--- PASS: " + name + " "
		if !strings.Contains(string(out), w) {
			t.Fatalf("the %s flavour's run did not pass (no %q):\n%s", f.name, strings.TrimSpace(w), out)
		}
	}
	if w := "--- PASS: TestEscapeSuite/" + f.name + " "; !strings.Contains(string(out), w) {
		t.Fatalf("the %s flavour's run did not pass (no %q):\n%s", f.name, strings.TrimSpace(w), out)
	}
}

// caseLevel is the part of this process's -test.run pattern past its
// flavour level ("/kill_host_pid" of "TestEscapeSuite/primed/kill_host_pid"),
// so a flavour's own process runs only the cases asked for; empty when
// there is none, or when the pattern's top level has alternatives.
func caseLevel() string {
	r := flag.Lookup("test.run")
	if r == nil {
		return ""
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
				return ""
			}
		case '/':
			if brackets == 0 && parens == 0 {
				levels = append(levels, s[:i])
				s, i = s[i+1:], -1
			}
		}
	}
	levels = append(levels, s)
	if len(levels) < 3 {
		return ""
	}
	return "/" + strings.Join(levels[2:], "/")
}
