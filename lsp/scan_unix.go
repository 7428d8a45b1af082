//go:build unix

package lsp

import (
	"context"
	"os"
	"syscall"
)

// scanWorkspace records every file under ws that want accepts, without
// following links. It reads each directory in batches of scanBatch
// entries, counting as it goes, and gives up when ctx ends. ok is false
// when the workspace is past MaxScanEntries or MaxWatchedFiles, could
// not be walked, or ctx ended.
func scanWorkspace(ctx context.Context, ws string, want func(string) bool) (files map[string]stamp, ok bool) {
	f, err := os.OpenFile(ws, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, false
	}
	sc := &scan{ctx: ctx, want: want, files: map[string]stamp{}}
	if sc.dir(f, ws) != nil {
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
	for {
		if err := sc.ctx.Err(); err != nil {
			return err
		}
		batch, err := f.ReadDir(scanBatch)
		for _, d := range batch {
			sc.entries++
			if sc.entries > MaxScanEntries {
				return errTooLarge
			}
			name := d.Name()
			child := p + "/" + name
			switch {
			case d.IsDir():
				if skipDir(name) {
					continue
				}
				sub, err := os.OpenFile(child, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
				if err != nil {
					continue // a directory that vanished or cannot be read is not recorded
				}
				if err := sc.dir(sub, child); err != nil {
					return err
				}
			case d.Type().IsRegular() && sc.want(child):
				if st, ok := statFile(child); ok {
					sc.files[child] = st
					if len(sc.files) > MaxWatchedFiles {
						return errTooLarge
					}
				}
			}
		}
		if err != nil || len(batch) == 0 {
			return nil // the end of the directory, or one that cannot be read further
		}
	}
}
