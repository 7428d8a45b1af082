// Package proc runs a command in its own jail and returns its output.
//
// The command runs with the workspace as its working directory (or Dir
// under it), network off, no terminal and an environment built from
// nothing; the host's broker decides what else it may read or write, as
// it does for the bash tool. It needs the bash tool: without it a call
// fails with code "tool_not_held". Argv is run directly, not by a
// shell: to use pipes or globbing, run []string{"sh", "-c", "..."}.
//
// A command that exits non-zero is not an error: Result.Exit says how it
// ended. Output is bounded by the host; Truncated says it was cut.
// Calls from many goroutines run concurrently up to the host's
// outstanding-call budget; a call beyond it waits for a slot.
//
// Example:
//
//	r, err := proc.Run(ctx, proc.Cmd{Argv: []string{"go", "vet", "./..."}})
//	if err != nil {
//		panic(err)
//	}
//	if r.Exit != 0 {
//		fmt.Printf("go vet failed (exit %d):\n%s", r.Exit, r.Stderr)
//	}
package proc

import (
	"context"
	"time"

	"cap/internal/client"
)

// Error is the error every cap package returns: proc.Error, fs.Error and
// the rest are one type. Fields: Cap ("proc.run"), Code (a stable
// snake_case word to switch on), Message. See fs.Error for the codes.
type Error = client.Error

// Cmd is a command to run.
type Cmd struct {
	Argv    []string      // the program and its arguments; must not be empty
	Dir     string        // working directory under the workspace; "" is the root
	Stdin   []byte        // the command's standard input; nil is empty
	Timeout time.Duration // kill the command after this long; 0 is the host's default
}

// Result is how a command ended.
type Result struct {
	Exit      int    // exit status; non-zero is still a Result, not an error
	Stdout    []byte // standard output (bounded)
	Stderr    []byte // standard error (bounded)
	Truncated bool   // true when the host's output bound cut Stdout or Stderr
}

// Run runs cmd and waits for it to end. A command that could not start
// (argv[0] not found in the jail) fails with "proc_failed".
func Run(ctx context.Context, cmd Cmd) (Result, error) {
	const name = "proc.run"
	argv := cmd.Argv
	if argv == nil {
		argv = []string{}
	}
	args := map[string]any{"argv": argv}
	if cmd.Dir != "" {
		args["dir"] = cmd.Dir
	}
	if cmd.Stdin != nil {
		args["stdin"] = cmd.Stdin
	}
	if cmd.Timeout > 0 {
		args["timeout_ms"] = max(cmd.Timeout.Milliseconds(), 1)
	}
	m, err := client.Call(ctx, name, args)
	if err != nil {
		return Result{}, err
	}
	r := client.Read(m)
	res := Result{Exit: r.Int("exit"), Stdout: r.Bytes("stdout"), Stderr: r.Bytes("stderr"), Truncated: r.Bool("truncated")}
	return res, r.Err(name)
}
