package broker

import "github.com/agentloom/loom/internal/gitguard"

// MaxGitDirtyDirs bounds how many changed directories the watcher keeps
// for one writable root between sweeps; past it the root is swept whole,
// as after an inotify queue overflow.
const MaxGitDirtyDirs = gitguard.MaxDirtyDirs
