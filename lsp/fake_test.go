package lsp

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
)

// settleWithin bounds a fake server's diagnosis in these tests: far more
// than a jailed start takes on a loaded machine.
const settleWithin = 60 * time.Second

func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func messages(f tool.FileDiagnostics) []string {
	var out []string
	for _, d := range f.Items {
		out = append(out, string(d.Severity)+" "+d.Message)
	}
	return out
}

func TestDiagnosticsSettleOnTheVersionSent(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "publish"))
	got := s.write(t, p, within(t, settleWithin), "a.txt", "fine\nERR here\nWARN there\n")
	if got.Status != tool.DiagnosticsSettled || got.Server != "fake" || got.Errors != 1 || got.Warnings != 1 {
		t.Fatalf("first write: %+v", got)
	}
	if want := []string{"error flagged: ERR here", "warning flagged: WARN there"}; !slices.Equal(messages(got), want) {
		t.Errorf("items %q, want %q", messages(got), want)
	}
	if got.Items[0].Line != 2 || got.Items[0].Source != "fake" {
		t.Errorf("first item %+v", got.Items[0])
	}
	// The same document again (didChange): clean.
	got = s.write(t, p, within(t, settleWithin), "a.txt", "fine\n")
	if got.Status != tool.DiagnosticsSettled || got.Errors+got.Warnings != 0 || len(got.Items) != 0 {
		t.Fatalf("second write: %+v", got)
	}
	st := p.Servers()
	if len(st) != 1 || st[0].State != StateRunning || st[0].Starts != 1 || st[0].Command[0] != fake.Path(t) {
		t.Errorf("status %+v", st)
	}
}

func TestFilesNoServerOwnsHaveNoDiagnosis(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "publish"))
	outside := filepath.Join(filepath.Dir(s.ws), "elsewhere.txt")
	got := p.Diagnose(within(t, settleWithin), []tool.ChangedFile{
		{Path: filepath.Join(s.ws, "README.md"), Content: []byte("ERR")},
		{Path: outside, Content: []byte("ERR")},
	})
	if len(got) != 0 {
		t.Errorf("diagnosed files no server owns: %+v", got)
	}
	if st := p.Servers(); st[0].State != StateIdle {
		t.Errorf("a server started for files it does not own: %+v", st)
	}
}

func TestNeverSettlingIsUnsettledAtTheDeadline(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"silent", "unversioned"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := newSession(t)
			p := s.plane(t, fakeConfig(t, mode))
			// Started and settled once, so the wait below is the
			// server's silence alone.
			if got := s.write(t, p, within(t, 500*time.Millisecond), "warm.txt", "x"); got.Status != tool.DiagnosticsUnsettled {
				t.Fatalf("warm-up: %+v", got)
			}
			const wait = 400 * time.Millisecond
			began := time.Now()
			got := s.write(t, p, within(t, wait), "a.txt", "ERR\n")
			took := time.Since(began)
			if got.Status != tool.DiagnosticsUnsettled || got.Errors != 0 || len(got.Items) != 0 {
				t.Fatalf("got %+v", got)
			}
			// It waited for the deadline, and was not held past it for
			// good (the bound tells a hang from a slow machine, not a
			// few seconds late).
			if got.Waited < wait/2 || took > wait+60*time.Second {
				t.Errorf("waited %v (returned after %v) for a deadline %v away", got.Waited, took, wait)
			}
		})
	}
}

func TestAnOlderVersionDoesNotSettle(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "stale"))
	got := s.write(t, p, within(t, settleWithin), "a.txt", "WARN now\n")
	if got.Status != tool.DiagnosticsSettled || !slices.Equal(messages(got), []string{"warning flagged: WARN now"}) {
		t.Fatalf("got %+v, want the sent version's diagnostics only", got)
	}
}

func TestURIsOutsideTheWorkspaceAreDropped(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "outside"))
	got := s.write(t, p, within(t, settleWithin), "a.txt", "ERR mine\n")
	if got.Status != tool.DiagnosticsSettled || !slices.Equal(messages(got), []string{"error flagged: ERR mine"}) || got.Errors != 1 {
		t.Fatalf("got %+v, want the document's own diagnostic only", got)
	}
	for _, c := range []struct {
		uri string
		ok  bool
	}{
		{fileURI(filepath.Join(s.ws, "a.txt")), true},
		{"file://localhost" + filepath.Join(s.ws, "a.txt"), true},
		{fileURI(filepath.Join(s.ws, "..", "x")), false},
		{"file:///etc/passwd", false},
		{"file://evil.example" + filepath.Join(s.ws, "a.txt"), false},
		{"http://x" + s.ws, false},
		{"file:" + s.ws + "/a", true},
		{fileURI(s.ws) + "/a?q", false},
		{fileURI(s.ws) + "/a%00b", false},
		{"relative/a.txt", false},
	} {
		if _, ok := pathIn(c.uri, s.ws); ok != c.ok {
			t.Errorf("pathIn(%q) = %v, want %v", c.uri, ok, c.ok)
		}
	}
}

func TestAFloodIsCountedAndBounded(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "flood"))
	got := s.write(t, p, within(t, settleWithin), "a.txt", "a\nb\nc\n")
	if got.Status != tool.DiagnosticsSettled || got.Warnings != 5000 || got.Errors != 1 {
		t.Fatalf("counts %+v", got)
	}
	if len(got.Items) != maxKeptDiagnostics || got.Items[0].Message != "the one error" {
		t.Errorf("kept %d, first %+v", len(got.Items), got.Items[0])
	}
}

func TestServerRequestsAreAnswered(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "requests"))
	got := s.write(t, p, within(t, settleWithin), "a.txt", "ERR\n")
	if got.Status != tool.DiagnosticsSettled || got.Errors != 1 {
		t.Fatalf("got %+v", got)
	}
}

// TestCrashesAreRestartedUpToTheBound: a server that dies is reported
// in one line per write, started again at the next write, and after
// MaxRestarts restarts refused for the session.
func TestCrashesAreRestartedUpToTheBound(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "crash"))
	for i := 1; i <= MaxRestarts+1; i++ {
		got := s.write(t, p, within(t, settleWithin), "a.txt", "x\n")
		if got.Status != tool.DiagnosticsUnavailable || got.Code != tool.Code(CodeCrashed) {
			t.Fatalf("write %d: %+v", i, got)
		}
		for _, want := range []string{"exited with status 3", "crashing on purpose"} {
			if !strings.Contains(got.Reason, want) {
				t.Errorf("write %d: reason %q lacks %q", i, got.Reason, want)
			}
		}
		if i <= MaxRestarts && !strings.Contains(got.Reason, "starts again at the next write") {
			t.Errorf("write %d: reason %q does not say it restarts", i, got.Reason)
		}
		if i == MaxRestarts+1 && !strings.Contains(got.Reason, "not started again") {
			t.Errorf("last crash: reason %q does not say it is not restarted", got.Reason)
		}
	}
	got := s.write(t, p, within(t, settleWithin), "a.txt", "x\n")
	if got.Status != tool.DiagnosticsUnavailable || got.Code != tool.Code(CodeRestartsExhausted) {
		t.Fatalf("after the bound: %+v", got)
	}
	st := p.Servers()[0]
	if st.State != StateGaveUp || st.Starts != MaxRestarts+1 || st.Last == nil || st.Last.Code != CodeCrashed {
		t.Errorf("status %+v", st)
	}
}

func TestAServerThatCannotStartSaysWhy(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	missing := Server{Name: "ghost", Command: []string{"/nonexistent/ghost-ls"}, Files: []FilePattern{{Pattern: "*.txt", LanguageID: "plaintext"}}}
	for _, tc := range []struct {
		cfg  Server
		code Code
		want string
	}{
		{fakeConfig(t, "exit-at-start"), CodeCrashed, "refusing to start"},
		{missing, CodeNotFound, "was not found"},
	} {
		p := s.plane(t, tc.cfg)
		got := s.write(t, p, within(t, settleWithin), "a.txt", "x\n")
		if got.Status != tool.DiagnosticsUnavailable || got.Code != tool.Code(tc.code) || !strings.Contains(got.Reason, tc.want) {
			t.Errorf("%s: %+v", tc.cfg.Name, got)
		}
	}
}

// TestHungServersAreStopped: a server that never answers initialize, or
// stops reading what it is sent, is stopped as hung at its bound.
func TestHungServersAreStopped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode, content, want string
	}{
		{"hang-init", "x\n", "did not answer initialize"},
		// More than a pipe holds, so the write blocks.
		{"stop-reading", strings.Repeat("0123456789abcde\n", 64<<10), "read nothing of its input"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			s := newSession(t)
			p := s.plane(t, fakeConfig(t, tc.mode))
			p.test.startTimeout, p.test.writeTimeout = 2*time.Second, 500*time.Millisecond
			var got tool.FileDiagnostics
			for range 3 { // an answer before the bound is unsettled; the server is stopped at it
				if got = s.write(t, p, within(t, 3*time.Second), "a.txt", tc.content); got.Status == tool.DiagnosticsUnavailable {
					break
				}
			}
			if got.Status != tool.DiagnosticsUnavailable || got.Code != tool.Code(CodeHung) || !strings.Contains(got.Reason, tc.want) {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

// TestBrokenFramingIsRefusedWithinBoundedMemory: a server that names a
// terabyte, sends a header that never ends, or a body that is not JSON is
// stopped with CodeProtocol, the host having allocated far less than one
// message's bound.
func TestBrokenFramingIsRefusedWithinBoundedMemory(t *testing.T) {
	for _, tc := range []struct {
		mode, want string
	}{
		{"huge-length", "Content-Length \"1000000000000\" is over"},
		{"endless-header", "header line longer than"},
		{"malformed", "not valid JSON"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			s := newSession(t)
			p := s.plane(t, fakeConfig(t, tc.mode))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got := s.write(t, p, within(t, settleWithin), "a.txt", "x\n")
			runtime.ReadMemStats(&after)
			if got.Status != tool.DiagnosticsUnavailable || got.Code != tool.Code(CodeProtocol) || !strings.Contains(got.Reason, tc.want) {
				t.Fatalf("got %+v", got)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > MaxMessageBytes {
				t.Errorf("the host allocated %d bytes refusing it", grew)
			}
		})
	}
}

// TestChangesOnDiskAreToldBeforeADiagnosis: what a command changed since
// the server last heard reaches it first, and a document Loom held open
// that changed on disk is closed so the server reads it again.
func TestChangesOnDiskAreToldBeforeADiagnosis(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	os.WriteFile(filepath.Join(s.ws, "gone.txt"), []byte("x"), 0o644)
	p := s.plane(t, fakeConfig(t, "watch"))
	if got := s.write(t, p, within(t, settleWithin), "a.txt", "one\n"); got.Status != tool.DiagnosticsSettled || len(got.Items) != 0 {
		t.Fatalf("first write: %+v", got)
	}
	os.WriteFile(filepath.Join(s.ws, "new.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(s.ws, "other.md"), []byte("x"), 0o644) // owned by no server
	os.Remove(filepath.Join(s.ws, "gone.txt"))
	os.MkdirAll(filepath.Join(s.ws, ".git"), 0o755)
	os.WriteFile(filepath.Join(s.ws, ".git", "hidden.txt"), []byte("x"), 0o644)
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(filepath.Join(s.ws, "a.txt"), []byte("changed by a command\n"), 0o644)
	got := s.write(t, p, within(t, settleWithin), "b.txt", "two\n")
	heard := messages(got)
	slices.Sort(heard)
	want := []string{"information changed a.txt", "information closed a.txt", "information created new.txt", "information deleted gone.txt"}
	if !slices.Equal(heard, want) {
		t.Errorf("the server heard %q, want %q", heard, want)
	}
	// Loom's own write is not heard as a change on disk.
	if got := s.write(t, p, within(t, settleWithin), "c.txt", "three\n"); len(got.Items) != 0 {
		t.Errorf("after no change on disk the server heard %q", messages(got))
	}
}

// TestTheServerCannotWriteTheWorkspace: the workspace is readable in the
// server's jail and never writable.
func TestTheServerCannotWriteTheWorkspace(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "probe"))
	got := s.write(t, p, within(t, settleWithin), "a.txt", "x\n")
	if got.Status != tool.DiagnosticsSettled || len(got.Items) != 1 {
		t.Fatalf("got %+v", got)
	}
	if msg := got.Items[0].Message; msg == "write: <nil>" || !strings.Contains(msg, "read-only file system") {
		t.Errorf("the server's write into the workspace: %s", msg)
	}
	if _, err := os.Stat(filepath.Join(s.ws, "planted.txt")); err == nil {
		t.Error("the server planted a file in the workspace")
	}
	pol := p.servers[0].pol
	if slices.Contains(pol.WritableRoots, s.ws) || !slices.Contains(pol.ReadableRoots, s.ws) || pol.Network != "off" {
		t.Errorf("the server's policy: %+v", pol)
	}
	if !slices.Contains(pol.SystemRoots, fake.Path(t)) || slices.Contains(pol.SystemRoots, filepath.Dir(fake.Path(t))) {
		t.Errorf("the server's executable is not exposed alone: %v", pol.SystemRoots)
	}
}

func TestCloseShutsTheServersDown(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "publish"))
	if got := s.write(t, p, within(t, settleWithin), "a.txt", "x\n"); got.Status != tool.DiagnosticsSettled {
		t.Fatalf("got %+v", got)
	}
	r := p.servers[0].run
	began := time.Now()
	p.Close()
	if took := time.Since(began); took > stopTimeout+5*time.Second {
		t.Errorf("Close took %v", took)
	}
	select {
	case <-r.done:
	default:
		t.Fatal("the server still runs after Close")
	}
	if st := p.Servers()[0]; st.State != StateClosed || st.Last == nil || st.Last.Code != CodeClosed {
		t.Errorf("status %+v", st)
	}
	if got := s.write(t, p, within(t, settleWithin), "a.txt", "x\n"); got.Code != tool.Code(CodeClosed) {
		t.Errorf("after Close: %+v", got)
	}
	p.Close() // again: nothing
}

func TestNewRefusesWhatCannotRun(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	good := fakeConfig(t, "publish")
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"no broker", Options{Workspace: s.ws, Servers: []Server{good}}},
		{"a relative workspace", Options{Workspace: "ws", Broker: s.broker}},
		{"no name", Options{Workspace: s.ws, Broker: s.broker, Servers: []Server{{Command: good.Command, Files: good.Files}}}},
		{"no command", Options{Workspace: s.ws, Broker: s.broker, Servers: []Server{{Name: "x", Files: good.Files}}}},
		{"no pattern", Options{Workspace: s.ws, Broker: s.broker, Servers: []Server{{Name: "x", Command: good.Command}}}},
		{"a bad pattern", Options{Workspace: s.ws, Broker: s.broker, Servers: []Server{{Name: "x", Command: good.Command, Files: []FilePattern{{Pattern: "[", LanguageID: "x"}}}}}},
		{"no language", Options{Workspace: s.ws, Broker: s.broker, Servers: []Server{{Name: "x", Command: good.Command, Files: []FilePattern{{Pattern: "*"}}}}}},
		{"bad options", Options{Workspace: s.ws, Broker: s.broker, Servers: []Server{{Name: "x", Command: good.Command, Files: good.Files, InitializationOptions: []byte("{")}}}},
		{"two of a name", Options{Workspace: s.ws, Broker: s.broker, Servers: []Server{good, good}}},
		{"a relative read-only directory", Options{Workspace: s.ws, Broker: s.broker, Servers: []Server{{Name: "x", Command: good.Command, Files: good.Files, ReadOnly: []string{"node_modules"}}}}},
	} {
		if _, err := New(tc.o); CodeOf(err) != CodeInvalidConfig {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestReadOnlyDirectoriesReachTheJail: a server's ReadOnly directories
// (an interpreter's packages) are system roots of its jail: readable
// there, never writable, never read by the file tools.
func TestReadOnlyDirectoriesReachTheJail(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	cfg := fakeConfig(t, "publish")
	pkgs := t.TempDir()
	cfg.ReadOnly = []string{pkgs}
	p, err := New(Options{Workspace: s.ws, Broker: s.broker, Servers: []Server{cfg}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pol := p.servers[0].pol
	if !slices.Contains(pol.SystemRoots, pkgs) || slices.Contains(pol.ReadableRoots, pkgs) || slices.Contains(pol.WritableRoots, pkgs) {
		t.Fatalf("policy %+v: %s should be a system root only", pol, pkgs)
	}
}
