//go:build unix

package lsp

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// scanWorkspace records every file under ws that want accepts. It walks
// by descriptor: each directory is opened relative to its parent's
// descriptor, refusing a link or anything not a directory (a directory
// swapped for a link mid-walk is not followed, a FIFO is not opened), and
// each file is examined relative to its directory's, never by a path
// resolved again. It reads each directory in batches of scanBatch
// entries, counting as it goes, and gives up when ctx ends. ok is false
// when the workspace is past maxScanEntries or maxWatchedFiles, could
// not be walked, or ctx ended.
func scanWorkspace(ctx context.Context, ws string, want func(string) bool) (files map[string]stamp, ok bool) {
	fd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	sc := &scan{ctx: ctx, want: want, files: map[string]stamp{}}
	if sc.dir(os.NewFile(uintptr(fd), ws), ws) != nil {
		return nil, false
	}
	return sc.files, true
}

// scanBatch is how many entries a scan reads of a directory at once.
const scanBatch = 256

// scan is one walk of a workspace.
type scan struct {
	ctx     context.Context
	want    func(string) bool
	files   map[string]stamp
	entries int
}

// dir records what want accepts under the directory f, the path p, and
// closes f. An error stops the whole scan.
func (sc *scan) dir(f *os.File, p string) error {
	defer f.Close()
	fd := int(f.Fd())
	for {
		if err := sc.ctx.Err(); err != nil {
			return err
		}
		batch, err := f.ReadDir(scanBatch)
		for _, d := range batch {
			sc.entries++
			if sc.entries > maxScanEntries {
				return errTooLarge
			}
			name := d.Name()
			child := p + "/" + name
			switch {
			case d.IsDir():
				if skipDir(name) {
					continue
				}
				sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					continue // vanished, unreadable, or no longer a directory: not recorded
				}
				if err := sc.dir(os.NewFile(uintptr(sub), child), child); err != nil {
					return err
				}
			case d.Type().IsRegular() && sc.want(child):
				var st unix.Stat_t
				if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
					continue
				}
				// As os.Lstat makes it, so it compares with statFile's.
				sc.files[child] = stamp{size: st.Size, mtime: time.Unix(st.Mtim.Unix()), ino: uint64(st.Ino)}
				if len(sc.files) > maxWatchedFiles {
					return errTooLarge
				}
			}
		}
		if err != nil || len(batch) == 0 {
			return nil // the end of the directory, or one that cannot be read further
		}
	}
}
