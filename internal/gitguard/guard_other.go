//go:build !linux

package gitguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"
)

// renameAside renames name in dir beneath root to name +
// QuarantineSuffix + a timestamp (without the no-replace guarantee
// renameat2 gives on Linux).
func renameAside(root *os.Root, dir, name string) (string, error) {
	return renameAsideInto(root, dir, name, root, dir)
}

// renameAsideInto is renameAside, the new name made in the directory
// into, which must lie beneath the same root.
func renameAsideInto(root *os.Root, dir, name string, intoRoot *os.Root, into string) (string, error) {
	if intoRoot != root {
		return "", errors.New("moving aside across pinned directories is not supported on this platform")
	}
	aside := fmt.Sprintf("%s%s-%d", name, QuarantineSuffix, time.Now().UnixNano())
	if _, err := root.Lstat(path.Join(into, aside)); err == nil {
		return "", fs.ErrExist
	}
	if err := root.Rename(path.Join(dir, name), path.Join(into, aside)); err != nil {
		return "", err
	}
	return aside, nil
}

// fingerprintOf identifies the version of a file fi describes, by what
// the portable file info offers.
func fingerprintOf(fi fs.FileInfo) gitFingerprint {
	return gitFingerprint{size: fi.Size(), mode: fi.Mode(), ctime: fi.ModTime().UnixNano()}
}

// gitWatch exists only where inotify does; elsewhere every settle sweeps
// the writable roots whole.
type gitWatch struct{ kick chan struct{} }

func newGitWatch() (*gitWatch, error) { return nil, errors.New("no inotify on this platform") }

func (w *gitWatch) add(string, *os.File) {}

func (w *gitWatch) take(bool) (dirty, fresh []string, whole bool) { return nil, nil, true }

// syncWatch has nothing to wait for where there is no watch.
func syncWatch() bool { return false }

// openChildDir opens the directory name in parent; without openat here,
// through the parent's path (the sweep falls back to the root when this
// fails).
func openChildDir(parent *os.File, name string) (*os.File, error) {
	return nil, errNoChildOpen
}

// ownedByMe cannot be told from portable file info; the directory's mode
// is checked alone.
func ownedByMe(fs.FileInfo) bool { return true }

func (w *gitWatch) count() (uint64, bool) { return 0, false }

func (w *gitWatch) protect(map[string]bool) {}

func (w *gitWatch) retire() {}

// onProcFS: without a portable file-system type, procfs is known by its
// path alone (see special), and /dev/fd, a file system of its own on the
// BSDs and macOS, is taken as one: what it names depends on the reader.
func onProcFS(_ fs.FileInfo, comps []string) bool {
	return len(comps) >= 2 && comps[0] == "dev" && comps[1] == "fd"
}

// quarantineAside cannot move a path aside without following links
// here (no openat2): it refuses.
func quarantineAside(string) (string, error) {
	return "", errors.New("moving a protected path aside is not supported on this platform")
}
