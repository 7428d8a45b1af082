package jail

import (
	"github.com/agentloom/loom/internal/errno"
	"github.com/agentloom/loom/sandbox"

	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The jail helper is the host's own executable, re-executed by the
// broker with argv[0] set to helperArg0 (or launcherArg0, probeArg0) and
// helperEnv set in its environment. Both must match for a process to act
// as a helper.
const (
	helperArg0 = "loom-jail-helper"
	probeArg0  = "loom-jail-probe"

	// helperConfigFd carries the JSON Config; the broker closes its
	// end after writing, so the helper reads to EOF.
	helperConfigFd = 3
	// helperReportFd carries JSON Report lines back; it is
	// close-on-exec in the helper, so the broker reads to EOF and knows the
	// command was exec'd (or the helper died).
	helperReportFd = 4

	// maxHelperConfigBytes bounds what a helper reads from its config fd.
	maxHelperConfigBytes = 4 << 20

	// exitHelperSetup is the helper's exit status when confinement failed
	// before the command ran; exitHelperExec when exec itself failed.
	exitHelperSetup = 125
	exitHelperExec  = 127
	// exitHelperIdle is a warm helper's status when no configuration came
	// within helperIdleTimeout.
	exitHelperIdle = 0
)

// Main turns the current process into a jail helper (or a helper's
// launcher, or a namespace probe) when the broker started it as one, and
// returns immediately otherwise. A helper confines itself, execs the
// command it was given and never returns; a launcher or a probe exits.
// Calling it twice is harmless.
func Main() {
	if len(os.Args) == 0 || !hasEnv(helperEnv) {
		return
	}
	switch os.Args[0] {
	case probeArg0:
		os.Exit(0)
	case helperArg0:
		helperPhases.Mark("started")
		runtime.LockOSThread()
		os.Exit(runHelper())
	case launcherArg0:
		runtime.LockOSThread() // the helper's parent-death signal follows this thread
		os.Exit(runLauncher())
	}
}

func hasEnv(kv string) bool {
	for _, e := range os.Environ() {
		if e == kv {
			return true
		}
	}
	return false
}

// runHelper confines the calling thread and execs the command. Every step
// runs on the locked thread that will exec: capabilities, no-new-privs,
// Landlock and seccomp are per-thread and survive exec only from there.
func runHelper() int {
	unix.CloseOnExec(helperReportFd)
	report := func(r Report) {
		b, _ := json.Marshal(r)
		b = append(b, '\n')
		for len(b) > 0 {
			n, err := unix.Write(helperReportFd, b)
			if err != nil {
				return
			}
			b = b[n:]
		}
	}
	prepareHelper()
	helperPhases.Mark("prepared")
	if slices.Contains(os.Args[1:], helperStageArg) {
		report(Report{Prepared: true})
	}
	if !readableWithin(helperConfigFd, helperIdleTimeout) {
		// A warm helper nobody needed: leave without a word.
		return exitHelperIdle
	}
	in := bufio.NewReaderSize(os.NewFile(helperConfigFd, "config"), 64<<10)
	cfg, err := readHelperConfig(in)
	if err != nil {
		report(Report{Fatal: "helper config: " + err.Error()})
		return exitHelperSetup
	}
	helperPhases.Mark("config")
	if !cfg.Prime {
		unix.Close(helperConfigFd)
		// The command's own: the extra file and stdin come before the
		// mounts, as the host's /dev/null is opened before the jail's.
		if err := takeCommandFiles(cfg); err != nil {
			report(Report{Fatal: err.Error()})
			return exitHelperSetup
		}
	}
	c, err := confine(cfg)
	if err != nil {
		report(Report{Layers: c.layers, Fatal: err.Error()})
		return exitHelperSetup
	}
	if cfg.Prime {
		// Confined for the policy alone: say so, then wait for the
		// command, which must carry exactly that policy.
		report(Report{Primed: true})
		// While it waits: the heap priming left goes back to the kernel
		// now, so the exec tears down a smaller address space.
		debug.FreeOSMemory()
		if !readableWithin(helperConfigFd, helperIdleTimeout) {
			return exitHelperIdle
		}
		cmd, err := readHelperConfig(in)
		unix.Close(helperConfigFd)
		if err == nil && (!bytes.Equal(PrimeKey(cmd), PrimeKey(cfg)) || !SocketsCovered(cmd.MaskSockets, cfg.MaskSockets)) {
			err = errors.New("the command's policy is not the one this helper was primed with")
		}
		if err != nil {
			report(Report{Fatal: "helper config: " + err.Error()})
			return exitHelperSetup
		}
		cfg = cmd
		helperPhases.Mark(PrimedCommandMark)
		// Stdin from the jail's own /dev/null now, or the host's in its
		// view (Landlock grants it).
		if err := takeCommandFiles(cfg); err != nil {
			report(Report{Layers: c.layers, Fatal: err.Error()})
			return exitHelperSetup
		}
	}
	layers := c.layers
	if err := unix.Chdir(cfg.Dir); err != nil {
		report(Report{Layers: layers, Exec: fmt.Sprintf("chdir %s: %s", cfg.Dir, errno.Name(err))})
		return exitHelperExec
	}
	if missing := MissingRequired(cfg.Required, cfg.Namespaces, layers); missing != nil {
		report(Report{Layers: layers, Refused: missing})
		return exitHelperSetup
	}

	path := sandbox.EmptyRootProgram
	if cfg.EmptyRoot == nil {
		path, err = lookPath(cfg.Argv[0], cfg.Env)
		if err != nil {
			report(Report{Layers: layers, Exec: err.Error()})
			return exitHelperExec
		}
	}
	if err := sealDescriptors(cfg.Extra != ExtraNone); err != nil {
		report(Report{Layers: layers, Fatal: err.Error()})
		return exitHelperSetup
	}
	helperPhases.Mark("seccomp,seal")
	last := Report{Layers: layers}
	if cfg.Trace {
		last.Phases = helperPhases.Marks
	}
	report(last)
	if err := limitAddressSpace(c.addressSpace); err != nil {
		report(Report{Fatal: err.Error()})
		return exitHelperSetup
	}
	err = unix.Exec(path, cfg.Argv, cfg.Env)
	report(Report{Exec: fmt.Sprintf("exec %s: %s", cfg.Argv[0], errno.Name(err))})
	return exitHelperExec
}

// takeCommandFiles puts the command's own descriptors in place: its
// stdin when it is handed off (first: it comes first on the socket), its
// extra file, and /dev/null as stdin when it asks for it.
func takeCommandFiles(cfg Config) error {
	if cfg.StdinHandoff {
		if err := takeStdinFile(); err != nil {
			return err
		}
	}
	if err := takeExtraFile(cfg.Extra); err != nil {
		return err
	}
	if cfg.NullStdin {
		if err := nullStdin(); err != nil {
			return fmt.Errorf("stdin from %s: %s", devNull, err)
		}
	}
	return nil
}

// readHelperConfig reads one configuration from the config fd: a JSON
// object ended by a newline or by the end of the stream (at most
// maxHelperConfigBytes). A configuration without an argv is refused.
func readHelperConfig(in *bufio.Reader) (Config, error) {
	var cfg Config
	var raw []byte
	for {
		chunk, err := in.ReadSlice('\n')
		raw = append(raw, chunk...)
		if len(raw) > maxHelperConfigBytes {
			return cfg, fmt.Errorf("configuration over %d bytes", maxHelperConfigBytes)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(raw) > 0 {
			break
		}
		if err != nil {
			return cfg, err
		}
		break
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return cfg, err
	}
	if len(cfg.Argv) == 0 && !cfg.Prime {
		return cfg, fmt.Errorf("empty argv")
	}
	return cfg, nil
}

// confined is what confine applied: every layer, and whether the jail's
// own /dev is mounted.
type confined struct {
	layers  []sandbox.Layer
	mounted bool
	// addressSpace is the RLIMIT_AS applyRlimits decided and reported,
	// set by limitAddressSpace as the last step before exec (0: none).
	addressSpace uint64
}

// confine applies, on the calling (locked) thread, every layer the
// policy in cfg decides and nothing a command does: the mounts, the
// loopback, rlimits, capabilities, no-new-privs, Landlock and seccomp.
// Its error is fatal; the layers applied so far come with it.
func confine(cfg Config) (confined, error) {
	var c confined
	landlockWrite := append([]string(nil), cfg.WritableRoots...)
	landlockRead := slices.Concat(cfg.SystemRoots, cfg.ReadableRoots, cfg.WritableRoots)
	landlockFiles := []string{devNull}
	pidMax := uint64(0)
	if cfg.Namespaces {
		m, err := setupMounts(cfg)
		if err != nil {
			return c, err
		}
		pidMax = m.pidMax
		if cfg.NullStdin && !cfg.Prime {
			// The jail's own /dev/null now: the host's, opened above, lives
			// on a mount the jail's root may no longer show. Should the
			// jail have none, fd 0 stays the host's, which reads the same.
			nullStdin()
		}
		l := m.layer
		c.layers = append(c.layers, l, m.root, m.limits)
		if l.Applied {
			// The private /proc, /dev and /tmp exist only inside this jail.
			c.mounted = true
			landlockRead = append(landlockRead, "/proc", "/dev")
			landlockWrite = append(landlockWrite, sandbox.ScratchDir, "/dev/shm")
			landlockFiles = append(landlockFiles, "/dev/zero", "/dev/full")
		}
		if cfg.EmptyRoot != nil {
			landlockRead, landlockWrite = emptyRootReadable(*cfg.EmptyRoot), nil
		}
		if cfg.NetworkOff {
			if err := helperLoopbackUp(); err != nil {
				c.layers = append(c.layers, sandbox.Layer{Name: sandbox.LayerLoopback, Reason: errno.Name(err)})
			} else {
				c.layers = append(c.layers, sandbox.Layer{Name: sandbox.LayerLoopback, Applied: true})
			}
		}
	} else {
		c.layers = append(c.layers,
			sandbox.Layer{Name: sandbox.LayerMounts, Reason: "no mount namespace: the host view is not read-only by mount (chmod, utime and xattr outside the writable roots are not refused), no secret or socket is hidden, /proc, /dev and /tmp are the host's"},
			sandbox.Layer{Name: sandbox.LayerPolicyRoot, Reason: "no mount namespace: the whole host view is the jail's, every host socket in it reachable"},
			sandbox.Layer{Name: sandbox.LayerNamespaceLimits, Reason: "no IPC or user namespace of the jail's own: SysV shared memory, message queues and inotify watches are bounded only by the host's limits"})
	}

	helperPhases.Mark("mounts")
	rl, as := applyRlimits(cfg.Limits, cfg.Namespaces, pidMax)
	c.layers, c.addressSpace = append(c.layers, rl), as
	capLayer, err := dropCapabilities()
	if err != nil {
		return c, err
	}
	c.layers = append(c.layers, capLayer)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return c, fmt.Errorf("PR_SET_NO_NEW_PRIVS: %w", err)
	}
	c.layers = append(c.layers, sandbox.Layer{Name: sandbox.LayerNoNewPrivs, Applied: true})

	var landlockFileWrite []string
	carved := 0
	if !cfg.Namespaces && len(cfg.Protected) > 0 {
		// No mount namespace holds the protected paths read-only: Landlock
		// must refuse them outright, by never granting them.
		landlockWrite, landlockFileWrite, carved = carveWritable(landlockWrite, cfg.Protected)
	}
	switch {
	case cfg.LandlockABI <= 0:
		c.layers = append(c.layers, sandbox.Layer{Name: sandbox.LayerLandlock, Reason: cfg.LandlockSkip})
	default:
		linked, err := applyLandlock(landlockPlan{
			ABI: cfg.LandlockABI, Read: landlockRead, Write: landlockWrite,
			FileRW: landlockFiles, FileWrite: landlockFileWrite, NetworkOff: cfg.NetworkOff,
		})
		if err != nil {
			c.layers = append(c.layers, sandbox.Layer{Name: sandbox.LayerLandlock, Reason: errno.Name(err)})
		} else {
			l := sandbox.Layer{Name: sandbox.LayerLandlock, Applied: true, Detail: fmt.Sprintf("abi %d", min(cfg.LandlockABI, LandlockMaxKnownABI))}
			var params []string
			if carved > 0 {
				params = append(params, fmt.Sprintf("%d dirs around protected paths read-only", carved))
			}
			if len(linked) > 0 {
				params = append(params, "no rule for roots reached through a link ("+strings.Join(linked, ", ")+")")
			}
			l.Params = strings.Join(params, "; ")
			c.layers = append(c.layers, l)
		}
	}
	helperPhases.Mark("landlock")
	switch {
	case !cfg.Seccomp:
		c.layers = append(c.layers, sandbox.Layer{Name: sandbox.LayerSeccomp, Reason: cfg.SeccompSkip})
	default:
		if err := applySeccomp(cfg.NetworkOff); err != nil {
			c.layers = append(c.layers, sandbox.Layer{Name: sandbox.LayerSeccomp, Reason: errno.Name(err)})
		} else {
			params := "denied syscalls, namespace clones, terminal-injection ioctls, setuid/setgid modes; clone3 and openat2 ENOSYS"
			if cfg.NetworkOff {
				params += "; non-unix sockets"
			}
			c.layers = append(c.layers, sandbox.Layer{Name: sandbox.LayerSeccomp, Applied: true, Params: params})
		}
	}
	return c, nil
}

// readableWithin waits up to d for fd to become readable (data, or the
// other end closed) and reports whether it did. An fd poll refuses counts
// as readable, so the read that follows says what is wrong.
func readableWithin(fd int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		switch {
		case err == unix.EINTR:
		case err != nil, n > 0:
			return true
		}
	}
}

// nullStdin makes /dev/null the command's standard input.
func nullStdin() error {
	fd, err := unix.Open(devNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Dup3(fd, 0, 0)
}

// applyRlimits sets every ceiling in l (defaults already filled in),
// never raising a hard limit the helper was given, and says what bounds
// the number of processes: RLIMIT_NPROC, which the kernel counts per
// uid (in the jail's own user namespace when it has one, across the host
// otherwise) and does not enforce at all for uid 0, and the pid
// namespace's pid_max when the mount layer set one (pidMax, else 0).
// With uid 0 and no pid_max nothing bounds the processes, and the layer
// is reported skipped.
//
// The address-space ceiling is only decided here (as, reported as set):
// the helper's own Go runtime keeps mapping memory until it execs, and a
// ceiling below what it has mapped already would make its next mapping
// fatal, so limitAddressSpace sets it as the last step before exec, and
// a failure there ends the helper before the command runs.
func applyRlimits(l sandbox.Limits, namespaces bool, pidMax uint64) (layer sandbox.Layer, as uint64) {
	var failed, params []string
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &cur); err != nil {
		failed = append(failed, "as: "+errno.Name(err))
	} else {
		as = min(l.MemoryBytes, cur.Max)
		params = append(params, fmt.Sprintf("as %d", as))
	}
	for _, r := range []struct {
		name string
		res  int
		v    uint64
	}{
		{"cpu", unix.RLIMIT_CPU, l.CPUSeconds},
		{"nproc", unix.RLIMIT_NPROC, l.Processes},
		{"fsize", unix.RLIMIT_FSIZE, l.FileSizeBytes},
		{"nofile", unix.RLIMIT_NOFILE, l.OpenFiles},
		{"msgqueue", unix.RLIMIT_MSGQUEUE, MqueueBytes},
		{"core", unix.RLIMIT_CORE, 0},
	} {
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.res, &cur); err != nil {
			failed = append(failed, r.name+": "+errno.Name(err))
			continue
		}
		v := min(r.v, cur.Max)
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			failed = append(failed, r.name+": "+errno.Name(err))
			continue
		}
		if r.res == unix.RLIMIT_NPROC {
			continue // said below, with what it counts
		}
		params = append(params, fmt.Sprintf("%s %d", r.name, v))
	}
	switch {
	case unix.Getuid() == 0 && pidMax > 0:
		params = append(params, fmt.Sprintf("nproc not enforced for uid 0; processes bounded by pid_max %d", pidMax))
	case unix.Getuid() == 0:
		failed = append(failed, "processes unbounded: uid 0 is exempt from RLIMIT_NPROC and no pid_max was set")
	case namespaces:
		params = append(params, fmt.Sprintf("nproc %d (the jail's uid in its user namespace)", min(l.Processes, nprocMax())))
		if pidMax > 0 {
			params = append(params, fmt.Sprintf("pid_max %d", pidMax))
		}
	default:
		params = append(params, fmt.Sprintf("nproc %d (per uid across the host)", min(l.Processes, nprocMax())))
	}
	if len(failed) > 0 {
		return sandbox.Layer{Name: sandbox.LayerRlimits, Reason: strings.Join(failed, ", "), Params: strings.Join(params, ", ")}, as
	}
	return sandbox.Layer{Name: sandbox.LayerRlimits, Applied: true, Params: strings.Join(params, ", ")}, as
}

// limitAddressSpace sets RLIMIT_AS to as (0: leaves it), the helper's
// last step before exec (see applyRlimits).
func limitAddressSpace(as uint64) error {
	if as == 0 {
		return nil
	}
	if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: as, Max: as}); err != nil {
		return fmt.Errorf("RLIMIT_AS %d: %w", as, err)
	}
	return nil
}

// nprocMax is the RLIMIT_NPROC now in force.
func nprocMax() uint64 {
	var cur unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_NPROC, &cur)
	return cur.Cur
}

// The securebits (linux/securebits.h; golang.org/x/sys does not name
// them): each flag has a _LOCKED companion one bit above it that makes it
// immutable for the process and its descendants.
const (
	// secbitNoroot: uid 0 gains no capabilities by exec.
	secbitNoroot = 1 << 0
	// secbitNorootLocked locks secbitNoroot.
	secbitNorootLocked = 1 << 1
	// secbitNoSetuidFixup: changing uids to or from 0 leaves the
	// capability sets alone.
	secbitNoSetuidFixup = 1 << 2
	// secbitNoSetuidFixupLocked locks secbitNoSetuidFixup.
	secbitNoSetuidFixupLocked = 1 << 3
	// SecbitKeepCaps keeps the permitted set across a change away from
	// uid 0; the jail leaves it off (Securebits does not hold it).
	SecbitKeepCaps = 1 << 4
	// secbitKeepCapsLocked locks SecbitKeepCaps (off, in the jail).
	secbitKeepCapsLocked = 1 << 5
	// secbitNoCapAmbientRaise: no capability can be raised into the
	// ambient set.
	secbitNoCapAmbientRaise = 1 << 6
	// secbitNoCapAmbientRaiseLocked locks secbitNoCapAmbientRaise.
	secbitNoCapAmbientRaiseLocked = 1 << 7

	// Securebits is what the helper sets before exec: root regains
	// nothing by exec or by changing uids, the ambient set stays empty,
	// KEEP_CAPS is off, and every one of those is locked.
	Securebits = secbitNoroot | secbitNorootLocked |
		secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked |
		secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
)

// dropCapabilities clears the bounding and ambient sets, locks the
// securebits that would let root regain capabilities on exec, and clears
// the effective, permitted and inheritable sets. A bounding set that
// cannot be cleared is fatal when the helper is uid 0 (exec would refill
// the permitted set from it); otherwise no-new-privs makes it inert and
// the report says so.
func dropCapabilities() (sandbox.Layer, error) {
	var notes []string
	boundingKept := false
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			boundingKept = true
			notes = append(notes, "bounding: "+errno.Name(err))
			break
		}
	}
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, Securebits, 0, 0, 0); err != nil {
		notes = append(notes, "securebits: "+errno.Name(err))
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return sandbox.Layer{}, fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return sandbox.Layer{}, fmt.Errorf("capset: %w", err)
	}
	if boundingKept && unix.Geteuid() == 0 {
		return sandbox.Layer{}, fmt.Errorf("cannot clear the capability bounding set as uid 0: %s", strings.Join(notes, ", "))
	}
	l := sandbox.Layer{Name: sandbox.LayerCapabilities, Applied: true}
	if len(notes) > 0 {
		l.Params = strings.Join(notes, ", ")
	}
	return l, nil
}

// lookPath resolves name against the PATH in env (the command's own
// environment, never the helper's).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if unix.Access(p, unix.X_OK) == nil {
			var st unix.Stat_t
			if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("exec %s: executable file not found in PATH", name)
}

// defaultPath is searched when the command's environment has no PATH.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"
