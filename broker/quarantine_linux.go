package broker

import (
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// quarantineAside renames path (which must have no symlink in any
// component, so a command cannot redirect the rename elsewhere) to a
// sibling named path + QuarantineSuffix + a timestamp, and returns the
// new path.
func quarantineAside(path string) (string, error) {
	dir, name := filepath.Split(filepath.Clean(path))
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return "", fmt.Errorf("open %s without following links: %s", dir, errnoName(err))
	}
	defer unix.Close(fd)
	aside := fmt.Sprintf("%s%s-%d", name, QuarantineSuffix, time.Now().UnixNano())
	if err := unix.Renameat2(fd, name, fd, aside, unix.RENAME_NOREPLACE); err != nil {
		return "", fmt.Errorf("rename %s: %s", path, errnoName(err))
	}
	return filepath.Join(dir, aside), nil
}
