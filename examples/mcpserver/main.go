// Command mcpserver serves Loom's built-in tools to an MCP client over
// standard input and output: the hashline file tools (fs_read, fs_write,
// fs_edit), working_directory, grep and, where the library provides it,
// the jailed bash shell, all confined to one workspace directory.
//
//	go run ./examples/mcpserver -workspace /path/to/project
//
// The jail is on: commands run under the broker's kernel jail (user,
// mount and network namespaces, Landlock, seccomp), may write only inside
// the workspace, never into .git/hooks or .git/config, and have no
// network. When the host offers no confinement layer at all, commands are
// refused unless -allow-unconfined is given. See README.md for the client
// configuration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
	"github.com/agentloom/loom/tool/mcpserve"
)

// blobDir is where overflowing output is stored, relative to the workspace.
const blobDir = ".loom/blobs"

// commandPath is the PATH commands see.
const commandPath = "/usr/local/bin:/usr/bin:/bin"

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}

// planeCloseWait bounds how long shutdown waits for background jobs to be
// killed and reaped.
const planeCloseWait = 10 * time.Second

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workspace := fs.String("workspace", ".", "the directory the tools work in (default: the current directory)")
	unconfined := fs.Bool("allow-unconfined", false, "run commands even when this host offers no confinement layer at all")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	session, err := newSession(*workspace, *unconfined)
	if err != nil {
		return err
	}
	plane := job.NewPlane(session.Broker, job.Options{Blobs: session.Blobs})
	session.Jobs = plane
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), planeCloseWait)
		defer cancel()
		plane.Close(ctx)
	}()
	reg, err := tool.NewRegistry(builtinTools(plane)...)
	if err != nil {
		return err
	}
	srv, err := mcpserve.New(reg, session, &mcpserve.Options{
		Name:         "loom",
		Instructions: "Tools over the workspace " + session.Workspace + ". Read files with fs_read before editing them with fs_edit.",
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.ServeStdio(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// newSession builds the call template every request copies: the
// workspace, a base policy that lets commands read the system and the
// workspace and write the workspace only (network off, .git hooks and
// config protected), a broker running the jail, and a blob store.
func newSession(workspace string, allowUnconfined bool) (*tool.Call, error) {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, err
	}
	ws, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if fi, err := os.Stat(ws); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", ws)
	}
	blobs, err := blob.Open(filepath.Join(ws, blobDir))
	if err != nil {
		return nil, err
	}
	base := broker.Policy{
		ReadableRoots: append([]string{ws}, broker.SystemReadableRoots()...),
		WritableRoots: []string{ws},
		Protected:     broker.DefaultProtected(ws),
		Network:       broker.NetworkOff,
		EnvAllow:      []string{"PATH", "HOME", "LANG", "TERM", "TMPDIR"},
	}
	if err := broker.Validate(base); err != nil {
		return nil, err
	}
	return &tool.Call{
		Workspace: ws,
		Strand:    "mcp",
		Base:      base,
		Env:       map[string]string{"PATH": commandPath, "HOME": ws, "LANG": "C.UTF-8", "TERM": "dumb"},
		Shell:     &tool.Shell{},
		Broker:    broker.New(broker.Options{AllowUnconfined: allowUnconfined}),
		Blobs:     blobs,
	}, nil
}
