package lsp

import (
	"errors"
	"os"
	"strings"
	"time"
)

// Bounds on the scan that finds what changed on disk between two
// diagnoses (a command's edits, a generator's output), so the server
// hears of it before it diagnoses a write.
const (
	// maxScanEntries bounds the directory entries one scan visits. A
	// workspace past it is not scanned at all: its server is told only of
	// the files Loom writes, and Status says so.
	maxScanEntries = 200_000
	// maxWatchedFiles bounds the files one scan records (those a server
	// owns or watches); past it, as past maxScanEntries.
	maxWatchedFiles = 50_000
	// maxEventsPerNotice bounds the changes one
	// workspace/didChangeWatchedFiles carries; more are sent in several.
	maxEventsPerNotice = 1000
)

// LSP's FileChangeType.
const (
	fileCreated = 1
	fileChanged = 2
	fileDeleted = 3
)

// stamp is what a scan compares of a file.
type stamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

// fileEvent is one change on disk.
type fileEvent struct {
	URI  string `json:"uri"`
	Type int    `json:"type"`
}

// skipDir reports whether a scan leaves the directory name out: a dot
// directory (.git, caches), or node_modules.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules"
}

// errTooLarge stops a scan past its bounds.
var errTooLarge = errors.New("the workspace is past the scan's bounds")

// changes returns the events that turn before into after.
func changes(before, after map[string]stamp) []fileEvent {
	var out []fileEvent
	for p, s := range after {
		if old, ok := before[p]; !ok {
			out = append(out, fileEvent{URI: fileURI(p), Type: fileCreated})
		} else if old != s {
			out = append(out, fileEvent{URI: fileURI(p), Type: fileChanged})
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, fileEvent{URI: fileURI(p), Type: fileDeleted})
		}
	}
	return out
}

// statFile returns the stamp of the regular file p, not following a
// link, and whether it is one.
func statFile(p string) (stamp, bool) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return stamp{}, false
	}
	return stampOf(fi), true
}
