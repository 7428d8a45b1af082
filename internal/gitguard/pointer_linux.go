package gitguard

import (
	"io/fs"
	"strings"

	"golang.org/x/sys/unix"
)

// onProcFS reports whether the directory comps (fi its lstat) is on a
// procfs, wherever that is mounted: its entries (self, <pid>/root,
// <pid>/cwd, <pid>/fd) mean something else to each process that reads
// them.
func onProcFS(_ fs.FileInfo, comps []string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs("/"+strings.Join(comps, "/"), &st); err != nil {
		return false
	}
	return st.Type == unix.PROC_SUPER_MAGIC
}
