package broker

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
)

// probeResult is what the kernel offers, asked directly once per Broker.
type probeResult struct {
	usernsErr   error // nil: a user namespace with the jail's flags can be created
	landlockABI int   // 0 when unavailable
	landlockErr error
	seccompErr  error
}

func (p probeResult) anyLayer() bool {
	return p.usernsErr == nil || p.landlockABI > 0 || p.seccompErr == nil
}

// jailRequest is one command to start, already cleared.
type jailRequest struct {
	argv   []string
	env    []string
	dir    string
	policy sandbox.Policy
	stdin  io.Reader
	probe  probeResult
	// extra is CallSpec.ExtraFile, emptyRoot CallSpec.EmptyRoot, and
	// required every layer the call will not run without.
	extra     *os.File
	emptyRoot *sandbox.EmptyRoot
	required  []string
	// trace takes the start's phase marks, or is nil.
	trace *jail.PhaseLog
}

// jailProcess is a started helper (and, after exec, the command).
type jailProcess struct {
	cmd     *exec.Cmd
	pid     int
	started time.Time
	exited  chan struct{}
	// stdout and stderr are the read ends of the command's output pipes;
	// the broker holds no write end.
	stdout, stderr *os.File

	// pidNamespace: the command is the init of its own pid namespace.
	pidNamespace bool
	// launched: pid is a launcher, which starts the helper as the broker's
	// own child and exits (see launcher_linux.go); jailPid is the helper's pid
	// once the launcher said it and it was confirmed, and jailPidfd (0
	// when none) a pidfd naming exactly that process, so no signal meant
	// for it reaches a process that reused its pid.
	launched  bool
	jailPid   int
	jailPidfd int
	// prestartNext, when set, starts the helper for the next command; the
	// broker calls it once the command settled or has run for
	// prestartAfter, whichever comes first, so a short command never
	// shares the machine with its successor's start.
	prestartNext func()
	// nsHold is a descriptor keeping the command's mount namespace alive
	// past its exit (-1 or 0 when none); release drops it.
	nsHold int
	// onRelease, when set, is called once by release.
	onRelease func()

	mu      sync.Mutex
	reaped  bool
	settled bool
}

// prestartAfter is how long a command runs before the broker starts the
// next command's helper anyway (a long job must not leave the session
// without a warm helper).
const prestartAfter = 100 * time.Millisecond

// schedulePrestart arranges for prestartNext and returns what to call at
// settlement.
func (p *jailProcess) schedulePrestart() (settled func()) {
	if p.prestartNext == nil {
		return func() {}
	}
	t := time.AfterFunc(prestartAfter, p.prestartNext)
	return func() {
		t.Stop()
		p.prestartNext()
	}
}

// release drops what the process held past its exit, in the background:
// tearing a mount namespace down waits for RCU grace periods, which
// nothing needs to wait for.
func (p *jailProcess) release() {
	p.mu.Lock()
	if f := p.onRelease; f != nil {
		p.onRelease = nil
		defer f()
	}
	p.settled = true
	if p.jailPidfd > 0 {
		closeFd(p.jailPidfd)
		p.jailPidfd = 0
	}
	p.mu.Unlock()
	if p.nsHold > 0 {
		fd := p.nsHold
		p.nsHold = 0
		go closeFd(fd)
	}
}

// closeOutput closes the read ends of the output pipes.
func (p *jailProcess) closeOutput() {
	p.stdout.Close()
	p.stderr.Close()
}

// exitState is how a reaped process ended: its *os.ProcessState, or
// (for a helper the broker reaps itself) the wait status in that shape.
type exitState interface {
	ExitCode() int
	Exited() bool
	Sys() any
	String() string
}
