package codemode

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildUnvetted builds the test program at testdata/hostile/<name> as a
// static binary with the host's go command, without vetting: a program
// vetting would refuse, to hold the run jail itself to account.
func buildUnvetted(t *testing.T, name string) *Binary {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./testdata/hostile/"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, b)
	}
	return &Binary{Path: out}
}

// TestRunJailHoldsAnUnvettedProgram: a program that writes a host file,
// dials a host listener and reads a host secret does none of the three
// in the run jail; run directly, the same binary does all three (the
// control, so the probe can fail).
func TestRunJailHoldsAnUnvettedProgram(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	bin := buildUnvetted(t, "escape")
	host := t.TempDir()
	target, secret := filepath.Join(host, "written"), filepath.Join(host, "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	args := []string{target, ln.Addr().String(), secret}

	control, err := exec.Command(bin.Path, args...).Output()
	if err != nil || strings.Count(string(control), ": ok") != 3 {
		t.Fatalf("the control run did not escape, so the test proves nothing: %v\n%s", err, control)
	}
	os.Remove(target)

	res := s.runArgs(t, bin, args)
	if n := strings.Count(res.Stdout, ": ok"); n != 0 {
		t.Fatalf("%d escapes succeeded in the run jail:\n%s", n, res.Stdout)
	}
	if strings.Count(res.Stdout, "\n") != 3 {
		t.Fatalf("the probe did not report all three attempts:\n%s\nstderr: %s", res.Stdout, res.Stderr)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the host file was written")
	}
}

// runArgs runs bin with argv in the run jail, as Engine.Run does but with
// arguments (a vetted program has none).
func (s *session) runArgs(t *testing.T, bin *Binary, args []string) *RunResult {
	t.Helper()
	h := s.eng.newSeamHost(s.call, WorkspaceSeam(), nil)
	res, err := runProgramArgs(context.Background(), s.call, bin, 30*time.Second, h, args)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestHostileChannelsEndTheExecution: garbage, a duplicate id and a
// program that floods calls and never reads its answers each end the
// execution, the host never held past the wall deadline.
func TestHostileChannelsEndTheExecution(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode string
		code string
	}{
		{"garbage", string(CodeChannelFault)},
		{"dup", string(CodeChannelFault)},
		{"noread", string(CodeWallDeadline)},
	}
	s := newSession(t, nil)
	bin := buildUnvetted(t, "flood")
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			h := s.eng.newSeamHost(s.call, WorkspaceSeam(), nil)
			start := time.Now()
			res, err := runProgramArgs(context.Background(), s.call, bin, 3*time.Second, h, []string{c.mode})
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Code) != c.code {
				t.Errorf("code %q (fault %q), want %s", res.Code, res.Fault, c.code)
			}
			// The wall is 3 s; only a host held far past it (not a
			// slow machine) fails here.
			if took := time.Since(start); took > 120*time.Second {
				t.Errorf("the host was held %s", took)
			}
		})
	}
}
