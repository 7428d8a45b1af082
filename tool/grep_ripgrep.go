package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentloom/loom/internal/search"
	"github.com/agentloom/loom/sandbox"
)

// rgRun is how a jailed ripgrep search went. Whatever happened, enf is
// the report of the jail it ran in (nil when none was started).
type rgRun struct {
	res      search.Result
	timedOut bool
	// warnings is ripgrep's stderr when it searched to the end but
	// could not read some entries.
	warnings string
	enf      *sandbox.Enforcement
	// denial is the broker's refusal, reported in band with its code.
	denial *sandbox.Denial
	// outputLimited: the broker stopped rg at maxRipgrepOutputBytes.
	outputLimited bool
	// err is a failure after the jail started; cancelled marks the
	// caller's cancellation.
	err       error
	cancelled bool
}

// The ripgrep engine never hands ripgrep a path it would follow: ripgrep
// follows a link given as its argument, and a jailed command running at
// the same time can swap one in at the search root (or an ancestor)
// between the harness's resolution and ripgrep's start. So a directory
// root is entered by pinShell running pinScript, which checks the
// directory it entered before ripgrep starts in it on "." (no -L), and a
// file root is opened by the harness without following links (openRegular)
// and fed to ripgrep as its standard input. Either way ripgrep searches
// what the harness resolved or nothing: a swapped root is refused in band
// with CodePathChanged.

// pinShell is the shell that enters a directory root for ripgrep; its
// directory is one of the jail's system roots.
const pinShell = "/bin/sh"

// Exit statuses of pinScript, distinct from ripgrep's (0, 1, 2) and the
// shell's own (126, 127, 128 and above for signals).
const (
	// pinEnterStatus: the shell could not enter the search root.
	pinEnterStatus = 96
	// pinChangedStatus: the directory the shell entered is not the
	// resolved root: a link was swapped in at it or an ancestor.
	pinChangedStatus = 97
)

// pinScript is what pinShell runs: sh -c pinScript sh ROOT RG ARGS... .
// cd -P enters ROOT following whatever links now lead there, and sets
// PWD to the physical path of the directory it entered (the kernel's
// getcwd, as POSIX requires of -P); only when that is ROOT itself, so no
// link led elsewhere, does it exec ripgrep, whose working directory is
// that pinned directory: a swap after the check cannot move it.
var pinScript = fmt.Sprintf(`cd -P -- "$1" || exit %d; [ "$PWD" = "$1" ] || exit %d; shift; exec "$@"`, pinEnterStatus, pinChangedStatus)

// pinShellPath returns pinShell resolved (its real program), or an error
// when the host has none.
func pinShellPath() (string, error) {
	return filepath.EvalSymlinks(pinShell)
}

// ripgrepPolicy composes what a jailed ripgrep needs: the search root (or
// the workspace, whose .gitignore files apply above it) readable; rg's
// own directory, pinShell's and the system roots the session's base
// already covers, less grepJailOmits, as jail-only system roots; nothing
// writable, network off, grepTimeout of wall time. A denial means the session's policy
// cannot jail ripgrep for this root; it depends on the host's
// configuration and the authorized root only.
func ripgrepPolicy(c *Call, rg, root string, o search.Options) (sandbox.Policy, *sandbox.Denial) {
	sh, err := pinShellPath()
	if err != nil {
		return sandbox.Policy{}, sandbox.NewDenial(sandbox.DenialJailFailed, "no shell at "+pinShell+" to enter ripgrep's search root before it starts", err)
	}
	readable := []string{root}
	if o.IgnoreRoot != "" {
		readable = []string{o.IgnoreRoot}
	}
	cover := slices.Concat(c.Base.SystemRoots, c.Base.ReadableRoots, c.Base.WritableRoots)
	for _, g := range c.Grants {
		if g.Kind == sandbox.GrantReadableRoot || g.Kind == sandbox.GrantWritableRoot {
			cover = append(cover, g.Path)
		}
	}
	system := []string{filepath.Dir(rg)}
	if d := filepath.Dir(sh); d != system[0] {
		system = append(system, d)
	}
	for _, s := range sandbox.SystemReadableRoots() {
		if slices.Contains(grepJailOmits, s) {
			continue
		}
		if slices.ContainsFunc(cover, func(h string) bool { return sandbox.Covers(h, s) }) {
			system = append(system, s)
		}
	}
	req := sandbox.Policy{
		ReadableRoots: readable,
		SystemRoots:   system,
		Network:       sandbox.NetworkOff,
		WallMs:        int(grepTimeout / time.Millisecond),
	}
	pol, err := sandbox.Compose(c.Base, req, c.Grants)
	return pol, sandbox.DenialOf(err)
}

// grepJailOmits are the system roots ripgrep's jail does without:
// configuration and vendor installs, which neither ripgrep nor pinShell
// reads to run (the dynamic loader finds their libraries without
// /etc/ld.so.cache), and which hold what a link swapped in during
// ripgrep's walk would otherwise reach.
var grepJailOmits = []string{"/etc", "/opt"}

// failCode is the outcome code of a run that failed (r.err set).
func (r rgRun) failCode() Code {
	switch {
	case r.cancelled:
		return CodeCancelled
	case errors.Is(r.err, errPathChanged):
		return CodePathChanged
	}
	return CodeSearchFailed
}

// rootChanged is the failure of a search whose root is not what was
// resolved any more.
func rootChanged(root string) error {
	return fmt.Errorf("%w; nothing was searched. Something (a running command?) replaced part of the path just now; try again once it settles",
		&fs.PathError{Op: "search", Path: root, Err: errPathChanged})
}

// pinnedSpec returns how to run ripgrep on root so that it searches what
// was resolved or nothing: for a directory, pinShell entering and
// checking it (OperandDir); for a regular file, ripgrep reading it, opened
// here without following links, from its standard input (OperandStdin),
// with the file to close after the run. Anything else there now (a link,
// a file of another kind, nothing) fails before a jail starts.
func pinnedSpec(rg, root string, o search.Options) (argv []string, op search.Operand, stdin *os.File, err error) {
	fi, err := os.Lstat(root)
	switch {
	case err != nil:
		return nil, 0, nil, fmt.Errorf("the search root is gone: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, 0, nil, rootChanged(root)
	case fi.IsDir():
		sh, err := pinShellPath()
		if err != nil {
			return nil, 0, nil, fmt.Errorf("no shell to enter the search root: %w", err)
		}
		argv = append([]string{sh, "-c", pinScript, "sh", root, rg}, search.RipgrepArgsFor(root, o, search.OperandDir)...)
		return argv, search.OperandDir, nil, nil
	case !fi.Mode().IsRegular():
		return nil, 0, nil, errors.New(notSearchable(root))
	}
	f, _, err := openRegular(root)
	switch {
	case errors.Is(err, errPathChanged), errors.Is(err, errIsDirectory):
		return nil, 0, nil, rootChanged(root)
	case errors.Is(err, errNotRegularFile):
		return nil, 0, nil, errors.New(notSearchable(root))
	case err != nil:
		return nil, 0, nil, err
	}
	return append([]string{rg}, search.RipgrepArgsFor(root, o, search.OperandStdin)...), search.OperandStdin, f, nil
}

// runRipgrep runs rg --json on root under p, jailed through the call's
// broker, pinned to what was resolved (pinnedSpec).
func runRipgrep(ctx context.Context, c *Call, rg, root string, p sandbox.Policy, o search.Options) rgRun {
	argv, op, file, err := pinnedSpec(rg, root, o)
	if err != nil {
		return rgRun{err: err}
	}
	spec := sandbox.CallSpec{
		Key:  c.stepKey(),
		Argv: argv,
		// The broker enters Dir following links; ripgrep's real working
		// directory is pinned by pinScript, and a file root needs none.
		Dir:     "/",
		Policy:  p,
		Budget:  sandbox.Budget{MaxOutstanding: maxConcurrentSearches},
		Timeout: grepTimeout,

		MaxOutputBytes: maxRipgrepOutputBytes,
	}
	if file != nil {
		defer file.Close()
		// A plain reader, not the *os.File: the broker copies it into a
		// pipe, so the run can take a warm helper.
		spec.Stdin = struct{ io.Reader }{file}
	}
	ex, err := c.Broker.Clear(ctx, spec)
	if err == nil && ex == nil {
		err = errNoExecution
	}
	if err != nil {
		return rgRun{denial: sandbox.DenialOf(err)}
	}
	enf := ex.Enforcement
	col := search.NewRipgrepCollectorFor(o, root, op)
	var stderr []byte
	var parseErr error
	full, stopped := false, false
	for out := range ex.Output() {
		if out.Stream == sandbox.Stderr {
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
	case op == search.OperandDir && s.ExitCode == pinChangedStatus:
		return rgRun{enf: &enf, err: rootChanged(root)}
	case op == search.OperandDir && s.ExitCode == pinEnterStatus:
		return fail("the search root could not be entered in ripgrep's jail")
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
