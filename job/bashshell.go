package job

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentloom/loom/sandbox"
)

// The shells bash runs a command with.
const (
	// bashShell is the shell bash looks for, by name, on the PATH the
	// command gets inside the sandbox.
	bashShell = "bash"
	// fallbackShell runs the command when the sandbox shows no bash; the
	// answer then says so (BashDetails.Shell, and a note).
	fallbackShell = "/bin/sh"
	// jailDefaultPath is where bash is looked for when the command gets
	// no PATH (the policy's EnvAllow does not pass it).
	jailDefaultPath = "/usr/local/bin:/usr/bin:/bin"
)

// jailShell returns the shell a command runs with as the jail will see
// it: the first bashShell in a directory of the PATH the command gets
// (env's PATH when pol passes it, else jailDefaultPath) that lies under
// one of pol's system or readable roots, as the file it resolves to;
// failing that fallbackShell when it lies under one of them (fallback
// true); found false when neither does. The host's own PATH plays no
// part: a bash the host has where the jail shows nothing is no shell for
// the command. Writable roots are not searched, so a shell a command
// planted there is never chosen by the harness.
func jailShell(env map[string]string, pol sandbox.Policy) (shell string, fallback, found bool) {
	var roots []string
	for _, r := range slices.Concat(pol.SystemRoots, pol.ReadableRoots) {
		if real, err := filepath.EvalSymlinks(r); err == nil {
			roots = append(roots, real)
		}
	}
	path := jailDefaultPath
	if p, ok := env["PATH"]; ok && slices.Contains(pol.EnvAllow, "PATH") {
		path = p
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue // a relative entry names a directory of the command's cwd, not a shell the harness picks
		}
		if p, ok := visibleExecutable(filepath.Join(dir, bashShell), roots); ok {
			return p, false, true
		}
	}
	if p, ok := visibleExecutable(fallbackShell, roots); ok {
		return p, true, true
	}
	return "", false, false
}

// visibleExecutable resolves path and returns the file it resolves to
// when that is an executable regular file under one of roots (each
// already resolved): the jail binds the file there, whatever links led
// to it.
func visibleExecutable(path string, roots []string) (string, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", false
	}
	for _, r := range roots {
		if sandbox.Covers(r, real) {
			return real, true
		}
	}
	return "", false
}

// jailPathShown is the PATH jailShell searched, for a message.
func jailPathShown(env map[string]string, pol sandbox.Policy) string {
	if p, ok := env["PATH"]; ok && slices.Contains(pol.EnvAllow, "PATH") {
		return "PATH=" + strings.TrimSpace(p)
	}
	return "no PATH passed, so " + jailDefaultPath
}
