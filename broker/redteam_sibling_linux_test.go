package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
)

// TestRedteamSiblingFewerProtectedPlantsConfig: a sibling policy
// without .git/config protected appends an exec key to the config in
// place, after (withA) a command of a policy protecting it
// ran on the same root.
func TestRedteamSiblingFewerProtectedPlantsConfig(t *testing.T) {
	for _, withA := range []bool{false, true} {
		ws := gitWorkspace(t)
		b := newTestBroker(t, Options{WarmHelperIdle: -1})
		a := testPolicy(ws)
		a.Protected = DefaultProtected(ws)
		if withA {
			out, s, _, _ := primedRun(t, b, a, nil, "sh", "-c", "echo hi >> "+filepath.Join(ws, ".git/config")+"; true")
			t.Logf("A: %q %+v", out, s.GitNeutralised)
		}
		bp := testPolicy(ws)
		out, s, _, _ := primedRun(t, b, bp, nil, "sh", "-c", "printf '\\tfsmonitor = touch /tmp/rtpwn\\n' >> "+filepath.Join(ws, ".git/config"))
		data, _ := os.ReadFile(filepath.Join(ws, ".git/config"))
		t.Logf("withA=%v B: out=%q exit=%d neutralised=%v config=%q", withA, out, s.ExitCode, s.GitNeutralised, data)
		if strings.Contains(string(data), "fsmonitor") {
			t.Errorf("withA=%v: the planted fsmonitor survived settlement", withA)
		}
	}
}

// TestRedteamSiblingFewerProtectedConcurrent: the same plant while a
// command of the protecting policy runs alongside
// (fresh broker: no earlier run of A).
func TestRedteamSiblingFewerProtectedConcurrent(t *testing.T) {
	ws := gitWorkspace(t)
	b := newTestBroker(t, Options{WarmHelperIdle: -1})
	a := testPolicy(ws)
	a.Protected = DefaultProtected(ws)
	done := make(chan struct{})
	ex, err := b.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"sleep", "3"}, Policy: a,
		Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 2}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		for range ex.Output() {
		}
		ex.Wait()
	}()
	time.Sleep(1500 * time.Millisecond)
	bp := testPolicy(ws)
	ex2, err := b.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"sh", "-c", "printf '\\tfsmonitor = touch /tmp/rtpwn\\n' >> " + filepath.Join(ws, ".git/config")}, Policy: bp,
		Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 2}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for range ex2.Output() {
	}
	s := ex2.Wait()
	<-done
	data, _ := os.ReadFile(filepath.Join(ws, ".git/config"))
	t.Logf("B neutralised=%v config=%q", s.GitNeutralised, data)
	if strings.Contains(string(data), "fsmonitor") {
		t.Errorf("the planted fsmonitor survived settlement")
	}
}
