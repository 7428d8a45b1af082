package tool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/search"
)

// rgRun is how a jailed ripgrep search went.
type rgRun struct {
	res      search.Result
	timedOut bool
	enf      *broker.Enforcement
	// fallback, when set, says why the Go engine should run instead.
	fallback string
	// denial is a budget refusal to report in band (no fallback: the
	// step's budget binds whichever engine runs).
	denial *broker.Denial
	err    error
}

// budgetDenial reports whether d refuses the step's budget rather than
// the jail or the policy.
func budgetDenial(d *broker.Denial) bool {
	switch d.Code {
	case broker.DenialOutstandingCapReached, broker.DenialStepAborted, broker.DenialBudgetExpired:
		return true
	}
	return false
}

// ripgrepPolicy composes what a jailed ripgrep needs: the search root (or
// the workspace, whose .gitignore files apply above it), rg's own
// directory and the system roots the session already reads, nothing
// writable, network off, GrepTimeout of wall time.
func ripgrepPolicy(c *Call, rg, root string, o search.Options) (broker.Policy, *broker.Denial) {
	readable := []string{root}
	if o.IgnoreRoot != "" {
		readable = []string{o.IgnoreRoot}
	}
	readable = append(readable, filepath.Dir(rg))
	have := slices.Concat(c.Base.ReadableRoots, c.Base.WritableRoots)
	for _, g := range c.Grants {
		if g.Kind == broker.GrantReadableRoot || g.Kind == broker.GrantWritableRoot {
			have = append(have, g.Path)
		}
	}
	for _, s := range broker.SystemReadableRoots() {
		if slices.ContainsFunc(have, func(h string) bool { return broker.Covers(h, s) }) {
			readable = append(readable, s)
		}
	}
	req := broker.Policy{ReadableRoots: readable, Network: broker.NetworkOff, WallMs: int(GrepTimeout / time.Millisecond)}
	return broker.Compose(c.Base, req, c.Grants)
}

// runRipgrep runs rg --json on root, jailed through the call's broker.
func runRipgrep(ctx context.Context, c *Call, rg, root string, o search.Options) rgRun {
	p, d := ripgrepPolicy(c, rg, root, o)
	if d != nil {
		return rgRun{fallback: "ripgrep cannot be jailed under this session's policy: " + d.Explain()}
	}
	dir := root
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		dir = filepath.Dir(root)
	}
	ex, d := c.Broker.Clear(ctx, broker.CallSpec{
		Key:     c.stepKey(),
		Argv:    append([]string{rg}, search.RipgrepArgs(root, o)...),
		Dir:     dir,
		Policy:  p,
		Budget:  broker.Budget{MaxOutstanding: MaxConcurrentSearches},
		Timeout: GrepTimeout,
	})
	if d != nil {
		if budgetDenial(d) {
			return rgRun{denial: d}
		}
		return rgRun{fallback: "ripgrep could not be started in the jail: " + d.Explain()}
	}
	enf := ex.Enforcement
	col := search.NewRipgrepCollector(o)
	var stderr []byte
	var parseErr error
	full, stopped := false, false
	for out := range ex.Output() {
		if out.Stream == broker.Stderr {
			stderr = append(stderr, out.Bytes...)
			if len(stderr) > grepStderrBytes {
				stderr = stderr[len(stderr)-grepStderrBytes:]
			}
			continue
		}
		if full || parseErr != nil {
			continue
		}
		if _, err := col.Write(out.Bytes); err != nil {
			if errors.Is(err, search.ErrScanFull) {
				full = true
			} else {
				parseErr = err
			}
			if !stopped {
				stopped = true
				ex.Cancel()
			}
		}
	}
	s := ex.Wait()
	r := rgRun{res: col.Result(), enf: &enf}
	errText := strings.TrimSpace(string(stderr))
	switch {
	case parseErr != nil:
		return rgRun{enf: &enf, fallback: "ripgrep's output could not be parsed: " + parseErr.Error()}
	case s.Failed != "":
		return rgRun{enf: &enf, fallback: "ripgrep could not run: " + s.Failed}
	case full:
		// Stopped by us at the collection limit; the result stands.
	case s.TimedOut:
		r.timedOut = true
	case s.Cancelled:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			r.timedOut = true
			break
		}
		return rgRun{enf: &enf, err: fmt.Errorf("the search was cancelled before it finished")}
	case s.ExitCode == 0 || s.ExitCode == 1:
	case s.ExitCode == 2 && r.res.Matches > 0:
		// Some files were unreadable; what was found stands.
	default:
		why := fmt.Sprintf("ripgrep exited with status %d", s.ExitCode)
		if s.Signal != "" {
			why = "ripgrep was killed by signal " + s.Signal
		}
		if errText != "" {
			why += ": " + errText
		}
		return rgRun{enf: &enf, fallback: why}
	}
	return r
}
