package jail

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentloom/loom/sandbox"
)

// emptyRootBytes sizes the tmpfs that becomes an empty-root jail's root:
// it holds one empty file (the program's mount point) and the /proc and
// /dev directories, and is read-only before the command runs.
const emptyRootBytes = 64 << 10

// emptyRootReadable is what Landlock lets an empty-root command read:
// its program (read and execute), /dev and, with Proc, /proc.
func emptyRootReadable(e sandbox.EmptyRoot) []string {
	r := []string{sandbox.EmptyRootProgram, "/dev"}
	if e.Proc {
		r = append(r, "/proc")
	}
	return r
}

// setupEmptyRoot builds an empty-root jail's mount table (see
// EmptyRoot): / private; a fresh tmpfs (at policyRootStage) holding
// EmptyRootProgram, a read-only bind of cfg.EmptyRoot.Program opened
// without following links (nosuid, nodev); the jail's /dev, made
// read-only; a fresh /proc; the tmpfs read-only, pivot_root and the old
// root detached. Then, through that /proc, the pid namespace's pid_max,
// (with Proc) the kernel-wide files masked, the per-namespace limits,
// and with Proc procReadOnly bound read-only, without it /proc
// unmounted.
// Every failure is fatal: an empty-root command never runs in a view of
// the host.
func setupEmptyRoot(cfg Config) (mountResult, error) {
	fail := func(step string, err error) (mountResult, error) {
		return mountResult{}, fmt.Errorf("empty root: %s: %w", step, err)
	}
	if err := makeRootPrivate(); err != nil {
		return fail("private /", err)
	}
	prog, err := openNoFollow(cfg.EmptyRoot.Program)
	if err != nil {
		return fail("open "+cfg.EmptyRoot.Program, err)
	}
	defer unix.Close(prog)
	var st unix.Stat_t
	if err := unix.Fstat(prog, &st); err != nil {
		return fail("stat "+cfg.EmptyRoot.Program, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fail(cfg.EmptyRoot.Program, fmt.Errorf("not a regular file"))
	}
	stage := policyRootStage
	if err := unix.Mount("tmpfs", stage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size="+strconv.Itoa(emptyRootBytes)); err != nil {
		return fail("mount the new root", err)
	}
	if err := makePath(stage, sandbox.EmptyRootProgram, false); err != nil {
		return fail("mount point "+sandbox.EmptyRootProgram, err)
	}
	if err := bindHeld(heldRoot{jailRoot: jailRoot{path: sandbox.EmptyRootProgram}, fd: prog}, stage+sandbox.EmptyRootProgram); err != nil {
		return fail("bind the program", err)
	}
	for _, d := range []string{"/proc", "/dev"} {
		if err := makePath(stage, d, true); err != nil {
			return fail("mount point "+d, err)
		}
	}
	if err := mountProc(stage); err != nil {
		return fail("proc", err)
	}
	if err := mountDev(stage); err != nil {
		return fail("dev", err)
	}
	if err := setStageReadOnly(stage + "/dev"); err != nil {
		return fail("read-only /dev", err)
	}
	if err := setStageReadOnly(stage); err != nil {
		return fail("read-only root", err)
	}
	if err := pivotInto(stage); err != nil {
		return fail("pivot_root", err)
	}
	params := []string{"host view detached (pivot_root)"}
	pidMax := uint64(0)
	if err := limitPids(cfg.Limits.Processes); err != nil {
		return fail("pid_max", err)
	}
	pidMax = cfg.Limits.Processes + pidReserve + 1
	params = append(params, fmt.Sprintf("pid_max %d", pidMax))
	proc := "no /proc"
	if cfg.EmptyRoot.Proc {
		// Before the namespace limits: each stand-in takes an anonymous
		// mount namespace, which they leave no room for.
		n, err := maskAll(procMasked)
		if err != nil {
			return fail("mask kernel files", err)
		}
		params = append(params, fmt.Sprintf("%d kernel files masked", n))
		proc = "a fresh /proc (its kernel knobs read-only)"
	}
	limits := setNamespaceLimits()
	if cfg.EmptyRoot.Proc {
		if err := protectProc(); err != nil {
			return fail("read-only /proc", err)
		}
	} else if err := unix.Unmount("/proc", unix.MNT_DETACH); err != nil {
		return fail("unmount /proc", err)
	}
	root := sandbox.Layer{Name: sandbox.LayerEmptyRoot, Applied: true,
		Params: fmt.Sprintf("a read-only tmpfs root holding only %s (read-only, nosuid, nodev), a read-only /dev (%d devices) and %s; no writable path", sandbox.EmptyRootProgram, len(devNodes), proc)}
	return mountResult{
		layer:  sandbox.Layer{Name: sandbox.LayerMounts, Applied: true, Params: strings.Join(params, ", ")},
		root:   root,
		limits: limits,
		pidMax: pidMax,
	}, nil
}
