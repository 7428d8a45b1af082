package broker

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// helperStageArg follows helperArg0 (and helperNetArg) in the argv of a
// helper started ahead of its command with namespaces: it asks
// prepareHelper to make the skeleton of the policy root while it waits.
const helperStageArg = "stage"

// skeletonMark is the phase mark a helper takes when its root came from
// its skeleton (see phaseMark).
const skeletonMark = "r.skeleton"

// skeleton is the part of a jail's new root that no policy decides, made
// by a warm helper before its command came (prepareSkeleton), detached
// from every mount table so nothing sees or changes it meanwhile: the
// root tmpfs holding the host root's top-level links and the mount
// points of JailReplacedRoots, a fresh /proc in it with procMasked
// masked, and the jail's /dev (binds of devNodes, read-only, and its
// links). buildPolicyRoot attaches it in place of the tmpfs it would
// mount, once it has checked that the host facts it was made from (the
// top-level links, the device nodes) still hold; otherwise it is dropped
// and the root is built as for a fresh helper.
type skeleton struct {
	root int // the detached root tmpfs (an fsmount descriptor)
	// links are the host root's top-level links the root holds.
	links [][2]string
	// nodes are the device numbers (st_rdev) of the devNodes bound in
	// its /dev, by name; a node the host lacked is absent.
	nodes map[string]uint64
	// masked is how many of procMasked exist in its /proc, all masked.
	masked int
}

// prepareSkeleton makes the skeleton (see skeleton) with m's stand-ins,
// or returns why it could not (a kernel that cannot mount on a detached
// tree, say); a helper without one builds its root as a fresh helper
// does.
func prepareSkeleton(m *masker) (*skeleton, error) {
	if err := m.standins(); err != nil || m.fs <= 0 {
		return nil, fmt.Errorf("no mask stand-ins (%v)", err)
	}
	s := &skeleton{links: topLevelLinks(), nodes: map[string]uint64{}}
	root, err := detachedFS("tmpfs", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, "mode=0755", "size="+strconv.Itoa(policyRootBytes))
	if err != nil {
		return nil, err
	}
	s.root = root
	fail := func(step string, err error) (*skeleton, error) {
		s.drop()
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	for _, l := range s.links {
		if err := unix.Symlinkat(l[1], root, l[0]); err != nil && !errors.Is(err, unix.EEXIST) {
			return fail("link /"+l[0], err)
		}
	}
	for _, d := range JailReplacedRoots() {
		if err := unix.Mkdirat(root, d[1:], 0o755); err != nil {
			return fail("mount point "+d, err)
		}
	}
	proc, err := detachedFS("proc", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fail("proc", err)
	}
	defer unix.Close(proc)
	for _, p := range procMasked {
		ok, err := m.maskAt(proc, p[len("/proc/"):])
		if err != nil {
			return fail("mask "+p, err)
		}
		if ok {
			s.masked++
		}
	}
	prepareNamespaceLimits(proc)
	if err := unix.MoveMount(proc, "", root, "proc", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fail("attach proc", err)
	}
	dev, err := s.makeDev()
	if err != nil {
		return fail("dev", err)
	}
	defer unix.Close(dev)
	if err := unix.MoveMount(dev, "", root, "dev", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fail("attach dev", err)
	}
	return s, nil
}

// makeDev makes the skeleton's /dev as mountDev makes a fresh helper's,
// detached: a tmpfs (nosuid, noexec) holding read-only binds of the
// host's devNodes (as the host view, read-only by then, gives a fresh
// helper), the fd and standard stream links and an empty shm directory.
// It returns the tmpfs's descriptor.
func (s *skeleton) makeDev() (int, error) {
	dev, err := detachedFS("tmpfs", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, "mode=0755", "size="+strconv.Itoa(devBytes))
	if err != nil {
		return -1, err
	}
	fail := func(err error) (int, error) {
		unix.Close(dev)
		return -1, err
	}
	for _, n := range devNodes {
		node, err := unix.OpenTree(unix.AT_FDCWD, "/dev/"+n, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			continue // as mountDev: a node the host lacks is absent
		}
		var st unix.Stat_t
		err = unix.Fstat(node, &st)
		if err == nil {
			err = unix.MountSetattr(node, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
		}
		if err == nil {
			var fd int
			if fd, err = unix.Openat(dev, n, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o666); err == nil {
				unix.Close(fd)
				err = unix.MoveMount(node, "", dev, n, unix.MOVE_MOUNT_F_EMPTY_PATH)
			}
		}
		unix.Close(node)
		if err != nil {
			return fail(fmt.Errorf("dev node %s: %w", n, err))
		}
		s.nodes[n] = st.Rdev
	}
	for name, target := range devLinks {
		if err := unix.Symlinkat(target, dev, name); err != nil {
			return fail(fmt.Errorf("dev link %s: %w", name, err))
		}
	}
	if err := unix.Mkdirat(dev, shmDir[len("/dev/"):], 0o1777); err != nil {
		return fail(fmt.Errorf("dev shm: %w", err))
	}
	return dev, nil
}

// current reports whether the host facts s was made from still hold in
// the helper's view of the host now: the same top-level links, and each
// device node of devNodes present exactly where it was, with the same
// device number.
func (s *skeleton) current() bool {
	if !slices.Equal(topLevelLinks(), s.links) {
		return false
	}
	for _, n := range devNodes {
		var st unix.Stat_t
		err := unix.Stat("/dev/"+n, &st)
		rdev, had := s.nodes[n]
		if (err == nil) != had || (had && st.Rdev != rdev) {
			return false
		}
	}
	return true
}

// attach mounts the skeleton's root at stage and lets go of it.
func (s *skeleton) attach(stage string) error {
	err := unix.MoveMount(s.root, "", unix.AT_FDCWD, stage, unix.MOVE_MOUNT_F_EMPTY_PATH)
	s.drop()
	return err
}

// drop closes the skeleton's descriptor; a detached tree vanishes with
// it.
func (s *skeleton) drop() {
	if s.root > 0 {
		unix.Close(s.root)
	}
	s.root = 0
}

// detachedFS makes a filesystem of type fstype with the given
// key=value options and returns a detached mount of it with attrs.
func detachedFS(fstype string, attrs int, opts ...string) (int, error) {
	fs, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen %s: %w", fstype, err)
	}
	defer unix.Close(fs)
	for _, o := range opts {
		k, v, _ := strings.Cut(o, "=")
		if err := unix.FsconfigSetString(fs, k, v); err != nil {
			return -1, fmt.Errorf("fsconfig %s %s: %w", fstype, k, err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("fsconfig create %s: %w", fstype, err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return -1, fmt.Errorf("fsmount %s: %w", fstype, err)
	}
	return mnt, nil
}

// dropSkeleton lets go of the helper's skeleton, if it has one, for a
// command whose root is not built from it (an empty root, the host view).
func dropSkeleton() {
	if s := helperPrepared.skeleton; s != nil {
		s.drop()
		helperPrepared.skeleton = nil
	}
}
