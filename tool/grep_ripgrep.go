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

// rgRun is how a jailed ripgrep search went. Whatever happened, enf is
// the report of the jail it ran in (nil when none was started).
type rgRun struct {
	res      search.Result
	timedOut bool
	// warnings is ripgrep's stderr when it searched to the end but
	// could not read some entries.
	warnings string
	enf      *broker.Enforcement
	// denial is the broker's refusal, reported in band with its code.
	denial *broker.Denial
	// outputLimited: the broker stopped rg at MaxRipgrepOutputBytes.
	outputLimited bool
	// err is a failure after the jail started; cancelled marks the
	// caller's cancellation.
	err       error
	cancelled bool
}

// ripgrepPolicy composes what a jailed ripgrep needs: the search root (or
// the workspace, whose .gitignore files apply above it) readable; rg's
// own directory and the system roots the session's base already covers
// as jail-only system roots; nothing writable, network off, GrepTimeout
// of wall time. A denial means the session's policy cannot jail ripgrep
// for this root; it depends on the host's configuration and the
// authorized root only.
func ripgrepPolicy(c *Call, rg, root string, o search.Options) (broker.Policy, *broker.Denial) {
	readable := []string{root}
	if o.IgnoreRoot != "" {
		readable = []string{o.IgnoreRoot}
	}
	cover := slices.Concat(c.Base.SystemRoots, c.Base.ReadableRoots, c.Base.WritableRoots)
	for _, g := range c.Grants {
		if g.Kind == broker.GrantReadableRoot || g.Kind == broker.GrantWritableRoot {
			cover = append(cover, g.Path)
		}
	}
	system := []string{filepath.Dir(rg)}
	for _, s := range broker.SystemReadableRoots() {
		if slices.ContainsFunc(cover, func(h string) bool { return broker.Covers(h, s) }) {
			system = append(system, s)
		}
	}
	req := broker.Policy{
		ReadableRoots: readable,
		SystemRoots:   system,
		Network:       broker.NetworkOff,
		WallMs:        int(GrepTimeout / time.Millisecond),
	}
	return broker.Compose(c.Base, req, c.Grants)
}

// runRipgrep runs rg --json on root under p, jailed through the call's
// broker.
func runRipgrep(ctx context.Context, c *Call, rg, root string, p broker.Policy, o search.Options) rgRun {
	dir := root
	if fi, err := os.Lstat(root); err == nil && !fi.IsDir() {
		dir = filepath.Dir(root)
	}
	ex, d := c.Broker.Clear(ctx, broker.CallSpec{
		Key:     c.stepKey(),
		Argv:    append([]string{rg}, search.RipgrepArgs(root, o)...),
		Dir:     dir,
		Policy:  p,
		Budget:  broker.Budget{MaxOutstanding: MaxConcurrentSearches},
		Timeout: GrepTimeout,

		MaxOutputBytes: MaxRipgrepOutputBytes,
	})
	if d != nil {
		return rgRun{denial: d}
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
	errText := strings.ToValidUTF8(strings.TrimSpace(string(stderr)), "\uFFFD")
	fail := func(why string) rgRun {
		if errText != "" {
			why += ": " + errText
		}
		return rgRun{enf: &enf, err: errors.New(why)}
	}
	switch {
	case parseErr != nil:
		return fail("ripgrep's output could not be parsed (" + parseErr.Error() + ")")
	case s.Failed != "":
		return fail("ripgrep could not run in its jail: " + s.Failed)
	case full:
		// Stopped by us at the collection limit; the result stands.
	case s.OutputLimited:
		// Stopped by the broker at the output bound; what was read stands.
		r.outputLimited = true
	case s.TimedOut:
		r.timedOut = true
	case s.Cancelled:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			r.timedOut = true
			break
		}
		return rgRun{enf: &enf, err: errors.New("the search was cancelled before it finished"), cancelled: true}
	case s.ExitCode == 0 || s.ExitCode == 1:
	case s.ExitCode == 2 && col.Completed():
		// ripgrep searched to the end but could not read some entries:
		// what it found stands, and what it said is kept.
		r.warnings = errText
	case s.Signal != "":
		return fail("ripgrep was killed by signal " + s.Signal)
	default:
		return fail(fmt.Sprintf("ripgrep exited with status %d before searching", s.ExitCode))
	}
	return r
}
