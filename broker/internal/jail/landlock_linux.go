package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentloom/loom/sandbox"
)

// Landlock access rights by the ABI version that introduced them. The
// values are the kernel's (include/uapi/linux/landlock.h).
const (
	llFSExecute    = unix.LANDLOCK_ACCESS_FS_EXECUTE
	llFSWriteFile  = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	llFSReadFile   = unix.LANDLOCK_ACCESS_FS_READ_FILE
	llFSReadDir    = unix.LANDLOCK_ACCESS_FS_READ_DIR
	llFSRemoveDir  = unix.LANDLOCK_ACCESS_FS_REMOVE_DIR
	llFSRemoveFile = unix.LANDLOCK_ACCESS_FS_REMOVE_FILE
	llFSMakeChar   = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR
	llFSMakeDir    = unix.LANDLOCK_ACCESS_FS_MAKE_DIR
	llFSMakeReg    = unix.LANDLOCK_ACCESS_FS_MAKE_REG
	llFSMakeSock   = unix.LANDLOCK_ACCESS_FS_MAKE_SOCK
	llFSMakeFifo   = unix.LANDLOCK_ACCESS_FS_MAKE_FIFO
	llFSMakeBlock  = unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	llFSMakeSym    = unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	llFSRefer      = unix.LANDLOCK_ACCESS_FS_REFER     // ABI 2
	llFSTruncate   = unix.LANDLOCK_ACCESS_FS_TRUNCATE  // ABI 3
	llFSIoctlDev   = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV // ABI 5

	llNetBindTCP    = unix.LANDLOCK_ACCESS_NET_BIND_TCP    // ABI 4
	llNetConnectTCP = unix.LANDLOCK_ACCESS_NET_CONNECT_TCP // ABI 4

	llScopeAbstractUnix = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET // ABI 6
	llScopeSignal       = unix.LANDLOCK_SCOPE_SIGNAL               // ABI 6

	llFSABI1 = llFSExecute | llFSWriteFile | llFSReadFile | llFSReadDir |
		llFSRemoveDir | llFSRemoveFile | llFSMakeChar | llFSMakeDir |
		llFSMakeReg | llFSMakeSock | llFSMakeFifo | llFSMakeBlock | llFSMakeSym

	// llFSRead is what a readable root grants.
	llFSRead = llFSExecute | llFSReadFile | llFSReadDir
	// llFSFileOnly are the rights that may be attached to a rule on a
	// non-directory; the kernel refuses directory rights there.
	llFSFileOnly = llFSExecute | llFSWriteFile | llFSReadFile | llFSTruncate | llFSIoctlDev
)

// LandlockMaxKnownABI is the newest Landlock ABI whose rights this package
// knows. A newer kernel is used at this level: every right handled is one
// this file can name.
const LandlockMaxKnownABI = 7

// landlockRulesetAttr mirrors struct landlock_ruleset_attr as of ABI 6
// (handled_access_fs, handled_access_net, scoped). The size passed to the
// kernel is trimmed to what the ABI in use understands.
type landlockRulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64
	scoped           uint64
}

// landlockPathBeneathSize is the size of struct landlock_path_beneath_attr
// (__u64 allowed_access; __s32 parent_fd), which the kernel declares
// packed; rules are encoded into a byte array of this size.
const landlockPathBeneathSize = 12

// LandlockABI asks the kernel which Landlock ABI it offers. It returns
// 0 and the errno when Landlock is unavailable (ENOSYS: not built;
// EOPNOTSUPP: built but disabled at boot).
func LandlockABI() (int, error) {
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// landlockRights returns the filesystem rights, network rights and scopes
// an ABI version knows.
func landlockRights(abi int) (fs, net, scoped uint64) {
	if abi > LandlockMaxKnownABI {
		abi = LandlockMaxKnownABI
	}
	if abi >= 1 {
		fs = llFSABI1
	}
	if abi >= 2 {
		fs |= llFSRefer
	}
	if abi >= 3 {
		fs |= llFSTruncate
	}
	if abi >= 4 {
		net = llNetBindTCP | llNetConnectTCP
	}
	if abi >= 5 {
		fs |= llFSIoctlDev
	}
	if abi >= 6 {
		scoped = llScopeAbstractUnix | llScopeSignal
	}
	return fs, net, scoped
}

// landlockPlan is the rule set one command runs under.
type landlockPlan struct {
	ABI        int
	Read       []string // read and execute beneath
	Write      []string // every handled right beneath
	FileRW     []string // read and write a single file (e.g. /dev/null)
	FileWrite  []string // write and truncate existing files (carved roots)
	NetworkOff bool     // handle TCP bind/connect with no rule: all denied
}

// applyLandlock builds the ruleset and restricts the calling thread. It
// must run after PR_SET_NO_NEW_PRIVS. Every rule's path is opened without
// following any link (see openNoFollow): a root that is, or is reached
// through, a symbolic link gets no rule at all, so a link can never widen
// a rule; those paths are returned. Paths that do not exist are skipped.
func applyLandlock(p landlockPlan) (linked []string, err error) {
	fsAll, netAll, scoped := landlockRights(p.ABI)
	attr := landlockRulesetAttr{handledAccessFS: fsAll, scoped: scoped}
	if p.NetworkOff {
		attr.handledAccessNet = netAll
	}
	size := unsafe.Sizeof(attr)
	switch {
	case p.ABI < 4:
		size = 8 // handled_access_fs only
	case p.ABI < 6:
		size = 16
	}
	rfd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return nil, fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	fd := int(rfd)
	defer unix.Close(fd)

	add := func(path string, access uint64) error {
		pfd, err := openNoFollow(path)
		if err != nil {
			if errors.Is(err, unix.ELOOP) {
				linked = append(linked, path)
				return nil
			}
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				return nil
			}
			return fmt.Errorf("open %s: %w", path, err)
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			return fmt.Errorf("stat %s: %w", path, err)
		}
		access &= fsAll
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= llFSFileOnly
		}
		if access == 0 {
			return nil
		}
		var buf [landlockPathBeneathSize]byte
		*(*uint64)(unsafe.Pointer(&buf[0])) = access
		*(*int32)(unsafe.Pointer(&buf[8])) = int32(pfd)
		_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH,
			uintptr(unsafe.Pointer(&buf[0])), 0, 0, 0)
		if e != 0 {
			return fmt.Errorf("landlock_add_rule %s: %w", path, e)
		}
		return nil
	}
	for _, r := range p.Read {
		if err := add(r, llFSRead); err != nil {
			return linked, err
		}
	}
	for _, w := range p.Write {
		if err := add(w, fsAll); err != nil {
			return linked, err
		}
	}
	for _, f := range p.FileWrite {
		if err := add(f, llFSRead|llFSWriteFile|llFSTruncate); err != nil {
			return linked, err
		}
	}
	for _, f := range p.FileRW {
		if err := add(f, llFSReadFile|llFSWriteFile|llFSTruncate|llFSIoctlDev); err != nil {
			return linked, err
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
		return linked, fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return linked, nil
}

// devNull is the one device a jailed command may always write.
const devNull = os.DevNull

// MaxCarveEntries bounds how many directory entries carveWritable
// inspects for one command; past it the remaining entries of a split
// directory stay read-only (failing closed).
const MaxCarveEntries = 4096

// carveWritable splits writable roots around protected paths for a jail
// without a mount namespace, where nothing can bind a protected path
// read-only and Landlock can only add rights. A writable root holding no
// protected path is granted whole. One that does is replaced by rules on
// its children, recursively down every directory leading to a protected
// path: siblings are granted whole (directories) or as files (write and
// truncate, not create or remove), symlinks are never followed, and the
// split directories themselves stay read-only — nothing can be created,
// removed or renamed directly in them. It returns the directory rules,
// the file rules and how many directories were split.
func carveWritable(writable, protected []string) (dirs, files []string, split int) {
	var prot []string
	for _, p := range protected {
		prot = append(prot, filepath.Clean(p))
		if real, err := filepath.EvalSymlinks(p); err == nil {
			prot = append(prot, real)
		}
	}
	budget := MaxCarveEntries
	var walk func(dir string)
	walk = func(dir string) {
		holds := false
		for _, p := range prot {
			if p == dir {
				return // protected itself: read-only
			}
			if sandbox.Covers(dir, p) {
				holds = true
			}
		}
		if !holds {
			dirs = append(dirs, dir)
			return
		}
		split++
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			if budget--; budget < 0 {
				return
			}
			child := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				walk(child)
			case e.Type()&os.ModeSymlink != 0:
				// A rule opens its path, following a link: never grant one.
			case slices.Contains(prot, child):
			default:
				files = append(files, child)
			}
		}
	}
	for _, w := range writable {
		walk(filepath.Clean(w))
	}
	return dirs, files, split
}
