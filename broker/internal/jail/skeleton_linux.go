package jail

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentloom/loom/sandbox"
)

// helperStageArg follows helperArg0 (and helperNetArg) in the argv of a
// helper started ahead of its command with namespaces: it asks
// prepareHelper to make the skeleton of the policy root while it waits.
const helperStageArg = "stage"

// SkeletonMark is the phase mark a helper takes when its root came from
// its skeleton (see PhaseMark).
const SkeletonMark = "r.skeleton"

// SkeletonMadeMark is the phase mark a warm helper takes once it made
// its skeleton.
const SkeletonMadeMark = "prepared.skeleton"

// skeleton is the part of a jail's new root that no policy decides, made
// by a warm helper before its command came (prepareSkeleton), detached
// from every mount table so nothing sees or changes it meanwhile: the
// root tmpfs holding the host root's top-level links and the mount
// points of ReplacedRoots, a fresh /proc in it with procMasked
// masked and procReadOnly bound read-only (when the two files written
// later could be held open first), and the jail's /dev (binds of
// devNodes, read-only, and its links); the namespace limits are written
// through its /proc meanwhile (prepareNamespaceLimits). buildPolicyRoot attaches it in place of the tmpfs it would
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
	// procReadOnly: its /proc has procReadOnly bound read-only already,
	// and pidMax and mntLimit (opened before, on /proc's own mount) are
	// where the two values written after the preparation go: the pid
	// namespace's pid_max (a policy's) and lateLimitFile.
	procReadOnly     bool
	pidMax, mntLimit int
}

// prepareSkeleton makes the skeleton (see skeleton) with m's stand-ins,
// or returns why it could not (a kernel that cannot mount on a detached
// tree, say); a helper without one builds its root as a fresh helper
// does.
func prepareSkeleton(m *masker) (*skeleton, error) {
	if err := m.standins(); err != nil || m.fs <= 0 {
		return nil, fmt.Errorf("no mask stand-ins (%v)", err)
	}
	s := &skeleton{links: TopLevelLinks(), nodes: map[string]uint64{}}
	root, err := detachedFS("tmpfs", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, "mode=0755", "size="+strconv.Itoa(PolicyRootBytes))
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
	for _, d := range sandbox.ReplacedRoots() {
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
	if err := s.protectProc(proc); err != nil {
		return fail("read-only /proc", err)
	}
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

// protectProc binds procReadOnly read-only in proc (the skeleton's
// /proc), as protectProc does in a fresh helper's, once it holds the two
// files written later open for writing (see skeleton.procReadOnly). When
// either cannot be opened it leaves /proc as it is, for buildPolicyRoot's
// caller to protect as a fresh helper's.
func (s *skeleton) protectProc(proc int) error {
	open := func(file string) int {
		fd, err := unix.Openat(proc, "sys/"+file, unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return -1
		}
		return fd
	}
	s.pidMax, s.mntLimit = open(pidMaxFile), open(lateLimitFile)
	if s.pidMax < 0 || s.mntLimit < 0 {
		s.closeLate()
		return nil
	}
	for _, p := range procReadOnly {
		rel := p[len("/proc/"):]
		var st unix.Stat_t
		if unix.Fstatat(proc, rel, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		clone, err := unix.OpenTree(proc, rel, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			err = unix.MountSetattr(clone, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
			if err == nil {
				err = unix.MoveMount(clone, "", proc, rel, unix.MOVE_MOUNT_F_EMPTY_PATH)
			}
			unix.Close(clone)
		}
		if err != nil {
			s.closeLate()
			return fmt.Errorf("bind %s: %w", p, err)
		}
	}
	s.procReadOnly = true
	return nil
}

// closeLate closes the descriptors protectProc held for the late writes.
func (s *skeleton) closeLate() {
	for _, fd := range []*int{&s.pidMax, &s.mntLimit} {
		if *fd > 0 {
			unix.Close(*fd)
		}
		*fd = -1
	}
}

// makeDev makes the skeleton's /dev as mountDev makes a fresh helper's,
// detached: a tmpfs (nosuid, noexec) holding read-only binds of the
// host's devNodes (as the host view, read-only by then, gives a fresh
// helper), the fd and standard stream links and an empty shm directory.
// It returns the tmpfs's descriptor.
func (s *skeleton) makeDev() (int, error) {
	dev, err := detachedFS("tmpfs", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, "mode=0755", "size="+strconv.Itoa(DevBytes))
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
	if !slices.Equal(TopLevelLinks(), s.links) {
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

// attach mounts the skeleton's root at stage and lets go of it (but
// for the late writes' descriptors, which attached keeps: see
// lateWrites).
func (s *skeleton) attach(stage string) error {
	err := unix.MoveMount(s.root, "", unix.AT_FDCWD, stage, unix.MOVE_MOUNT_F_EMPTY_PATH)
	unix.Close(s.root)
	s.root = 0
	if err != nil {
		s.closeLate()
		return err
	}
	if s.procReadOnly {
		attached = s
	}
	return nil
}

// drop closes the skeleton's descriptors; a detached tree vanishes with
// them.
func (s *skeleton) drop() {
	if s.root > 0 {
		unix.Close(s.root)
	}
	s.root = 0
	s.closeLate()
}

// attached is the skeleton the jail's root was built from when its /proc
// came read-only already, or nil: pid_max and lateLimitFile are then
// written through its descriptors (writeLate), and protectProc has
// nothing left to do.
var attached *skeleton

// writeLate writes value to file through the attached skeleton's
// descriptor for it, and reports whether it had one: only pidMaxFile and
// lateLimitFile have one.
func writeLate(file, value string) (bool, error) {
	s := attached
	if s == nil {
		return false, nil
	}
	var fd int
	switch file {
	case pidMaxFile:
		fd = s.pidMax
	case lateLimitFile:
		fd = s.mntLimit
	default:
		return false, nil
	}
	if fd < 0 {
		return false, nil
	}
	_, err := unix.Pwrite(fd, []byte(value), 0)
	return true, err
}

// detachedFS makes a filesystem of type fstype (its source named so)
// with the given key=value options and returns a detached mount of it
// with attrs.
func detachedFS(fstype string, attrs int, opts ...string) (int, error) {
	fs, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen %s: %w", fstype, err)
	}
	defer unix.Close(fs)
	// Named as mount(2) names what the fresh helper mounts.
	for _, o := range append([]string{"source=" + fstype}, opts...) {
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

// dropAttached forgets the attached skeleton (its root was undone).
func dropAttached() {
	if attached != nil {
		attached.closeLate()
		attached = nil
	}
}
