package jail

import (
	"github.com/agentloom/loom/internal/errno"
	"github.com/agentloom/loom/sandbox"

	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// PolicyRootBytes sizes the tmpfs that becomes the jail's root. It holds
// only the directories, links and empty files the granted roots are
// bound onto, and it is read-only before the command runs.
const PolicyRootBytes = 1 << 20

// policyRootStage is where the helper mounts the jail's new root while
// it builds it: the host's /tmp, which the jail replaces with its own
// scratch anyway. Everything bound from beneath it is opened first.
const policyRootStage = sandbox.ScratchDir

// errThroughLink says a path meets a symbolic link on its way: nothing
// is bound there (a root reached through a link never widens what the
// jail grants).
var errThroughLink = errors.New("reached through a symbolic link")

// errInBoundRoot is a mount point missing inside a root already bound
// in the jail: that root is the host's own filesystem, where the jail
// never makes anything, and the path's absence there means it changed
// since it was opened.
var errInBoundRoot = errors.New("missing inside a root bound in the jail (it changed since it was opened); nothing is made in the host's files")

// policyRootPlan returns what the jail's root shows, parents first, one
// entry per path: every system, readable and writable root, every shared
// socket (Config.Sockets), and extra (the file /etc/resolv.conf resolves
// to, when a root shows /etc/resolv.conf). A path's writability is
// whether a writable root covers it. A read-only path under a read-only
// entry is left out (the bind above carries it, and no command can move
// it); any root under a writable entry is bound as a mount of its own,
// so a command that may write the directory above it cannot rename the
// root away or put a link in its place (the kernel refuses to rename a
// mount point: EBUSY); roots under the jail's own /proc and /dev are left out
// (the jail replaces those). mkdirs are the working directory when no
// entry covers it: it is created empty, so the command can start there
// without anything of the host's showing.
func policyRootPlan(cfg Config, extra []string) (binds []jailRoot, mkdirs []string) {
	var all []string
	for _, group := range [][]string{cfg.SystemRoots, cfg.ReadableRoots, cfg.WritableRoots, cfg.Sockets, extra} {
		for _, p := range group {
			if filepath.IsAbs(p) {
				all = append(all, filepath.Clean(p))
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return len(all[i]) < len(all[j]) })
	seen := map[string]bool{}
	for _, p := range all {
		if seen[p] || (p != "/" && (sandbox.Covers("/proc", p) || sandbox.Covers("/dev", p))) {
			continue
		}
		seen[p] = true
		w := coveredByAny(cfg.WritableRoots, p)
		above := -1
		for i, b := range binds {
			if sandbox.Covers(b.path, p) && (above < 0 || len(b.path) > len(binds[above].path)) {
				above = i
			}
		}
		if above >= 0 && !binds[above].writable && !w {
			continue
		}
		binds = append(binds, jailRoot{path: p, writable: w})
	}
	if d := filepath.Clean(cfg.Dir); filepath.IsAbs(d) && !coveredByEntry(binds, d) {
		mkdirs = append(mkdirs, d)
	}
	return binds, mkdirs
}

// coveredByEntry reports whether an entry of binds covers p.
func coveredByEntry(binds []jailRoot, p string) bool {
	for _, b := range binds {
		if sandbox.Covers(b.path, p) {
			return true
		}
	}
	return false
}

// policyRoot is what buildPolicyRoot made: the layer it reports, and
// whether /proc and /dev were mounted in the new root (their errors, for
// the mounts layer). applied is false when the jail kept the host view.
type policyRoot struct {
	layer           sandbox.Layer
	applied         bool
	procErr, devErr error
	// skeleton: the root came from the helper's prepared skeleton, whose
	// /proc has procMasked masked already (kernelMasked of them existed).
	skeleton     bool
	kernelMasked int
}

// heldRoot is a planned bind with the descriptor it is bound from,
// opened before the stage hides anything.
type heldRoot struct {
	jailRoot
	fd  int
	dir bool
}

// buildPolicyRoot makes the jail's root out of the policy's roots only:
// a fresh tmpfs (at policyRootStage) holding the host's top-level links
// (merged-/usr's /bin -> usr/bin and the like, which resolve only within
// the new root), the directories the jail mounts its own filesystems on,
// and binds of policyRootPlan's entries, each from a descriptor opened
// without following links (read-only, nosuid and nodev; writable roots
// read-write); then a fresh /proc and the jail's /dev in it, the tmpfs
// itself read-only, pivot_root, and the old root detached. Everything
// not under a granted root is then absent from the jail: no file or
// socket of the host's elsewhere can be named, whenever it was made.
//
// A step that fails before the pivot undoes the stage and the jail keeps
// the host view (the layer is reported skipped with the reason); a
// failure to detach the old root after the pivot is fatal.
func buildPolicyRoot(cfg Config, extra []string) (policyRoot, error) {
	skip := func(step string, err error) policyRoot {
		return policyRoot{layer: sandbox.Layer{Name: sandbox.LayerPolicyRoot, Reason: step + ": " + errno.Name(err) + "; the host view stays (read-only, its sockets masked as listed at start)"}}
	}
	plan, mkdirs := policyRootPlan(cfg, extra)
	plan = expandWholeRoot(plan)
	var held []heldRoot
	defer func() {
		for _, h := range held {
			unix.Close(h.fd)
		}
	}()
	var linked []string
	var rootLinks [][2]string
	missing := 0
	for _, r := range plan {
		fd, err := openNoFollow(r.path)
		switch {
		case err == unix.ELOOP:
			if t, ok := rootLink(r.path); ok {
				rootLinks = append(rootLinks, [2]string{r.path, t})
			} else {
				linked = append(linked, r.path)
			}
			continue
		case err != nil:
			missing++
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			missing++
			continue
		}
		held = append(held, heldRoot{r, fd, st.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
	links := TopLevelLinks()
	helperPhases.Mark("r.open")

	stage := policyRootStage
	undo := func(step string, err error) (policyRoot, error) {
		unix.Unmount(stage, unix.MNT_DETACH)
		// The host view gets a /proc of its own, protected afresh.
		dropAttached()
		return skip(step, err), nil
	}
	// A warm helper's skeleton holds the links, the mount points, /proc
	// and /dev already, if the host's links and device nodes are still
	// those it was made from; otherwise the root is made here.
	skel := helperPrepared.skeleton
	helperPrepared.skeleton = nil
	if skel != nil && (!skel.current() || skel.attach(stage) != nil) {
		skel.drop()
		skel = nil
	}
	if skel == nil {
		if err := unix.Mount("tmpfs", stage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size="+strconv.Itoa(PolicyRootBytes)); err != nil {
			return skip("mount the new root", err), nil
		}
		for _, l := range links {
			if err := os.Symlink(l[1], stage+"/"+l[0]); err != nil && !errors.Is(err, os.ErrExist) {
				return undo("link /"+l[0], err)
			}
		}
		// The directories the jail mounts filesystems of its own on: the
		// new root has each, and no root is bound beneath them.
		for _, d := range sandbox.ReplacedRoots() {
			if err := makePath(stage, d, true); err != nil {
				return undo("mount point "+d, err)
			}
		}
	}
	binds, writable := 0, 0
	for _, h := range held {
		if err := makePath(stage, h.path, h.dir); err != nil {
			if errors.Is(err, errThroughLink) {
				linked = append(linked, h.path)
				continue
			}
			return undo("mount point "+h.path, err)
		}
		if err := bindHeld(h, stage+h.path); err != nil {
			return undo("bind "+h.path, err)
		}
		binds++
		if h.writable {
			writable++
		}
	}
	for _, l := range rootLinks {
		err := makePath(stage, filepath.Dir(l[0]), true)
		if err == nil {
			err = os.Symlink(l[1], stage+l[0])
		}
		switch {
		case err == nil, errors.Is(err, os.ErrExist):
		case errors.Is(err, errThroughLink):
			linked = append(linked, l[0])
		default:
			return undo("link "+l[0], err)
		}
	}
	for _, d := range mkdirs {
		if skel != nil && (sandbox.Covers("/proc", d) || sandbox.Covers("/dev", d)) {
			// The skeleton's /proc or /dev is there already; a fresh
			// root's directory would be covered by them.
			continue
		}
		if err := makePath(stage, d, true); err != nil && !errors.Is(err, errThroughLink) {
			return undo("working directory "+d, err)
		}
	}
	helperPhases.Mark("r.binds")
	res := policyRoot{applied: true}
	if skel != nil {
		helperPhases.Mark(SkeletonMark)
		res.skeleton, res.kernelMasked = true, skel.masked
	} else {
		res.procErr = mountProc(stage)
		helperPhases.Mark("r.proc")
		res.devErr = mountDev(stage)
	}
	helperPhases.Mark("r.dev")
	if err := setStageReadOnly(stage); err != nil {
		return undo("new root read-only", err)
	}
	helperPhases.Mark("r.ro")
	if err := pivotInto(stage); err != nil {
		if errors.Is(err, errOldRootAttached) {
			return policyRoot{}, err
		}
		return undo("pivot_root", err)
	}
	params := []string{fmt.Sprintf("%d binds (%d writable), %d links (roots that are links, and the host root's own); everything else absent (pivot_root)", binds, writable, len(links)+len(rootLinks))}
	if missing > 0 {
		params = append(params, fmt.Sprintf("%d roots absent on the host", missing))
	}
	if len(linked) > 0 {
		params = append(params, "no bind for roots reached through a link ("+strings.Join(linked, ", ")+")")
	}
	res.layer = sandbox.Layer{Name: sandbox.LayerPolicyRoot, Applied: true, Params: strings.Join(params, "; ")}
	return res, nil
}

// expandWholeRoot replaces an entry for / itself with one per entry of
// the host's / that is not a link (links are carried as links) and not
// one of ReplacedRoots, with its writability, parents still first. The new
// root stays the jail's own tmpfs: /proc, /dev and /tmp are the jail's,
// and the roots beneath /tmp have a directory of the new root to be
// bound on.
func expandWholeRoot(plan []jailRoot) []jailRoot {
	if len(plan) == 0 || plan[0].path != "/" {
		return plan
	}
	whole, rest := plan[0], plan[1:]
	f, err := os.Open("/")
	if err != nil {
		return rest
	}
	ents, _ := f.ReadDir(maxTopLevelEntries)
	f.Close()
	own := sandbox.ReplacedRoots()
	var out []jailRoot
	for _, e := range ents {
		p := "/" + e.Name()
		if e.Type()&os.ModeSymlink != 0 || slices.Contains(own, p) || slices.ContainsFunc(rest, func(r jailRoot) bool { return r.path == p }) {
			continue
		}
		out = append(out, jailRoot{path: p, writable: whole.writable})
	}
	out = append(out, rest...)
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].path) < len(out[j].path) })
	return out
}

// rootLink reports whether path itself is a symbolic link reached
// without following one, and returns its target: the new root carries it
// as a link, which resolves within the new root only.
func rootLink(path string) (string, bool) {
	parent, err := openNoFollow(filepath.Dir(path))
	if err != nil {
		return "", false
	}
	defer unix.Close(parent)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(parent, filepath.Base(path), buf)
	if err != nil {
		return "", false
	}
	return string(buf[:n]), true
}

// maxTopLevelEntries bounds how many entries of the host's / the helper
// reads looking for top-level links.
const maxTopLevelEntries = 4096

// TopLevelLinks returns the host root's symbolic links as {name,
// target} pairs (merged-/usr's bin -> usr/bin, lib, lib64, sbin). The
// new root carries each as a link; it resolves within the new root only,
// so it shows nothing the roots do not.
func TopLevelLinks() [][2]string {
	f, err := os.Open("/")
	if err != nil {
		return nil
	}
	defer f.Close()
	ents, _ := f.ReadDir(maxTopLevelEntries)
	var out [][2]string
	for _, e := range ents {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		if t, err := os.Readlink("/" + e.Name()); err == nil {
			out = append(out, [2]string{e.Name(), t})
		}
	}
	return out
}

// makePath creates path's directories under stage (mode 0755), and its
// last component as a directory when dir, else as an empty file, never
// following a link: a component that is one fails with errThroughLink.
// Components that exist (in the stage or in a root bound there) are
// kept; one missing inside a bound root fails with errInBoundRoot, so the
// jail never makes a mount point in the host's own files.
func makePath(stage, path string, dir bool) error {
	var st unix.Stat_t
	if err := unix.Lstat(stage, &st); err != nil {
		return err
	}
	return makePathOn(stage, path, dir, st.Dev)
}

// makePathOn is makePath under base, making entries only where their
// parent is on the filesystem of device made (the one the jail mounted
// there).
func makePathOn(base, path string, dir bool, made uint64) error {
	var st unix.Stat_t
	if err := unix.Lstat(base+"/", &st); err != nil {
		return err
	}
	p, parent := base, st.Dev
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	for i, c := range parts {
		if c == "" {
			continue
		}
		p += "/" + c
		last := i == len(parts)-1
		var st unix.Stat_t
		err := unix.Lstat(p, &st)
		if err == nil {
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return fmt.Errorf("%s: %w", path, errThroughLink)
			}
			parent = st.Dev
			continue
		}
		if err != unix.ENOENT {
			return err
		}
		if parent != made {
			return fmt.Errorf("%s: %w", path, errInBoundRoot)
		}
		if !last || dir {
			err = unix.Mkdir(p, 0o755)
		} else {
			var fd int
			fd, err = unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
			if err == nil {
				unix.Close(fd)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// bindHeld binds the root h holds onto target (a path makePath made, so
// free of links), with everything mounted beneath it, and sets its flags
// per setRootFlags.
func bindHeld(h heldRoot, target string) error {
	dst, err := openNoFollow(target)
	if err != nil {
		return fmt.Errorf("open %s: %w", target, err)
	}
	defer unix.Close(dst)
	return bindRootAt(h.fd, "/proc/self/fd/"+strconv.Itoa(dst), target, h.writable)
}

// setStageReadOnly makes the new root's own mount read-only, nosuid and
// nodev (the binds on it keep their own flags).
func setStageReadOnly(stage string) error {
	err := unix.MountSetattr(unix.AT_FDCWD, stage, unix.AT_SYMLINK_NOFOLLOW, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | rootAttrs})
	if err != unix.ENOSYS {
		return err
	}
	return remountBind(stage, unix.MS_RDONLY|rootMSFlags)
}

// errOldRootAttached: pivot_root succeeded but the old root could not be
// detached, so the host view is still on top.
var errOldRootAttached = errors.New("old root still attached")

// pivotInto makes newRoot the root and working directory of the jail's
// mount namespace and detaches the old root (pivot_root(".", ".") with
// the old root stacked on the new one, then unmounted lazily).
func pivotInto(newRoot string) error {
	oldFd, err := unix.Open("/", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(oldFd)
	newFd, err := unix.Open(newRoot, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(newFd)
	if err := unix.Fchdir(newFd); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		unix.Fchdir(oldFd)
		return err
	}
	if err := unix.Fchdir(oldFd); err == nil {
		err = unix.Unmount(".", unix.MNT_DETACH)
		if err == nil {
			return unix.Chdir("/")
		}
	}
	return fmt.Errorf("%w: %v", errOldRootAttached, err)
}
