//go:build !unix

package blob

import "os"

// renameInto renames oldname in the pinned root to shardName/newname
// beneath it. Without renameat the rename goes through os.Root, which
// never leaves the root but would follow a link swapped in for the shard
// directory after openShard checked it to another directory of the same
// store; the unix build has no such window.
func renameInto(root *os.Root, oldname string, _ *os.Root, shardName, newname string) error {
	return root.Rename(oldname, shardName+"/"+newname)
}
