package jail

import (
	"github.com/agentloom/loom/internal/errno"
	"github.com/agentloom/loom/sandbox"

	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// mountResult is what setupMounts built: the mounts layer, the
// policy_root layer, the namespace-limits layer (written on the fresh
// /proc before /proc/sys went read-only), and the pid namespace's
// pid_max (0 when it could not be capped).
type mountResult struct {
	layer, root, limits sandbox.Layer
	pidMax              uint64
}

// setupMounts builds the jail's mount table: private propagation and
// the whole host view read-only (scanHostView); then, where the kernel
// allows it, a new root holding only the policy's roots (buildPolicyRoot:
// the policy_root layer, with a fresh /proc and /dev in it), finished by
// inPolicyRoot, else the host view with a fresh /proc and /dev over it,
// finished by inHostView. An empty-root run gets setupEmptyRoot instead.
// A failure to make / private or read-only, to detach the old root, to
// bind a writable root, to mask a secret or kernel file or to hold a
// protected path read-only is fatal; the private filesystems degrade the
// layer instead.
func setupMounts(cfg Config) (mountResult, error) {
	if cfg.EmptyRoot != nil {
		dropSkeleton()
		return setupEmptyRoot(cfg)
	}
	t, err := scanHostView(cfg)
	if err != nil {
		return mountResult{}, err
	}
	defer t.scratch.close()
	var root policyRoot
	if cfg.TestHookPolicyRootOff {
		dropSkeleton()
		root.layer = sandbox.Layer{Name: sandbox.LayerPolicyRoot, Reason: "turned off by the host (test only); the host view stays (read-only, its sockets masked as listed at start)"}
	} else if root, err = buildPolicyRoot(cfg, t.extra); err != nil {
		return mountResult{}, fmt.Errorf("policy root: %w", err)
	}
	helperPhases.Mark("m.root")
	if root.applied {
		return t.inPolicyRoot(root)
	}
	return t.inHostView(root.layer)
}

// mountTable is the jail's mount table while setupMounts builds it: what
// was read in the host's view before the root changed, and what the
// mounts layer will report.
type mountTable struct {
	cfg Config
	// skipped and params are the mounts layer's reasons and parameters
	// so far.
	skipped, params []string
	// visible are the roots whose secrets and kernel state are masked:
	// the policy's, or "/" where no Landlock confines reads.
	visible []string
	// secrets and sysMasks are the secrets and kernel files to mask.
	secrets, sysMasks []string
	// resolv is where /etc/resolv.conf resolves (if it does); extra is
	// resolv when a root covers /etc/resolv.conf, for the policy root to
	// bind.
	resolv, extra []string
	// roots are every root the jail shows, with its writability.
	roots   []jailRoot
	scratch scratchFS
	// procErr says why the jail has no /proc of its own (nil: it has
	// one); pidMax is the pid namespace's pid_max (0: not capped).
	procErr error
	pidMax  uint64
}

// scanHostView makes / private and the whole host view read-only, then
// reads, in the host's view before the root changes, what either way of
// finishing the table needs: the secrets to mask (the homes /etc/passwd
// names), the kernel state and the file the resolver configuration
// points at.
func scanHostView(cfg Config) (*mountTable, error) {
	if err := makeRootPrivate(); err != nil {
		return nil, err
	}
	t := &mountTable{cfg: cfg}
	helperPhases.Mark("m.private")
	method, failed, err := hostViewReadOnly(cfg.HostViewByRemount)
	if err != nil {
		return nil, err
	}
	helperPhases.Mark("m.hostro")
	if len(failed) > 0 {
		t.skipped = append(t.skipped, fmt.Sprintf("%d mounts left writable (%s)", len(failed), failed[0]))
	} else {
		t.params = append(t.params, "host view read-only ("+method+")")
	}
	t.visible = slices.Concat(cfg.SystemRoots, cfg.ReadableRoots, cfg.WritableRoots)
	if cfg.LandlockABI <= 0 {
		// Without Landlock nothing confines reads: every secret in the
		// view is within reach.
		t.visible = []string{"/"}
	}
	t.secrets = secretTargets(t.visible, hostHomes(cfg.Home()), globPaths)
	t.sysMasks = sysMaskTargets(t.visible)
	if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
		t.resolv = []string{r}
	}
	if coveredByAny(slices.Concat(cfg.SystemRoots, cfg.ReadableRoots, cfg.WritableRoots), "/etc/resolv.conf") {
		t.extra = t.resolv
	}
	for _, r := range slices.Concat(cfg.SystemRoots, cfg.ReadableRoots, []string{cfg.Dir}, cfg.Protected) {
		t.roots = append(t.roots, jailRoot{path: r, writable: coveredByAny(cfg.WritableRoots, r)})
	}
	for _, w := range cfg.WritableRoots {
		t.roots = append(t.roots, jailRoot{path: w, writable: true})
	}
	helperPhases.Mark("m.scan")
	return t, nil
}

// inPolicyRoot finishes the table in the policy's root, which already
// holds a fresh /proc and /dev (root.procErr and root.devErr say how
// they went): pid_max capped, a private /tmp, the socket directories a
// root covers hidden, and the host sockets the new root can still name
// masked with the secrets and kernel state (finish).
func (t *mountTable) inPolicyRoot(root policyRoot) (mountResult, error) {
	// A skeleton's /proc has its kernel files masked already.
	kernelMasks := t.capPids(root.procErr, !root.skeleton)
	helperPhases.Mark("m.pidmax")
	t.mountTmp()
	t.attachShm(root.devErr)
	helperPhases.Mark("m.tmp,dev")
	// In the policy's root a socket directory shows only where a root
	// covers it.
	hidden, err := hideSocketDirs(t.roots, t.cfg.Sockets, t.resolv, true)
	if err != nil {
		return mountResult{}, fmt.Errorf("hide host sockets: %w", err)
	}
	// Only the sockets under a root the new root shows can be named.
	var maskSockets []string
	for _, s := range t.cfg.MaskSockets {
		if coveredByAny(t.visible, s) || coveredByAny(t.cfg.Sockets, s) {
			maskSockets = append(maskSockets, s)
		}
	}
	helperPhases.Mark("m.sockdirs")
	return t.finish(root.layer, hidden, slices.Concat(t.secrets, maskSockets, kernelMasks, t.sysMasks), root.kernelMasked)
}

// inHostView finishes the table in the host view (no policy root was
// built, or the host turned it off, with root saying why): a fresh /proc
// over the host's, pid_max capped, a private /tmp, a fresh /dev, every
// socket directory hidden, the writable roots bound back read-write,
// nosuid and nodev over the read-only view, and every host socket masked
// with the secrets and kernel state (finish).
func (t *mountTable) inHostView(root sandbox.Layer) (mountResult, error) {
	kernelMasks := t.capPids(mountProc(""), true)
	helperPhases.Mark("m.pidmax")
	t.mountTmp()
	t.attachShm(mountDev(""))
	helperPhases.Mark("m.tmp,dev")
	// In the host view every socket directory shows.
	hidden, err := hideSocketDirs(t.roots, t.cfg.Sockets, t.resolv, false)
	if err != nil {
		return mountResult{}, fmt.Errorf("hide host sockets: %w", err)
	}
	if err := bindWritable(t.cfg.WritableRoots, append([]string{sandbox.ScratchDir}, hidden...)); err != nil {
		return mountResult{}, fmt.Errorf("writable roots: %w", err)
	}
	helperPhases.Mark("m.sockdirs")
	return t.finish(root, hidden, slices.Concat(t.secrets, t.cfg.MaskSockets, kernelMasks, t.sysMasks), 0)
}

// capPids notes how the jail's /proc was mounted (procErr) and, with a
// /proc, caps the pid namespace's pid_max. It returns, with a /proc and
// procMasks, the kernel files of it to mask.
func (t *mountTable) capPids(procErr error, procMasks bool) (kernelMasks []string) {
	t.procErr = procErr
	if procErr != nil {
		t.skipped = append(t.skipped, "proc: "+errno.Name(procErr))
		return nil
	}
	if err := limitPids(t.cfg.Limits.Processes); err != nil {
		t.skipped = append(t.skipped, "pid_max: "+errno.Name(err))
	} else {
		t.pidMax = t.cfg.Limits.Processes + pidReserve + 1
		t.params = append(t.params, fmt.Sprintf("pid_max %d", t.pidMax))
	}
	if procMasks {
		kernelMasks = procMasked
	}
	return kernelMasks
}

// mountTmp mounts the jail's scratch tmpfs at ScratchDir, over the roots
// beneath it.
func (t *mountTable) mountTmp() {
	scratchSize := strconv.Itoa(sandbox.ScratchBytes)
	if err := overmountWith(sandbox.ScratchDir, func() error {
		return t.scratch.mount("mode=0755,size=" + scratchSize)
	}, t.roots); err != nil {
		t.skipped = append(t.skipped, "tmp: "+errno.Name(err))
	}
}

// attachShm notes how the jail's /dev was mounted (devErr) and, with a
// /dev, shows the scratch tmpfs at /dev/shm too.
func (t *mountTable) attachShm(devErr error) {
	if devErr != nil {
		t.skipped = append(t.skipped, "dev: "+errno.Name(devErr))
	} else if shared, err := t.scratch.attachShm(); err != nil {
		t.skipped = append(t.skipped, "dev/shm: "+errno.Name(err))
	} else if shared {
		t.params = append(t.params, "/tmp and /dev/shm share one scratch tmpfs")
	}
}

// finish masks masks (the secrets, host sockets and kernel files to
// hide), makes the protected binds and, last, with a /proc, sets the
// per-namespace limits and binds procReadOnly read-only. It returns the
// mounts layer, root (the policy_root layer) and the namespace_limits
// layer. hidden are the socket directories hidden; premasked counts the
// kernel files masked before (in a skeleton's /proc).
func (t *mountTable) finish(root sandbox.Layer, hidden, masks []string, premasked int) (mountResult, error) {
	masked, err := maskAll(masks)
	if err != nil {
		return mountResult{}, fmt.Errorf("mask secrets, sockets and kernel state: %w", err)
	}
	masked += premasked
	helperPhases.Mark("m.masks")
	hiddenText := strings.Join(hidden, ", ")
	if hiddenText == "" {
		hiddenText = "no socket directory"
	}
	t.params = append(t.params, fmt.Sprintf("writable roots nosuid,nodev; %s hidden; %d secrets, sockets and kernel files masked", hiddenText, masked))
	n, unpinned, err := protect(t.cfg.Protected, t.cfg.WritableRoots)
	if err != nil {
		return mountResult{}, fmt.Errorf("protected paths: %w", err)
	}
	if len(unpinned) > 0 {
		t.skipped = append(t.skipped, "protected symlinks replaceable ("+strings.Join(unpinned, ", ")+")")
	}
	t.params = append(t.params, fmt.Sprintf("%d protected", n))
	helperPhases.Mark("m.protect")
	// Last, once nothing more needs a mount namespace (the mask stand-ins
	// and pinned links each take an anonymous one, which the nested
	// namespace count would refuse): the per-namespace limits, then
	// /proc/sys read-only.
	limits := sandbox.Layer{Name: sandbox.LayerNamespaceLimits, Reason: "no private /proc to write them through (" + errno.Name(t.procErr) + ")"}
	if t.procErr == nil {
		limits = setNamespaceLimits()
		if err := protectProc(); err != nil {
			return mountResult{}, fmt.Errorf("read-only /proc: %w", err)
		}
	}
	helperPhases.Mark("m.nslimits")
	res := mountResult{limits: limits, root: root, pidMax: t.pidMax, layer: sandbox.Layer{Name: sandbox.LayerMounts, Applied: true, Params: strings.Join(t.params, ", ")}}
	if len(t.skipped) > 0 {
		res.layer.Applied, res.layer.Reason = false, strings.Join(t.skipped, ", ")
	}
	return res, nil
}

// hostSocketDirBytes sizes the empty tmpfs that hides a socket directory
// (it holds only mount points for what is bound back).
const hostSocketDirBytes = 64 << 10

// hideSocketDirs hides each of hostSocketDirs (resolved, once each) under
// an empty tmpfs, binding back the roots beneath it, the shared sockets
// and resolv (the file /etc/resolv.conf resolves to, read-only). A
// directory a root names exactly is left in place, and with onlyCovered
// (the policy's root, which shows a directory only under a root) so is
// one no root covers. It returns the directories it hid.
func hideSocketDirs(roots []jailRoot, shared, resolv []string, onlyCovered bool) ([]string, error) {
	keep := append([]jailRoot(nil), roots...)
	for _, s := range slices.Concat(shared, resolv) {
		keep = append(keep, jailRoot{path: s})
	}
	var rootPaths []string
	for _, r := range roots {
		rootPaths = append(rootPaths, r.path)
	}
	var hidden []string
	for _, d := range hostSocketDirs {
		if onlyCovered && !coveredByAny(rootPaths, d) {
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil || real == "/" || slices.Contains(hidden, real) {
			continue
		}
		if onlyCovered && !coveredByAny(rootPaths, real) {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			continue
		}
		if slices.ContainsFunc(roots, func(r jailRoot) bool { return filepath.Clean(r.path) == real }) {
			// The host listed the directory itself: it stays, and only its
			// sockets are masked (they are in the host's socket table).
			continue
		}
		if err := overmount(real, "mode=0755,size="+strconv.Itoa(hostSocketDirBytes), keep); err != nil {
			return hidden, err
		}
		hidden = append(hidden, real)
	}
	return hidden, nil
}

// globPaths expands a pattern, dropping a malformed one.
func globPaths(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return m
}
