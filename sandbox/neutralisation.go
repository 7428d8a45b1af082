package sandbox

// Neutralisation is one piece of repository-controlled execution the
// broker disarmed in a writable root after a command: the entries off
// the allowlist of inert keys removed from a git config the command
// created or changed (or made git use, or a core.worktree whose
// directory it re-aimed), or a hook, pointer or config it moved aside
// whole.
type Neutralisation struct {
	// Path is the file (absolute).
	Path string `json:"path"`
	// Removed names the config entries taken out (dotted, as `git config
	// --list` prints them, in file order); empty when the file was moved
	// aside whole.
	Removed []string `json:"removed,omitempty"`
	// MovedTo is where the file was moved aside, when it was.
	MovedTo string `json:"moved_to,omitempty"`
	// Err says why it could not be done; the workspace is then fenced.
	Err string `json:"err,omitempty"`
}
