// Command mcpserver serves Loom's built-in tools to an MCP client over
// standard input and output: the hashline file tools (fs_read, fs_write,
// fs_edit), working_directory, grep and, where the library provides it,
// the jailed bash shell, all confined to one workspace directory.
//
//	go run ./examples/mcpserver -workspace /path/to/project
//
// The jail is on: commands run under the broker's kernel jail (user,
// mount and network namespaces, Landlock, seccomp), may write only inside
// the workspace and the session's scratch directory, never into
// .git/hooks or .git/config, and have no network. When the host offers no
// confinement layer at all, commands are refused unless -allow-unconfined
// is given. See README.md for the client configuration.
//
// Nothing of the server's own lives in the workspace: the blob store
// (overflowing output) is in the user cache directory
// (<cache>/loom/blobs, or -blobs), outside every tree a command can
// write, and the scratch directory commands see as TMPDIR is a fresh
// directory under <cache>/loom/scratch (or -scratch), removed when the
// server exits.
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
	"strings"
	"syscall"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
	"github.com/agentloom/loom/tool/mcpserve"
)

// scratchDir is where per-session scratch directories are made, under
// the user cache directory.
const scratchDir = "loom/scratch"

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
	var cfg config
	fs.StringVar(&cfg.workspace, "workspace", ".", "the directory the tools work in (default: the current directory)")
	fs.StringVar(&cfg.blobs, "blobs", "", "where overflowing output is stored, outside the workspace (default: <user cache>/loom/blobs)")
	fs.StringVar(&cfg.scratch, "scratch", "", "the scratch directory commands see as TMPDIR, kept on exit (default: a fresh directory under <user cache>/loom/scratch, removed on exit)")
	fs.BoolVar(&cfg.allowUnconfined, "allow-unconfined", false, "run commands even when this host offers no confinement layer at all")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	session, cleanup, err := newSession(cfg)
	if err != nil {
		return err
	}
	defer cleanup()
	plane := job.NewPlane(session.Broker, job.Options{Blobs: session.Blobs})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), planeCloseWait)
		defer cancel()
		plane.Close(ctx)
	}()
	reg, err := tool.NewRegistry(builtinTools(plane)...)
	if err != nil {
		return err
	}
	// Every call this server dispatches is the session's strand; a call
	// under any other strand (a host bug) is refused before it runs.
	reg.SetHolds(func(_ context.Context, strand, _ string) bool { return strand == session.Strand })
	srv, err := mcpserve.New(reg, session, mcpserve.Options{
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

// config is what the flags choose.
type config struct {
	workspace, blobs, scratch string
	allowUnconfined           bool
}

// newSession builds the call template every request copies: the
// workspace, a base policy that lets commands read the system and the
// workspace and write the workspace and the scratch directory only
// (network off, .git hooks and config protected), a broker running the
// jail, and a blob store outside the workspace. cleanup closes the store
// and removes a scratch directory newSession made.
func newSession(cfg config) (c *tool.Call, cleanup func(), err error) {
	abs, err := filepath.Abs(cfg.workspace)
	if err != nil {
		return nil, nil, err
	}
	ws, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("workspace: %w", err)
	}
	if fi, err := os.Stat(ws); err != nil {
		return nil, nil, fmt.Errorf("workspace: %w", err)
	} else if !fi.IsDir() {
		return nil, nil, fmt.Errorf("workspace %s is not a directory", ws)
	}
	blobRoot := cfg.blobs
	if blobRoot == "" {
		if blobRoot, err = blob.DefaultRoot(); err != nil {
			return nil, nil, fmt.Errorf("%w; name a blob directory with -blobs", err)
		}
	}
	if blobRoot, err = filepath.Abs(blobRoot); err != nil {
		return nil, nil, err
	}
	blobs, err := blob.Open(blobRoot)
	if err != nil {
		return nil, nil, err
	}
	if within(ws, blobs.Root()) {
		blobs.Close()
		return nil, nil, fmt.Errorf("blob store %s is inside the workspace %s, where a command could tamper with it; choose a directory outside it with -blobs", blobs.Root(), ws)
	}
	scratch, removeScratch, err := makeScratch(cfg.scratch)
	if err != nil {
		blobs.Close()
		return nil, nil, fmt.Errorf("scratch: %w", err)
	}
	cleanup = func() {
		blobs.Close()
		removeScratch()
	}
	if within(ws, scratch) {
		cleanup()
		return nil, nil, fmt.Errorf("scratch directory %s is inside the workspace %s, where a command could swap it for a link; choose a directory outside it with -scratch, or omit -scratch for a private one in the user cache", scratch, ws)
	}
	base := broker.Policy{
		// The system directories programs need are the jail's alone: the
		// file tools never read them (fs_read /etc/shadow is refused).
		SystemRoots:   broker.SystemReadableRoots(),
		WritableRoots: []string{ws, scratch},
		Protected:     broker.DefaultProtected(ws),
		Network:       broker.NetworkOff,
		EnvAllow:      []string{"PATH", "HOME", "LANG", "TERM", "TMPDIR"},
	}
	if err := broker.Validate(base); err != nil {
		cleanup()
		return nil, nil, err
	}
	return &tool.Call{
		Workspace: ws,
		Strand:    "mcp",
		Base:      base,
		Env:       map[string]string{"PATH": commandPath, "HOME": ws, "LANG": "C.UTF-8", "TERM": "dumb"},
		TempDir:   scratch,
		Shell:     &tool.Shell{},
		Broker:    broker.New(broker.Options{AllowUnconfined: cfg.allowUnconfined}),
		Blobs:     blobs,
	}, cleanup, nil
}

// makeScratch returns the session's scratch directory, resolved: dir
// (created if missing, kept on exit) when set, else a fresh private
// directory under the user cache directory, which remove deletes.
func makeScratch(dir string) (scratch string, remove func(), err error) {
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			return "", nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", nil, err
		}
		dir, err = filepath.EvalSymlinks(dir)
		return dir, func() {}, err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", nil, fmt.Errorf("%w; name a scratch directory with -scratch", err)
	}
	parent := filepath.Join(cache, scratchDir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", nil, err
	}
	made, err := os.MkdirTemp(parent, "session-")
	if err != nil {
		return "", nil, err
	}
	resolved, err := filepath.EvalSymlinks(made)
	if err != nil {
		os.Remove(made)
		return "", nil, err
	}
	return resolved, func() { os.RemoveAll(resolved) }, nil
}

// within reports whether p is root or beneath it; both are clean and
// absolute.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}
