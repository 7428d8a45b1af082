//go:build unix

package blob

import (
	"os"

	"golang.org/x/sys/unix"
)

// renameInto renames oldname in the pinned root to newname in the pinned
// shard directory with renameat(2) on the two directories' descriptors:
// both names are single components resolved in directories already
// pinned, so no link anywhere is followed. shardName is unused here; the
// portable fallback needs it.
func renameInto(root *os.Root, oldname string, shard *os.Root, shardName, newname string) error {
	from, err := root.Open(".")
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := shard.Open(".")
	if err != nil {
		return err
	}
	defer to.Close()
	if err := unix.Renameat(int(from.Fd()), oldname, int(to.Fd()), newname); err != nil {
		return &os.LinkError{Op: "renameat", Old: oldname, New: shardName + "/" + newname, Err: err}
	}
	return nil
}
