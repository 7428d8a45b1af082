package broker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
)

// A tool asks for more than the session gives; the denial's Wanted is
// exactly what an operator may approve, and composing again with it
// succeeds.
func ExampleCompose() {
	base := sandbox.Policy{
		ReadableRoots: []string{"/usr"},
		WritableRoots: []string{"/home/me/project"},
		Protected:     []string{"/home/me/project/.git/hooks"},
	}
	req := sandbox.Policy{
		ReadableRoots: []string{"/usr", "/srv/data"},
		WritableRoots: []string{"/home/me/project"},
		Network:       sandbox.NetworkFull,
	}
	_, err := sandbox.Compose(base, req, nil)
	var d *sandbox.Denial
	if !errors.As(err, &d) {
		fmt.Println("not refused:", err)
		return
	}
	fmt.Println(d.Code)
	fmt.Println(d.Wanted)

	p, err := sandbox.Compose(base, req, d.Wanted)
	fmt.Println(err == nil, p.ReadableRoots, p.WritableRoots, p.Network, p.Protected)
	// Output:
	// requirements_not_covered
	// [readable_root /srv/data network]
	// true [/srv/data /usr] [/home/me/project] full [/home/me/project/.git/hooks]
}

// Two calls of one batch share the step's pool; the third is refused in
// band until one is released.
func ExampleLedger() {
	l := sandbox.NewLedger(nil)
	key := sandbox.StepKey{OpID: "run-1", StepID: "step-3"}
	b := sandbox.Budget{MaxOutstanding: 2, Wall: time.Minute}
	t1, _ := l.Admit(key, b, nil)
	_, _ = l.Admit(key, b, nil)
	_, err := l.Admit(key, b, nil)
	var d *sandbox.Denial
	if errors.As(err, &d) {
		fmt.Println(d.Code)
	}
	l.Release(t1)
	_, err = l.Admit(key, b, nil)
	fmt.Println(err == nil, l.Outstanding(key))
	// Output:
	// outstanding_cap_reached
	// true 2
}

func ExampleCovers() {
	fmt.Println(sandbox.Covers("/w/.git", "/w/.git/hooks/pre-commit"))
	fmt.Println(sandbox.Covers("/w/.git", "/w/.gitx"))
	// Output:
	// true
	// false
}

func ExampleDefaultProtected() {
	for _, p := range broker.DefaultProtected("/nonexistent/ws") {
		fmt.Println(p)
	}
	// Output:
	// /nonexistent/ws/.git/config
	// /nonexistent/ws/.git/hooks
}
