package mcpgen

import (
	"bufio"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/wire"
)

// buildOnPrelude lays the prelude on disk out as the module "cap" in a
// fresh directory (the go.mod written there), adds each package of
// pkgs (import path under cap/ to source) and main as cap/cmd/probe,
// builds it with the host's go command and returns the binary's path
// and how long the build took.
func buildOnPrelude(t testing.TB, pkgs map[string][]byte, main string) (string, time.Duration) {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(preludeDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(preludeDir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return writeFile(filepath.Join(dir, rel), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"go.mod": []byte("module cap\n\ngo 1.26\n"), "cmd/probe/main.go": []byte(main)}
	for path, src := range pkgs {
		rel := strings.TrimPrefix(path, "cap/")
		files[rel+"/"+filepath.Base(rel)+".go"] = src
	}
	for rel, b := range files {
		if err := writeFile(filepath.Join(dir, rel), b); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "probe")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-trimpath", "-o", bin, "./cmd/probe")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOPROXY=off")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building on the prelude: %v\n%s", err, out)
	}
	return bin, time.Since(start)
}

func writeFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

// TestGeneratedPackageCallsThroughTheChannel builds a program on the
// prelude and a generated package, runs it with a channel at the fd the
// prelude opens, and serves its calls as a host would: each cap_call
// names its tool's capability, DecodeArguments gives back the JSON
// object the input struct marshals to, and Answer's answers decode into
// the output struct, the Result, and the tool's failure.
func TestGeneratedPackageCallsThroughTheChannel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	t.Parallel()
	p := mustGenerate(t, "GitHub", []Tool{
		{Name: "create_issue", InputSchema: []byte(`{"type":"object","properties":{"title":{"type":"string"},"labels":{"type":"array","items":{"type":"string"}},"state":{"enum":["open","closed"]},"milestone":{"type":"integer"}},"required":["title"]}`),
			OutputSchema: []byte(`{"type":"object","properties":{"number":{"type":"integer"},"url":{"type":["string","null"]}},"required":["number"]}`)},
		{Name: "search.code", InputSchema: []byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)},
		{Name: "fail"},
	})
	bin, _ := buildOnPrelude(t, map[string][]byte{p.Path: p.Source}, `package main

import (
	"context"
	"errors"
	"fmt"

	"cap/mcp/github"
)

func main() {
	ctx := context.Background()
	state := github.CreateIssueInputStateOpen
	out, err := github.CreateIssue(ctx, github.CreateIssueInput{Title: "crash", Labels: []string{"bug"}, State: &state})
	if err != nil {
		panic(err)
	}
	fmt.Println("issue", out.Number, *out.URL)
	res, err := github.SearchCode(ctx, github.SearchCodeInput{Q: "func main"})
	if err != nil {
		panic(err)
	}
	fmt.Println("search", res.Structured["hits"], res.Text)
	_, err = github.Fail(ctx, github.FailInput{})
	var e *github.Error
	fmt.Println("fail", errors.As(err, &e), e.Cap, e.Code, e.Message)
}
`)
	tools := map[string]string{}
	for _, c := range p.Capabilities {
		tools[c.Name] = c.Tool
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	hostFile, progFile := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "prog")
	c, err := net.FileConn(hostFile)
	hostFile.Close()
	if err != nil {
		t.Fatal(err)
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	cmd := exec.Command(bin)
	cmd.ExtraFiles = []*os.File{nil, nil, progFile} // fd 5, the prelude's ChannelFD
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	progFile.Close()

	got := map[string]string{} // tool -> its arguments as the host decoded them
	var mu sync.Mutex
	served := make(chan error, 1)
	go func() {
		r := bufio.NewReader(conn)
		for {
			f, err := wire.ReadFrame(r)
			if err != nil {
				served <- nil // the program exited
				return
			}
			if f.Kind == wire.FrameRing { // no ring: the socket carries the frames
				if err := wire.WriteFrame(conn, wire.Frame{Kind: wire.FrameRing}); err != nil {
					served <- err
					return
				}
				continue
			}
			call, err := wire.DecodeCapCall(f.Body)
			if err != nil {
				served <- err
				return
			}
			args, err := DecodeArguments(call.Args)
			if err != nil {
				served <- err
				return
			}
			mu.Lock()
			got[tools[call.Cap]] = string(args)
			mu.Unlock()
			var res CallResult
			switch tools[call.Cap] {
			case "create_issue":
				res = CallResult{Structured: []byte(`{"number":7,"url":"https://x/7"}`), Text: `{"number":7}`}
			case "search.code":
				res = CallResult{Structured: []byte(`{"hits":2}`), Text: "two hits"}
			case "fail":
				res = CallResult{IsError: true, Text: "the repository is archived"}
			}
			body := wire.ResultErr("unknown_capability", call.Cap)
			if m, err := Answer(res); err != nil {
				body = wire.ResultErr(string(err.(*Error).Code), err.(*Error).Message)
			} else if _, ok := tools[call.Cap]; ok {
				body = wire.ResultOK(m)
			}
			if err := wire.WriteFrame(conn, wire.Frame{ID: f.ID, Kind: wire.FrameCapResult, Body: body}); err != nil {
				served <- err
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the program: %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the program did not finish")
	}
	conn.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	want := "issue 7 https://x/7\nsearch 2 two hits\nfail true mcp.github.fail mcp_tool_error the repository is archived\n"
	if stdout.String() != want {
		t.Errorf("the program printed\n%s\nwant\n%s\nstderr: %s", stdout.String(), want, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for tool, args := range map[string]string{
		"create_issue": `{"labels":["bug"],"state":"open","title":"crash"}`,
		"search.code":  `{"q":"func main"}`,
		"fail":         `{}`,
	} {
		if got[tool] != args {
			t.Errorf("%s's arguments reached the host as %s, want %s", tool, got[tool], args)
		}
	}
}
