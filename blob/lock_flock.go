//go:build unix && !aix

package blob

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ledgerSupported reports whether this platform has the advisory locks
// (flock) the ledger needs to tell a live session's lease from a stale
// one across processes.
const ledgerSupported = true

// lockFile takes an flock(2) lock on f's open file description: shared
// or exclusive, waiting for it when wait is set and failing with
// errLocked at once otherwise. Two descriptors opened separately
// conflict even within one process, which is what lets one process's
// Stores see each other's leases.
func lockFile(f *os.File, exclusive, wait bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if !wait {
		how |= unix.LOCK_NB
	}
	for {
		err := unix.Flock(int(f.Fd()), how)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return errLocked
		default:
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
	}
}

// unlockFile releases f's lock. Closing f releases it too.
func unlockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}

// touchFile sets f's access and modification times to t through its
// descriptor, never through a path.
func touchFile(f *os.File, t time.Time) error {
	tv := unix.NsecToTimeval(t.UnixNano())
	if err := unix.Futimes(int(f.Fd()), []unix.Timeval{tv, tv}); err != nil {
		return &os.PathError{Op: "futimes", Path: f.Name(), Err: err}
	}
	return nil
}

// unlinkIn removes the entry name directly beneath dir with
// unlinkat(2) and no flags: a link is removed itself, never followed,
// and a directory is refused, never removed.
func unlinkIn(dir *os.Root, name string) error {
	d, err := dir.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Unlinkat(int(d.Fd()), name, 0); err != nil {
		return &os.PathError{Op: "unlinkat", Path: name, Err: err}
	}
	return nil
}
