package sandbox

import "path/filepath"

// ScratchDir is where a jailed command finds its private scratch
// directory: a tmpfs of its own, bounded, gone when the command ends.
const ScratchDir = "/tmp"

// ScratchBytes bounds the private tmpfs mounted at ScratchDir inside the jail
// (per command; it vanishes with the command's mount namespace).
const ScratchBytes = 1 << 30

// ReplacedRoots returns the directories every jail mounts its own copy
// of (/proc, /dev and ScratchDir), each time a fresh slice.
func ReplacedRoots() []string { return []string{"/proc", "/dev", ScratchDir} }

// Covers reports whether path is root or lies under it, comparing whole
// path components on the cleaned forms: "/w/.git" covers "/w/.git/hooks"
// but not "/w/.gitx". An absolute root never covers a relative path and a
// relative root never covers an absolute one. The empty string covers
// nothing and is covered by nothing. Covers does not touch the filesystem.
func Covers(root, path string) bool {
	if root == "" || path == "" {
		return false
	}
	if filepath.IsAbs(root) != filepath.IsAbs(path) {
		return false
	}
	root, path = filepath.Clean(root), filepath.Clean(path)
	if root == path {
		return true
	}
	if root == string(filepath.Separator) {
		return true
	}
	return len(path) > len(root) && path[len(root)] == filepath.Separator && path[:len(root)] == root
}
