// Package job starts and drives background commands that outlive one
// call (and may outlive the program): a server, a long build, a watcher.
//
// A job runs in the host's jail exactly as the bash tool's background
// mode does, and these calls fail with the codes the job_* tools use:
// "unknown_job" (no job with that handle), "job_ceiling_reached" (too
// many jobs; waiting for one to end frees a slot), "no_job_plane" (the
// host runs no jobs), "invalid_cursor", "job_clearance_refused".
// Starting needs the bash tool, Poll and List the job_poll tool, Send
// and Kill the job_send and job_kill tools; without one a call fails
// with "tool_not_held".
//
// A job's State is "starting", "running", "exited", "killed", "lost" or
// "refused"; only an ended job carries an exit status.
//
// Example:
//
//	h, err := job.Start(ctx, "go test ./...", "")
//	if err != nil {
//		panic(err)
//	}
//	cursor := ""
//	for {
//		s, err := job.Poll(ctx, h, job.PollOptions{Cursor: cursor, Wait: 5 * time.Second})
//		if err != nil {
//			panic(err)
//		}
//		fmt.Print(string(s.Stdout))
//		cursor = s.Cursor
//		if s.HasExit {
//			fmt.Println("exit", s.Exit)
//			break
//		}
//	}
package job

import (
	"context"
	"time"

	"cap/internal/client"
)

// Error is the error every cap package returns: job.Error, fs.Error and
// the rest are one type. Fields: Cap (e.g. "job.poll"), Code (a stable
// snake_case word to switch on), Message. See fs.Error for the codes.
type Error = client.Error

// Start starts command (a shell command line, as bash runs it) in dir
// under the workspace ("" is the root) and returns the job's handle.
func Start(ctx context.Context, command, dir string) (handle string, err error) {
	return start(ctx, command, dir, false)
}

// StartForSession is Start for a job with no wall deadline, which runs
// until it ends or is killed: only when the code_mode call declared
// permissions {"wall_s": 0}, never from a sub-agent.
func StartForSession(ctx context.Context, command, dir string) (handle string, err error) {
	return start(ctx, command, dir, true)
}

func start(ctx context.Context, command, dir string, session bool) (string, error) {
	const name = "job.start"
	args := map[string]any{"command": command}
	if session {
		args["session"] = true
	}
	if dir != "" {
		args["dir"] = dir
	}
	m, err := client.Call(ctx, name, args)
	if err != nil {
		return "", err
	}
	r := client.Read(m)
	handle := r.Str("handle")
	return handle, r.Err(name)
}

// PollOptions say where to read from and how long to wait.
type PollOptions struct {
	Cursor string        // the Cursor of the previous Status; "" reads from the start
	Wait   time.Duration // wait up to this long for new output or an end; 0 answers at once
}

// Status is a job's state and the output since the cursor.
type Status struct {
	State   string // "starting", "running", "exited", "killed", "lost" or "refused"
	Stdout  []byte // output since the cursor
	Stderr  []byte
	Cursor  string // pass to the next Poll to read on from here
	Exit    int    // the exit status; meaningful only when HasExit
	HasExit bool   // true once the job has ended with a status
}

// Poll returns the job's state and the output written since o.Cursor.
func Poll(ctx context.Context, handle string, o PollOptions) (Status, error) {
	const name = "job.poll"
	args := map[string]any{"handle": handle}
	if o.Cursor != "" {
		args["cursor"] = o.Cursor
	}
	if o.Wait > 0 {
		args["wait_ms"] = max(o.Wait.Milliseconds(), 1)
	}
	m, err := client.Call(ctx, name, args)
	if err != nil {
		return Status{}, err
	}
	r := client.Read(m)
	s := Status{State: r.Str("state"), Stdout: r.Bytes("stdout"), Stderr: r.Bytes("stderr"), Cursor: r.Str("cursor")}
	s.Exit, s.HasExit = r.OptInt("exit")
	return s, r.Err(name)
}

// Summary is one row of List.
type Summary struct {
	Handle  string
	Command string
	State   string
}

// List returns the jobs this strand started.
func List(ctx context.Context) ([]Summary, error) {
	const name = "job.list"
	m, err := client.Call(ctx, name, map[string]any{})
	if err != nil {
		return nil, err
	}
	r := client.Read(m)
	var out []Summary
	r.Maps("jobs", func(f *client.Fields) {
		out = append(out, Summary{Handle: f.Str("handle"), Command: f.Str("command"), State: f.Str("state")})
	})
	return out, r.Err(name)
}

// Send writes input to the job's standard input and, when closeStdin is
// true, closes it afterwards. It returns the bytes written.
func Send(ctx context.Context, handle string, input []byte, closeStdin bool) (int, error) {
	const name = "job.send"
	if input == nil {
		input = []byte{}
	}
	args := map[string]any{"handle": handle, "input": input}
	if closeStdin {
		args["close"] = true
	}
	m, err := client.Call(ctx, name, args)
	if err != nil {
		return 0, err
	}
	r := client.Read(m)
	n := r.Int("bytes")
	return n, r.Err(name)
}

// Killed is a job's state after Kill.
type Killed struct {
	State   string
	Exit    int  // meaningful only when HasExit
	HasExit bool // true when the job ended with a status
}

// Kill ends the job and its processes.
func Kill(ctx context.Context, handle string) (Killed, error) {
	const name = "job.kill"
	m, err := client.Call(ctx, name, map[string]any{"handle": handle})
	if err != nil {
		return Killed{}, err
	}
	r := client.Read(m)
	k := Killed{State: r.Str("state")}
	k.Exit, k.HasExit = r.OptInt("exit")
	return k, r.Err(name)
}
