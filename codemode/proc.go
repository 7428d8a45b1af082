package codemode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// Bounds of proc.run.
const (
	// maxProcsInFlight is how many proc.run commands of one execution run
	// at once; further calls wait for a slot within their own timeout.
	maxProcsInFlight = 4
	// defaultProcTimeout is a proc.run's timeout when timeout_ms is absent.
	defaultProcTimeout = 60 * time.Second
	// maxProcTimeout is the largest timeout_ms a proc.run takes (the
	// per-call timeout, maxCallTimeout, bounds it too).
	maxProcTimeout = maxCallTimeout
	// maxProcOutputBytes bounds what one proc.run returns of stdout and
	// of stderr each; past it the stream is cut and truncated is set.
	maxProcOutputBytes = 1 << 20
	// maxProcStdinBytes bounds proc.run's stdin.
	maxProcStdinBytes = 4 << 20
	// maxProcArgvBytes bounds proc.run's argv, all words together.
	maxProcArgvBytes = 64 << 10
)

// procRunner runs an execution's proc.run calls, each as its own jailed
// broker call under the execution's step, confined as the same command
// through bash would be, never widened.
type procRunner struct {
	slots chan struct{}
	last  lastFailure
	// perm are the permissions the code_mode call declared (nil: none),
	// composed into every command's policy as bash composes its own.
	perm *job.Permissions
}

func newProcRunner(perm *job.Permissions) *procRunner {
	return &procRunner{slots: make(chan struct{}, maxProcsInFlight), perm: perm}
}

// procRun serves proc.run through the execution's procRunner.
func (h *seamHost) procRun(ctx context.Context, a *capArgs) (any, error) {
	return h.proc.run(ctx, h.call, a)
}

func (p *procRunner) run(ctx context.Context, c *tool.Call, a *capArgs) (any, error) {
	argv, dir, stdin := a.strings("argv", true), a.str("dir", false), a.bytes("stdin", false)
	timeout := time.Duration(a.integer("timeout_ms", defaultProcTimeout.Milliseconds(), 1, maxProcTimeout.Milliseconds())) * time.Millisecond
	if err := a.done(); err != nil {
		return nil, err
	}
	if err := checkArgv(argv, stdin); err != nil {
		return nil, err
	}
	if noBroker(c.Broker) {
		return nil, &CapError{Code: tool.CodeNoBroker, Message: "this host has no broker, so proc.run cannot run a command"}
	}
	wd := c.Dir()
	if dir != "" {
		d, err := c.ResolveShellDir(dir)
		if err != nil {
			var pe *tool.PathError
			if errors.As(err, &pe) {
				return nil, &CapError{Code: pe.Code, Message: "dir: " + err.Error()}
			}
			return nil, &CapError{Code: tool.CodeInvalidPath, Message: "dir: " + err.Error()}
		}
		wd = d
	}
	pol, err := job.CommandPolicy(c, p.perm)
	var d *sandbox.Denial
	if errors.As(err, &d) {
		return nil, &CapError{Code: tool.Code(d.Code), Message: d.Explain() + " A program cannot ask for more access while it runs; declare it in the code_mode call's permissions, asked once before the program starts."}
	} else if err != nil {
		return nil, &CapError{Code: codeInvalidCapabilityArguments, Message: err.Error()}
	}
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	spec := sandbox.CallSpec{
		Key:    sandbox.StepKey{OpID: c.OpID, StepID: c.StepID},
		Argv:   argv,
		Dir:    wd,
		Env:    job.CommandEnv(c),
		Policy: pol,
		// The program's own clearance holds one ticket of the step.
		Budget:         sandbox.Budget{MaxOutstanding: 1 + maxProcsInFlight},
		Timeout:        timeout,
		MaxOutputBytes: 2 * maxProcOutputBytes,
	}
	if stdin != nil {
		spec.Stdin = bytes.NewReader(stdin)
	}
	x, err := c.Broker.Clear(ctx, spec)
	if err == nil && x == nil {
		err = errNoExecution
	}
	if d := sandbox.DenialOf(err); d != nil {
		return nil, &CapError{Code: tool.Code(d.Code), Message: "" + d.Explain()}
	} else if err != nil {
		return nil, &CapError{Code: codeProcFailed, Message: err.Error()}
	}
	var out, errOut boundedBuffer
	for o := range x.Output() {
		if o.Stream == sandbox.Stderr {
			errOut.write(o.Bytes)
		} else {
			out.write(o.Bytes)
		}
	}
	st := x.Wait()
	if st.Failed != "" {
		return nil, &CapError{Code: codeProcFailed, Message: fmt.Sprintf("%s could not start: %s", quoteArg(argv[0]), st.Failed)}
	}
	if st.ExitCode != 0 || st.TimedOut {
		p.last.set(argv, errOut.buf)
	}
	res := map[string]any{"exit": st.ExitCode, "stdout": out.buf, "stderr": errOut.buf,
		"truncated": out.cut || errOut.cut || st.OutputLimited}
	if st.TimedOut {
		res["timed_out"] = true
	}
	return res, nil
}

func checkArgv(argv []string, stdin []byte) error {
	if len(argv) == 0 || argv[0] == "" {
		return &CapError{Code: codeInvalidCapabilityArguments, Message: "argv must name a command (argv[0]); run a shell line as []string{\"sh\", \"-c\", line}"}
	}
	n := 0
	for _, w := range argv {
		n += len(w)
		if bytes.IndexByte([]byte(w), 0) >= 0 {
			return &CapError{Code: codeInvalidCapabilityArguments, Message: "an argv word holds a NUL byte"}
		}
	}
	if n > maxProcArgvBytes {
		return &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("argv is %d bytes; at most %d — write a script with fs.write and run it", n, maxProcArgvBytes)}
	}
	if len(stdin) > maxProcStdinBytes {
		return &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("stdin is %d bytes; at most %d", len(stdin), maxProcStdinBytes)}
	}
	return nil
}

// boundedBuffer keeps the first maxProcOutputBytes written to it.
type boundedBuffer struct {
	buf []byte
	cut bool
}

func (b *boundedBuffer) write(p []byte) {
	room := maxProcOutputBytes - len(b.buf)
	if len(p) > room {
		p, b.cut = p[:max(room, 0)], true
	}
	b.buf = append(b.buf, p...)
}

// maxStderrTailBytes bounds the stderr tail a failed run or a failed
// proc.run command carries into the code_mode result.
const maxStderrTailBytes = 2 << 10

// lastFailure remembers the last proc.run command of an execution that
// exited non-zero or timed out, for the result's "last failing command:"
// line.
type lastFailure struct {
	mu   sync.Mutex
	argv string
	tail string
}

func (l *lastFailure) set(argv []string, stderr []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.argv = cutSummary(strings.Join(argv, " "))
	l.tail = stderrTail(stderr)
}

// get returns the last failing command and its stderr tail; ok is false
// when no proc.run failed.
func (l *lastFailure) get() (argv, tail string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.argv, l.tail, l.argv != ""
}

// stderrTail is the last maxStderrTailBytes of b, cut at a rune start,
// as valid UTF-8.
func stderrTail(b []byte) string {
	if len(b) > maxStderrTailBytes {
		b = b[len(b)-maxStderrTailBytes:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
