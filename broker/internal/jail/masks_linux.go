package jail

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxPasswdBytes bounds how much of the host's /etc/passwd the helper
// reads to find home directories.
const maxPasswdBytes = 1 << 20

// hostHomes returns the home directories of the host's /etc/passwd
// (other than "/") and home, the command's own HOME when absolute.
func hostHomes(home string) []string {
	var out []string
	if filepath.IsAbs(home) {
		out = append(out, filepath.Clean(home))
	}
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxPasswdBytes))
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 6 && filepath.IsAbs(fields[5]) && filepath.Clean(fields[5]) != "/" {
			out = append(out, filepath.Clean(fields[5]))
		}
	}
	// A home named through a link (/home -> /data/home) is reached by
	// roots written as where it resolves: mask both forms.
	for _, h := range out {
		if r, err := filepath.EvalSymlinks(h); err == nil && r != h {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// masker hides paths in the jail's mount table under empty, read-only
// stand-ins: a directory under an empty directory, anything else under
// an empty regular file. The stand-ins are clones of one small tmpfs
// that is never attached anywhere a command could see it.
type masker struct {
	fs   int // the detached tmpfs (an fsmount fd), 0 before first use
	noFS bool
}

// Names in the detached tmpfs.
const (
	maskFile = "f"
	maskDir  = "d"
)

// maskStandinBytes sizes the detached tmpfs: it holds one empty file and
// one empty directory, and nothing can write to it.
const maskStandinBytes = 4096

func (m *masker) standins() error {
	if m.fs > 0 || m.noFS {
		return nil
	}
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err == unix.ENOSYS {
		m.noFS = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fs)
	for k, v := range map[string]string{"size": strconv.Itoa(maskStandinBytes), "mode": "0755"} {
		if err := unix.FsconfigSetString(fs, k, v); err != nil {
			return fmt.Errorf("fsconfig %s: %w", k, err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("fsconfig create: %w", err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("fsmount: %w", err)
	}
	fd, err := unix.Openat(mnt, maskFile, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o444)
	if err == nil {
		unix.Close(fd)
		err = unix.Mkdirat(mnt, maskDir, 0o555)
	}
	if err == nil {
		err = unix.MountSetattr(mnt, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	}
	if err != nil {
		unix.Close(mnt)
		return fmt.Errorf("mask stand-ins: %w", err)
	}
	m.fs = mnt
	return nil
}

// mask hides path. A path that is (or is reached through) a symbolic
// link has its resolved target hidden instead. It returns false when
// nothing exists there.
func (m *masker) mask(path string) (bool, error) {
	fd, err := openNoFollow(path)
	if err == unix.ELOOP {
		if real, rerr := filepath.EvalSymlinks(path); rerr == nil {
			fd, err = openNoFollow(real)
		}
	}
	if err != nil {
		return false, nil
	}
	defer unix.Close(fd)
	return m.maskFD(fd, path)
}

// maskAt hides name, a path relative to the directory dir that holds no
// link (a link there fails), as mask hides a path. It returns false when
// nothing exists there.
func (m *masker) maskAt(dir int, name string) (bool, error) {
	fd, err := unix.Openat2(dir, name, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
	})
	switch {
	case err == unix.ENOENT:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("open %s: %w", name, err)
	}
	defer unix.Close(fd)
	return m.maskFD(fd, name)
}

// maskFD hides the file or directory fd names (path says which, in
// errors).
func (m *masker) maskFD(fd int, path string) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if err := m.standins(); err != nil {
		return false, err
	}
	if m.noFS {
		// Before Linux 5.2: a fresh read-only tmpfs, or /dev/null.
		target := "/proc/self/fd/" + strconv.Itoa(fd)
		var err error
		if isDir {
			err = unix.Mount("tmpfs", target, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size="+strconv.Itoa(maskStandinBytes)+",mode=0555")
		} else {
			err = unix.Mount(devNull, target, "", unix.MS_BIND, "")
		}
		if err != nil {
			return false, fmt.Errorf("mask %s: %w", path, err)
		}
		return true, nil
	}
	name := maskFile
	if isDir {
		name = maskDir
	}
	clone, err := unix.OpenTree(m.fs, name, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return false, fmt.Errorf("open_tree mask: %w", err)
	}
	defer unix.Close(clone)
	if err := unix.MoveMount(clone, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return false, fmt.Errorf("mask %s: %w", path, err)
	}
	return true, nil
}

func (m *masker) close() {
	if m.fs > 0 {
		unix.Close(m.fs)
	}
	m.fs = 0
}

// maskAll hides every path in paths that exists, and returns how many,
// with the stand-ins of the helper's prepared masker (see
// prepareHelper), made now if it has none; the masker is closed after.
func maskAll(paths []string) (int, error) {
	m := &helperPrepared.masker
	defer m.close()
	n := 0
	var st unix.Stat_t
	for _, p := range paths {
		if unix.Lstat(p, &st) != nil {
			continue // nothing there: the cheap answer for most candidates
		}
		ok, err := m.mask(p)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// procMasked are the files and directories of a fresh /proc that show
// kernel-wide state rather than the jail's processes (the list container
// runtimes mask): physical memory as a core file, every key the caller
// can see, every CPU's timers with their owners' addresses, the
// scheduler's internals, latency and timer statistics, ACPI and SCSI
// device state. The jail hides each that exists under an empty,
// read-only stand-in before /proc/sys goes read-only.
var procMasked = []string{
	"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
	"/proc/latency_stats", "/proc/timer_stats", "/proc/acpi", "/proc/scsi",
}

// sysMasked are the parts of the host's /sys that show firmware state
// (ACPI tables, the firmware memory map); the jail masks them when a
// root makes them visible.
var sysMasked = []string{"/sys/firmware"}

// sysMaskTargets returns the entries of sysMasked that visible (the
// roots the jail may read) covers.
func sysMaskTargets(visible []string) []string {
	var out []string
	for _, p := range sysMasked {
		if coveredByAny(visible, p) {
			out = append(out, p)
		}
	}
	return out
}

// MaskTargets returns the paths the jail masks for a command whose
// roots are visible and whose HOME is home, before it checks which
// exist: the secrets (secretTargets, against the homes of the host's
// /etc/passwd), the host's firmware state under /sys a root shows and
// the kernel-wide files of its /proc. The host's sockets are not among
// them (the broker lists those).
func MaskTargets(visible []string, home string) []string {
	return slices.Concat(secretTargets(visible, hostHomes(home), globPaths), sysMaskTargets(visible), procMasked)
}
