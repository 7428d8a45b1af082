package jail

import (
	"github.com/agentloom/loom/internal/errno"
	"github.com/agentloom/loom/sandbox"

	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// hostSocketDirs are the directories where hosts keep their service
// sockets (the system and user buses, docker.sock, agents). The jail
// hides each under an empty tmpfs; the roots a policy lists beneath them,
// the sockets it shares (Config.Sockets) and the resolver configuration
// /etc/resolv.conf points at are bound back.
var hostSocketDirs = []string{"/run", "/var/run"}

// HostSocketDirs returns a copy of hostSocketDirs.
func HostSocketDirs() []string { return slices.Clone(hostSocketDirs) }

// shmDir is where POSIX shared memory (shm_open, sem_open) lives.
const shmDir = "/dev/shm"

// Directories of the scratch tmpfs: what the jail shows at ScratchDir
// and at shmDir. The tmpfs's own root ends up covered (by the bind of its
// tmp directory at ScratchDir), so neither is reachable from the other,
// and the two share ScratchBytes.
const (
	scratchTmpName = "tmp"
	scratchShmName = "shm"
)

// scratchFS is the jail's scratch: one tmpfs of ScratchBytes shown at
// ScratchDir and, once /dev exists, at shmDir.
type scratchFS struct {
	shm int // an O_PATH descriptor of the tmpfs's shm directory; 0 when none
}

// mount mounts the scratch tmpfs (with the given options) at ScratchDir,
// makes its tmp and shm directories (mode 1777), holds the shm one for
// attachShm, and binds the tmp one over ScratchDir, covering the root.
func (s *scratchFS) mount(opts string) error {
	if err := unix.Mount("tmpfs", sandbox.ScratchDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs at %s: %w", sandbox.ScratchDir, err)
	}
	for _, d := range []string{scratchTmpName, scratchShmName} {
		p := sandbox.ScratchDir + "/" + d
		// mkdir's mode passes through the umask and never carries the
		// sticky bit: the chmod sets it.
		if err := unix.Mkdir(p, 0o777); err != nil {
			return fmt.Errorf("scratch %s: %w", d, err)
		}
		if err := unix.Chmod(p, 0o1777); err != nil {
			return fmt.Errorf("scratch %s: %w", d, err)
		}
	}
	shm, err := unix.Open(sandbox.ScratchDir+"/"+scratchShmName, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("scratch %s: %w", scratchShmName, err)
	}
	s.shm = shm
	if err := unix.Mount(sandbox.ScratchDir+"/"+scratchTmpName, sandbox.ScratchDir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind scratch at %s: %w", sandbox.ScratchDir, err)
	}
	return nil
}

// attachShm binds the scratch's shm directory at shmDir, noexec as the
// rest of /dev, and reports whether it did (false when the scratch was
// never mounted: shared memory stays in /dev's own small tmpfs).
func (s *scratchFS) attachShm() (bool, error) {
	if s.shm <= 0 {
		return false, nil
	}
	err := unix.Mount("/proc/self/fd/"+strconv.Itoa(s.shm), shmDir, "", unix.MS_BIND, "")
	if err == nil {
		err = remountBind(shmDir, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC)
	}
	if err != nil {
		return false, fmt.Errorf("scratch at %s: %w", shmDir, err)
	}
	return true, nil
}

func (s *scratchFS) close() {
	if s.shm > 0 {
		unix.Close(s.shm)
	}
}

// makeRootPrivate stops every mount event in the jail from propagating
// to the host (and back).
func makeRootPrivate() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	return nil
}

// lockedFlags returns the mount flags of path that a remount inside a
// user namespace must keep (the kernel refuses to clear them).
func lockedFlags(path string) (uintptr, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	var f uintptr
	for _, m := range []struct{ st, ms int64 }{
		{unix.ST_NOSUID, unix.MS_NOSUID},
		{unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if int64(st.Flags)&m.st != 0 {
			f |= uintptr(m.ms)
		}
	}
	return f, nil
}

// bindSelf bind-mounts path onto itself, read-only when ro.
func bindSelf(path string, ro bool) error {
	if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", path, err)
	}
	if !ro {
		return nil
	}
	return remountBind(path, unix.MS_RDONLY)
}

// remountBind changes the flags of the mount at path (its own, not those
// beneath it) by a bind remount to flags (MS_RDONLY, MS_NOSUID, ...) plus
// the flags the kernel locked on it (see lockedFlags), without which the
// kernel refuses the remount. It is the one place the jail remounts a
// bind: where mount_setattr is missing (before Linux 5.12), or for a bind
// made read-only right after it is made.
func remountBind(path string, flags uintptr) error {
	locked, err := lockedFlags(path)
	if err != nil {
		return fmt.Errorf("statfs %s: %w", path, err)
	}
	if err := unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|flags|locked, ""); err != nil {
		return fmt.Errorf("remount %s: %w", path, err)
	}
	return nil
}

// protectPlan returns, for the protected paths that exist, the
// directories to pin (bind onto themselves, read-write, so they become
// mount points that cannot be renamed or removed — otherwise a command
// could move .git aside and recreate it with hooks of its own), the
// paths to bind read-only, and the protected symlinks to pin as links. A
// symlinked entry contributes its resolved target to the read-only binds,
// and the link itself is pinned (else a command could replace the link
// with a directory of its own). Pins are ordered parents first; every
// returned path is clean.
func protectPlan(protected, writable []string) (pins, ro, links []string) {
	seenPin, seenRO := map[string]bool{}, map[string]bool{}
	addRO := func(p string) {
		if !seenRO[p] {
			seenRO[p] = true
			ro = append(ro, p)
		}
	}
	pinAbove := func(t string) {
		top := ""
		for _, w := range writable {
			if sandbox.Covers(w, t) && w != "/" && (top == "" || len(w) < len(top)) {
				top = filepath.Clean(w)
			}
		}
		if top == "" {
			return
		}
		for d := filepath.Dir(t); sandbox.Covers(top, d); d = filepath.Dir(d) {
			if !seenPin[d] {
				seenPin[d] = true
				pins = append(pins, d)
			}
			if d == top {
				break
			}
		}
	}
	for _, p := range protected {
		p = filepath.Clean(p)
		fi, err := os.Lstat(p)
		if err != nil {
			continue // missing protected paths are fine (see quarantineCreated)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if !seenRO[p] {
				seenRO[p] = true
				links = append(links, p)
			}
			pinAbove(p)
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				continue // a dangling link is pinned; there is nothing to bind
			}
			p = real
		}
		addRO(p)
		pinAbove(p)
	}
	// Parents before children so each later bind lands on the pinned tree.
	sort.Slice(pins, func(i, j int) bool { return len(pins[i]) < len(pins[j]) })
	sort.Slice(ro, func(i, j int) bool { return len(ro[i]) < len(ro[j]) })
	return pins, ro, links
}

// protect pins and read-only-binds per protectPlan. It returns how many
// paths it held, and the symlinks it could not pin (a kernel without the
// mount API, before Linux 5.2).
func protect(protected, writable []string) (int, []string, error) {
	pins, ro, links := protectPlan(protected, writable)
	for _, d := range pins {
		if err := bindSelf(d, false); err != nil {
			return 0, nil, err
		}
	}
	for _, p := range ro {
		if err := bindSelf(p, true); err != nil {
			return 0, nil, err
		}
	}
	var unpinned []string
	for _, l := range links {
		if err := pinSymlink(l); err != nil {
			unpinned = append(unpinned, l+": "+errno.Name(err))
		}
	}
	return len(ro) + len(links) - len(unpinned), unpinned, nil
}

// pinSymlink mounts a clone of the symlink at path over itself: the link
// keeps working, but as a mount point it can be neither removed, renamed
// nor replaced. Only the mount API (open_tree, move_mount) can mount a
// symlink; mount(2) follows it.
func pinSymlink(path string) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return fmt.Errorf("open_tree %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount %s: %w", path, err)
	}
	return nil
}

// mountProc mounts a fresh procfs for the jail's pid namespace at
// root+"/proc" (root is "" for the current root, or the jail's new root
// while it is being built).
func mountProc(root string) error {
	if err := unix.Mount("proc", root+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}

// jailRoot is one root the jail's mount table must show: rebound when a
// private filesystem hides where it lives, bound onto itself read-write
// when writable.
type jailRoot struct {
	path     string
	writable bool
}

// overmount mounts a fresh tmpfs at dir (mode and size as given) and
// binds back every root that lived beneath it, so a workspace under the
// host's /tmp stays visible. The roots are opened (never following a
// link) before the tmpfs hides them and bound from their descriptors,
// parents first; each keeps its own writability (see setRootFlags).
func overmount(dir, opts string, roots []jailRoot) error {
	return overmountWith(dir, func() error {
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mount tmpfs at %s: %w", dir, err)
		}
		return nil
	}, roots)
}

// overmountWith is overmount with the filesystem mounted at dir by
// mount.
func overmountWith(dir string, mount func() error, roots []jailRoot) error {
	type held struct {
		jailRoot
		fd  int
		dir bool
	}
	var keep []held
	defer func() {
		for _, h := range keep {
			unix.Close(h.fd)
		}
	}()
	seen := map[string]bool{}
	for _, r := range roots {
		p := filepath.Clean(r.path)
		if p == dir || !sandbox.Covers(dir, p) || seen[p] {
			continue
		}
		seen[p] = true
		fd, err := openNoFollow(p)
		if err != nil {
			continue // a missing root (or one reached through a link) gets no binding
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			continue
		}
		keep = append(keep, held{jailRoot{p, r.writable}, fd, st.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
	// Parents first, so a nested root lands inside its parent's bind.
	sort.Slice(keep, func(i, j int) bool { return len(keep[i].path) < len(keep[j].path) })
	if err := mount(); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	for _, h := range keep {
		// Mount points are made on the new filesystem only: one missing
		// inside a root bound back already is in the host's files.
		if err := makePathOn("", h.path, h.dir, st.Dev); err != nil {
			return fmt.Errorf("mount point %s: %w", h.path, err)
		}
		if err := bindRoot(h.fd, h.path, h.writable); err != nil {
			return err
		}
	}
	return nil
}

// bindRoot binds the file or directory fd names (with everything mounted
// beneath it) onto target and sets its flags per setRootFlags.
func bindRoot(fd int, target string, writable bool) error {
	return bindRootAt(fd, target, target, writable)
}

// bindRootAt is bindRoot onto dst, a name of the mount point target (the
// path itself, or a /proc/self/fd name of a descriptor pinning it): the
// one bind-then-set-flags sequence of the jail's roots.
func bindRootAt(fd int, dst, target string, writable bool) error {
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", target, err)
	}
	return setRootFlags(target, writable)
}

// Mount attributes every bound root carries: nothing on it is honoured
// as setuid or as a device.
const (
	rootAttrs   = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	rootMSFlags = unix.MS_NOSUID | unix.MS_NODEV
)

// setRootFlags makes the mount at path nosuid and nodev, and read-write
// when writable (the host view it was bound from is read-only by then),
// read-only otherwise. The change reaches the mounts beneath it too,
// except where the kernel locked a flag the host set (a read-only mount
// inherited from the host stays read-only).
func setRootFlags(path string, writable bool) error {
	attr := unix.MountAttr{Attr_set: rootAttrs}
	if writable {
		attr.Attr_clr = unix.MOUNT_ATTR_RDONLY
	} else {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	err := unix.MountSetattr(unix.AT_FDCWD, path, unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW, &attr)
	if err == unix.EPERM {
		// A locked flag beneath: change the root's own mount alone.
		err = unix.MountSetattr(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, &attr)
	}
	if err != unix.ENOSYS {
		if err != nil {
			return fmt.Errorf("mount_setattr %s: %w", path, err)
		}
		return nil
	}
	// Before Linux 5.12: a bind remount of the root's own mount (read-write
	// unless MS_RDONLY is among the flags).
	flags := uintptr(rootMSFlags)
	if !writable {
		flags |= unix.MS_RDONLY
	}
	return remountBind(path, flags)
}

// openNoFollow opens path as an O_PATH descriptor without following any
// symbolic link on the way (openat2 RESOLVE_NO_SYMLINKS; before Linux
// 5.6, O_NOFOLLOW on the last component). A link anywhere fails with
// ELOOP: a root reached through a link must never widen what the jail
// grants.
func openNoFollow(path string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err == unix.ENOSYS {
		fd, err = unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err == nil {
			var st unix.Stat_t
			if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				unix.Close(fd)
				return -1, unix.ELOOP
			}
		}
	}
	return fd, err
}

// bindWritable binds every writable root onto itself read-write, nosuid
// and nodev, parents first, skipping the roots a private filesystem
// already rebound (those under skip) and roots that do not exist or are
// reached through a link.
func bindWritable(writable []string, skip []string) error {
	ws := append([]string(nil), writable...)
	sort.Slice(ws, func(i, j int) bool { return len(ws[i]) < len(ws[j]) })
outer:
	for _, w := range ws {
		w = filepath.Clean(w)
		for _, s := range skip {
			if sandbox.Covers(s, w) {
				continue outer
			}
		}
		fd, err := openNoFollow(w)
		if err != nil {
			continue
		}
		err = bindRoot(fd, w, true)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// hostViewReadOnly makes every mount of the jail's view of the host
// read-only, so nothing outside the roots bound writable afterwards can
// be written, chmod'ed, touched or given extended attributes, whatever
// Landlock covers. It is one recursive mount_setattr (Linux 5.12); an
// older kernel remounts each mount point, and the mount points that
// could not be made read-only are returned.
//
// byRemount takes the older kernel's way on any kernel (the benchmark
// that compares the two sets it).
func hostViewReadOnly(byRemount bool) (method string, failed []string, err error) {
	err = unix.ENOSYS
	if !byRemount {
		err = unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	}
	if err == nil {
		return "mount_setattr", nil, nil
	}
	if err != unix.ENOSYS {
		return "", nil, fmt.Errorf("mount_setattr / read-only: %w", err)
	}
	mps, err := mountPoints()
	if err != nil {
		return "", nil, fmt.Errorf("mountinfo: %w", err)
	}
	for _, mp := range mps {
		if sandbox.Covers("/proc", mp) || sandbox.Covers("/dev", mp) || sandbox.Covers(sandbox.ScratchDir, mp) {
			continue // replaced by the jail's own before the command runs
		}
		if err := remountBind(mp, unix.MS_RDONLY); err != nil {
			failed = append(failed, errno.Name(err))
		}
	}
	return "remount", failed, nil
}

// procReadOnly are the parts of a fresh /proc that configure the kernel
// rather than describe processes; the jail binds them read-only (a uid 0
// jail would otherwise pass the sysctl owner checks).
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}

// protectProc binds procReadOnly read-only, unless the root's /proc
// came so from a warm helper's skeleton.
func protectProc() error {
	if attached != nil {
		return nil
	}
	for _, p := range procReadOnly {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := bindSelf(p, true); err != nil {
			return err
		}
	}
	return nil
}

// pidMaxFile is the pid namespace's pid_max, under /proc/sys.
const pidMaxFile = "kernel/pid_max"

// pidReserve is how many pids the kernel keeps below the wrap point of a
// pid namespace (RESERVED_PIDS): once allocation wraps it restarts there.
const pidReserve = 300

// limitPids caps the pid numbers of the jail's pid namespace (Linux 6.14
// and later namespace kernel.pid_max), so at most about n+pidReserve
// processes can exist in it at once. It bounds a fork bomb even where
// RLIMIT_NPROC does not apply (uid 0 is exempt from it).
func limitPids(n uint64) error {
	v := strconv.FormatUint(n+pidReserve+1, 10)
	if held, err := writeLate(pidMaxFile, v); held {
		if err != nil {
			return fmt.Errorf("pid_max: %w", err)
		}
		return nil
	}
	if err := os.WriteFile(procSysDir+pidMaxFile, []byte(v), 0); err != nil {
		return fmt.Errorf("pid_max: %w", err)
	}
	return nil
}

// loopbackUp brings lo up in the jail's fresh network namespace, so
// servers a command starts on 127.0.0.1 are reachable by the command.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS lo: %w", err)
	}
	return nil
}

// devNodes are the host device nodes a jail's private /dev carries.
//
// /dev/tty is not among them: a jailed command has no controlling
// terminal (it runs in a session of its own), and no terminal is reachable
// by path.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// devLinks are the links a jail's private /dev holds, by name.
var devLinks = map[string]string{
	"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
}

// mountDev replaces root+"/dev" with a small tmpfs holding binds of the
// current root's devNodes, the fd/stdin/stdout/stderr links and an empty
// shm directory (root is "" for the current root, or the jail's new root
// while it is being built).
func mountDev(root string) error {
	type held struct {
		name string
		fd   int
	}
	var keep []held
	defer func() {
		for _, h := range keep {
			unix.Close(h.fd)
		}
	}()
	for _, n := range devNodes {
		fd, err := unix.Open("/dev/"+n, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		keep = append(keep, held{n, fd})
	}
	if err := unix.Mount("tmpfs", root+"/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size="+strconv.Itoa(DevBytes)); err != nil {
		return fmt.Errorf("mount /dev tmpfs: %w", err)
	}
	for _, h := range keep {
		p := root + "/dev/" + h.name
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return fmt.Errorf("dev node %s: %w", p, err)
		}
		f.Close()
		if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(h.fd), p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
	}
	for name, target := range devLinks {
		if err := os.Symlink(target, root+"/dev/"+name); err != nil {
			return fmt.Errorf("dev link %s: %w", name, err)
		}
	}
	if err := os.Mkdir(root+shmDir, 0o1777); err != nil {
		return fmt.Errorf("dev shm: %w", err)
	}
	return nil
}

// maxMountinfoBytes bounds how much of /proc/self/mountinfo is read.
const maxMountinfoBytes = 4 << 20

// mountPoints lists the mount points of the calling process's mount
// namespace, in mountinfo order (parents before children). Octal escapes
// (\040 for a space) are decoded.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMountinfoBytes))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		out = append(out, UnescapeMountinfo(fields[4]))
	}
	return out, nil
}

// UnescapeMountinfo decodes the octal escapes (\040 for a space) the
// kernel writes in a field of /proc/*/mountinfo.
func UnescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
