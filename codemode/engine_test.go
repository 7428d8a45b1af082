package codemode

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// e2eStd is the standard-library allowlist the end-to-end tests build
// against: what their programs import, so the archives build once in
// seconds rather than the whole allowlist's.
var e2eStd = []string{"bytes", "context", "errors", "fmt", "sort", "strconv", "strings", "sync", "time", "unicode/utf8"}

var (
	e2eOnce     sync.Once
	e2eCacheDir string
	e2eBroker   *broker.Broker
	e2eErr      error
)

// e2eShared returns the cache directory and broker every end-to-end
// engine shares. The directory's archives of e2eStd and the embedded
// prelude (every end-to-end engine's allowlist) are warmed once per test
// binary, before any engine builds, so no session builds archives of
// its own.
func e2eShared(tb testing.TB) (string, *broker.Broker) {
	tb.Helper()
	if err := e2eSetUp(tb); err != nil {
		tb.Fatalf("the end-to-end cache: %v", err)
	}
	return e2eCacheDir, e2eBroker
}

// e2eSetUp makes and warms e2eShared's cache directory and broker once,
// and returns what went wrong if that failed.
func e2eSetUp(tb testing.TB) error {
	e2eOnce.Do(func() {
		dir, err := os.MkdirTemp("", "loom-codemode-e2e-")
		if err != nil {
			e2eErr = err
			return
		}
		e2eCacheDir = dir
		e2eBroker = broker.New(broker.Options{HelperPath: jailHelper.Path(tb)})
		testCleanups = append(testCleanups, func() { e2eBroker.Close(); os.RemoveAll(dir) })
		if e2eErr = linkGoCache(dir); e2eErr != nil {
			return
		}
		if flag.Lookup("test.run").Value.String() == "" {
			// The whole package runs, so tests that seed the go build
			// cache will: fill it beside the archives' warm-up, whose
			// critical path leaves a core idle. (Chosen tests fill it
			// when one first needs it.)
			warmGoBuildCache()
		}
		b, err := newBuilder(BuilderOptions{CacheDir: dir, StdPackages: e2eStd, brk: e2eBroker})
		if err != nil {
			e2eErr = err
			return
		}
		e2eErr = b.Warm(context.Background())
	})
	return e2eErr
}

// session is one end-to-end host: a workspace, the tools a host offers
// beside code_mode, a job plane and an Engine over them.
type session struct {
	eng  *Engine
	call *tool.Call
	ws   string
	home string // its commands' HOME, beside the workspace, never in it
	reg  *tool.Registry
	jobs *job.Plane
}

// newSession builds a session over a fresh workspace under /var/tmp (the
// jail's /tmp is private) holding files.
func newSession(t testing.TB, files map[string]string) *session {
	t.Helper()
	dir, b := e2eShared(t)
	root, err := os.MkdirTemp("/var/tmp", "loom-codemode-ws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	ws := filepath.Join(root, "ws")
	for p, s := range files {
		p = filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.Open(filepath.Join(root, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	scratch, home := filepath.Join(root, "scratch"), filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := sessionEnv(home)
	jobs := job.NewPlane(b, job.Options{})
	t.Cleanup(func() { jobs.Close(context.Background()) })
	reg, err := tool.NewRegistry(append([]tool.Tool{tool.ReadTool(), tool.WriteTool(nil), tool.EditTool(nil), tool.GrepTool(), job.BashTool(jobs)}, job.Tools(jobs)...)...)
	if err != nil {
		t.Fatal(err)
	}
	c := &tool.Call{
		Workspace: ws, Strand: "main", Env: env, TempDir: scratch, Broker: b, Blobs: blobs,
		Base: sandbox.Policy{
			SystemRoots:   append(sandbox.SystemReadableRoots(), "/usr/local/go"),
			WritableRoots: []string{ws, scratch, home},
			Protected:     broker.DefaultProtected(ws),
			Network:       sandbox.NetworkOff,
			EnvAllow:      []string{"PATH", "HOME", "LANG"},
		},
	}
	c = c.At("op-"+strings.ReplaceAll(t.Name(), "/", "-"), "step", 0)
	eng, err := New(Options{Registry: reg, Broker: b, Jobs: jobs, Builder: BuilderOptions{CacheDir: dir, StdPackages: e2eStd}})
	if err != nil {
		t.Fatal(err)
	}
	return &session{eng: eng, call: c, ws: ws, home: home, reg: reg, jobs: jobs}
}

// sessionEnv is the environment of a session's commands, HOME being
// home.
func sessionEnv(home string) map[string]string {
	return map[string]string{"PATH": "/usr/local/go/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"}
}

// goBuildCache is the go build cache seedGoBuildCache hands out: a HOME
// whose .cache/go-build the go command fills once per test binary.
var goBuildCache struct {
	once sync.Once
	done chan struct{} // closed once home is filled, or err
	home string
	err  error
}

// warmGoBuildCache starts filling goBuildCache, if not yet started: on
// the host, in a module of other sources than any workspace's (so no
// result of a workspace's own package is in it), with the go command a
// session's PATH finds, under a session's environment, as go vet and go
// test compile (go list -export -deps -test: the standard packages
// compiled, nothing linked or run). TestMain stops and removes it.
func warmGoBuildCache() {
	goBuildCache.once.Do(func() {
		done := make(chan struct{})
		goBuildCache.done = done
		ctx, cancel := context.WithCancel(context.Background())
		testCleanups = append(testCleanups, func() {
			cancel()
			<-done
			if goBuildCache.home != "" {
				os.RemoveAll(goBuildCache.home)
			}
		})
		go func() {
			defer close(done)
			goBuildCache.home, goBuildCache.err = fillGoBuildCache(ctx)
		}()
	})
}

// fillGoBuildCache makes the HOME of warmGoBuildCache.
func fillGoBuildCache(ctx context.Context) (string, error) {
	home, err := os.MkdirTemp("/var/tmp", "loom-codemode-gohome-")
	if err != nil {
		return "", err
	}
	for name, src := range map[string]string{
		"go.mod":       "module example.com/warm\n\ngo 1.26\n",
		"main.go":      "package main\n\nfunc main() {}\n",
		"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestWarm(t *testing.T) {}\n",
	} {
		if err := os.WriteFile(filepath.Join(home, name), []byte(src), 0o644); err != nil {
			return home, err
		}
	}
	env := sessionEnv(home)
	gobin := "go"
	for _, d := range filepath.SplitList(env["PATH"]) {
		if fi, err := os.Stat(filepath.Join(d, "go")); err == nil && fi.Mode().IsRegular() {
			gobin = filepath.Join(d, "go")
			break
		}
	}
	cmd := exec.CommandContext(ctx, gobin, "list", "-export", "-deps", "-test", "./...")
	cmd.Dir = home
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// Stopped, the go command and the compilers it runs end together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if out, err := cmd.CombinedOutput(); err != nil {
		return home, fmt.Errorf("go list -export: %v\n%s", err, out)
	}
	return home, nil
}

// seedGoBuildCache gives s's commands' HOME (beside its workspace) the
// warm go build cache of warmGoBuildCache, as a developer's machine has
// one: hard links to its files, once it is filled. A program's go vet or
// go test then compiles the workspace's packages alone instead of the
// standard library each.
func seedGoBuildCache(t *testing.T, s *session) {
	t.Helper()
	warmGoBuildCache()
	<-goBuildCache.done
	if goBuildCache.err != nil {
		t.Fatalf("the warm go build cache: %v", goBuildCache.err)
	}
	from, to := filepath.Join(goBuildCache.home, ".cache", "go-build"), filepath.Join(s.home, ".cache", "go-build")
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		return linkOrCopy(p, filepath.Join(to, rel))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// exec runs src through every stage.
func (s *session) exec(t *testing.T, src string, within time.Duration) (*Execution, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), max(3*time.Minute, within+time.Minute))
	defer cancel()
	return s.eng.Execute(ctx, s.call, Request{Source: []byte(src), Within: within})
}

// mustRun runs src and fails unless it ran to a clean exit. It gives the
// program maxWithin: its subject is what the program does, and a loaded
// host may take more than the default minute (checks.go's jailed go vet
// starts with a cold cache).
func (s *session) mustRun(t *testing.T, src string) *RunResult {
	t.Helper()
	x, err := s.exec(t, src, maxWithin)
	if err != nil {
		t.Fatalf("the program did not run: %v", err)
	}
	if x.Run.Code != "" {
		t.Fatalf("the run failed (%s, exit %d):\nstdout: %s\nstderr: %s\nfault: %s", x.Run.Code, x.Run.Exit, x.Run.Stdout, x.Run.Stderr, x.Run.Fault)
	}
	return x.Run
}

// TestRecipesRun runs every recipe program verbatim through vet, build
// and run, in a workspace shaped for it.
func TestRecipesRun(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"go.mod":          "module example.com/demo\n\ngo 1.26\n",
		"main.go":         "package main\n\n// TODO: greet better\nfunc main() { println(\"hi\") }\n",
		"util/strings.go": "package util\n\n// TODO: more helpers\nfunc Upper(s string) string { return s }\n",
	}
	want := map[string][]string{
		"survey.go": {"go.mod"},
		"fanout.go": {"main.go"},
		"edit.go":   {"Hello, workspace.", "second edit refused (edit_no_match)"},
		"checks.go": {"report"},
	}
	for name, says := range want {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(filepath.Join("testdata/programs", name))
			if err != nil {
				t.Fatal(err)
			}
			s := newSession(t, files)
			if name == "checks.go" {
				gitInit(t, s.ws)
				seedGoBuildCache(t, s)
			}
			res := s.mustRun(t, string(src))
			for _, w := range says {
				if !strings.Contains(res.Stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, res.Stdout)
				}
			}
			if res.Record.Total == 0 || res.Record.Failed != 0 && name != "edit.go" {
				t.Errorf("call record %+v", res.Record)
			}
		})
	}
}

func gitInit(t *testing.T, ws string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// TestProgramRunsInTheRunJail: a program's run is confined by every
// layer runRequiredLayers names, applied, and its stdout is its result.
func TestProgramRunsInTheRunJail(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	res := s.mustRun(t, "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from the jail\") }\n")
	if res.Stdout != "hello from the jail\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	for _, l := range runRequiredLayers() {
		if !res.Enforcement.Applied(l) {
			t.Errorf("layer %s not applied: %s", l, res.Enforcement)
		}
	}
	if res.Enforcement.Degraded {
		t.Errorf("degraded: %s", res.Enforcement)
	}
	t.Log(res.Enforcement.String(), res.Duration)
}
