//go:build linux

package broker

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/sandbox"
)

// TestEmptyRootHoldsAnUnvettedProgram runs a static Go program that
// writes a host file, dials a host listener on 127.0.0.1 and reads a host
// secret: in the empty root (with and without /proc) all three fail and
// the program still runs; the same binary run without the jail does all
// three (the control).
func TestEmptyRootHoldsAnUnvettedProgram(t *testing.T) {
	dir := t.TempDir()
	prog := staticProbe(t, dir)
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("host-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialled := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			dialled <- struct{}{}
		}
	}()
	escape := func(out string) []string {
		return []string{"escape", out, ln.Addr().String(), secret}
	}

	t.Run("control_unjailed", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "written")
		b, err := exec.Command(prog, escape(out)...).Output()
		if err != nil {
			t.Fatalf("probe: %v (%s)", err, b)
		}
		got := probeLines(string(b))
		if got["write"] != "ok" || got["dial"] != "ok" || got["read"] != "ok host-secret" {
			t.Fatalf("the unjailed probe failed to escape: %q", b)
		}
		if _, err := os.Stat(out); err != nil {
			t.Errorf("the unjailed write left nothing: %v", err)
		}
		<-dialled
	})
	for _, proc := range []bool{true, false} {
		name := "empty_root_no_proc"
		if proc {
			name = "empty_root_proc"
		}
		t.Run(name, func(t *testing.T) {
			b := newTestBroker(t, Options{WarmHelperIdle: -1})
			out := filepath.Join(t.TempDir(), "written")
			r, err := clearCollect(t, b, emptyRootSpec(prog, proc, escape(out)...))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("stdout %q stderr %q\n%s", r.stdout, r.stderr, r.enf)
			if r.settled.ExitCode != 0 {
				t.Fatalf("the probe did not run to its end in the empty root: %+v, stderr %q", r.settled, r.stderr)
			}
			got := probeLines(r.stdout)
			for _, what := range []string{"write", "dial", "read"} {
				if v, ok := got[what]; !ok || !strings.HasPrefix(v, "failed:") {
					t.Errorf("%s in the empty root: %q, want a failure", what, v)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("the jailed write reached the host")
			}
			select {
			case <-dialled:
				t.Error("the jailed dial reached the host listener")
			default:
			}
			if !r.enf.Applied(sandbox.LayerEmptyRoot) || r.enf.Degraded {
				t.Errorf("report %s", r.enf)
			}
			if _, ok := r.enf.Layer(sandbox.LayerPolicyRoot); ok {
				t.Errorf("an empty-root report claims the policy root: %s", r.enf)
			}
		})
	}
}

// TestEmptyRootShowsOnlyTheProgram: inside the empty root the program
// is readable at EmptyRootProgram, /proc exists exactly when asked for,
// and nothing is writable, not even /tmp or /dev.
func TestEmptyRootShowsOnlyTheProgram(t *testing.T) {
	prog := staticProbe(t, t.TempDir())
	b := newTestBroker(t, Options{WarmHelperIdle: -1})
	for _, tc := range []struct {
		name        string
		proc        bool
		write, read string
		readOK      bool
	}{
		{"program_readable", false, "/tmp/x", sandbox.EmptyRootProgram, true},
		{"proc_present", true, "/dev/x", "/proc/self/status", true},
		{"proc_absent", false, "/program.x", "/proc/self/status", false},
		{"etc_absent", true, "/proc/x", "/etc/passwd", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := clearCollect(t, b, emptyRootSpec(prog, tc.proc, "escape", tc.write, "127.0.0.1:1", tc.read))
			if err != nil {
				t.Fatal(err)
			}
			got := probeLines(r.stdout)
			if !strings.HasPrefix(got["write"], "failed:") {
				t.Errorf("write %s: %q, want a failure", tc.write, got["write"])
			}
			if ok := strings.HasPrefix(got["read"], "ok"); ok != tc.readOK {
				t.Errorf("read %s: %q, want ok=%v", tc.read, got["read"], tc.readOK)
			}
		})
	}
}

// TestEmptyRootAddressSpaceLimit: an empty-root Go program starts under
// a small RLIMIT_AS (Limits.MemoryBytes) and fails to allocate past it;
// the same allocation under a larger bound succeeds (the control).
func TestEmptyRootAddressSpaceLimit(t *testing.T) {
	t.Parallel()
	prog := staticProbe(t, t.TempDir())
	b := newTestBroker(t, Options{WarmHelperIdle: -1})
	const small, large, alloc = 512 << 20, 4 << 30, "768"
	for _, tc := range []struct {
		limit uint64
		ok    bool
	}{{large, true}, {small, false}} {
		spec := emptyRootSpec(prog, false, "alloc", alloc)
		spec.Policy.Limits.MemoryBytes = tc.limit
		r, err := clearCollect(t, b, spec)
		if err != nil {
			t.Fatal(err)
		}
		if ok := r.settled.ExitCode == 0 && strings.HasPrefix(r.stdout, "allocated"); ok != tc.ok {
			t.Errorf("alloc %s MiB under RLIMIT_AS %d: %+v %q %q, want ok=%v", alloc, tc.limit, r.settled, r.stdout, lastLine(r.stderr), tc.ok)
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// TestEmptyRootRefusesWhatItCannotHold: specs that ask for roots, the
// network, another working directory or an unclean program path are
// refused as invalid; a program that is a link or missing makes the
// helper refuse (jail_failed), never run in a view of the host.
func TestEmptyRootRefusesWhatItCannotHold(t *testing.T) {
	dir := t.TempDir()
	prog := staticProbe(t, dir)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(prog, link); err != nil {
		t.Fatal(err)
	}
	b := newTestBroker(t, Options{WarmHelperIdle: -1})
	for _, tc := range []struct {
		name string
		edit func(*sandbox.CallSpec)
		code sandbox.DenialCode
	}{
		{"readable_root", func(s *sandbox.CallSpec) { s.Policy.ReadableRoots = []string{dir} }, sandbox.DenialInvalidPolicy},
		{"system_roots", func(s *sandbox.CallSpec) { s.Policy.SystemRoots = sandbox.SystemReadableRoots() }, sandbox.DenialInvalidPolicy},
		{"writable_root", func(s *sandbox.CallSpec) { s.Policy.WritableRoots = []string{dir} }, sandbox.DenialInvalidPolicy},
		{"network", func(s *sandbox.CallSpec) { s.Policy.Network = sandbox.NetworkFull }, sandbox.DenialInvalidPolicy},
		{"dir", func(s *sandbox.CallSpec) { s.Dir = dir }, sandbox.DenialInvalidPolicy},
		{"relative_program", func(s *sandbox.CallSpec) { s.EmptyRoot.Program = "staticprobe" }, sandbox.DenialInvalidPolicy},
		{"unclean_program", func(s *sandbox.CallSpec) { s.EmptyRoot.Program = dir + "/../" + filepath.Base(dir) + "/staticprobe" }, sandbox.DenialInvalidPolicy},
		{"program_is_a_link", func(s *sandbox.CallSpec) { s.EmptyRoot.Program = link }, sandbox.DenialJailFailed},
		{"program_missing", func(s *sandbox.CallSpec) { s.EmptyRoot.Program = filepath.Join(dir, "missing") }, sandbox.DenialJailFailed},
		{"program_is_a_dir", func(s *sandbox.CallSpec) { s.EmptyRoot.Program = dir }, sandbox.DenialJailFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := emptyRootSpec(prog, false, "escape", "/x", "127.0.0.1:1", "/y")
			tc.edit(&spec)
			r, err := clearCollect(t, b, spec)
			if denialCode(err) != tc.code {
				t.Fatalf("got %v (ran: %+v %q), want %s", err, r.settled, r.stdout, tc.code)
			}
		})
	}
	// The control: the unedited spec runs.
	r, err := clearCollect(t, b, emptyRootSpec(prog, false, "escape", "/x", "127.0.0.1:1", "/y"))
	if err != nil || r.settled.ExitCode != 0 {
		t.Fatalf("the unedited empty-root spec: %v %+v", err, r.settled)
	}
	var m *sandbox.MissingLayer
	if errors.As(err, &m) {
		t.Fatalf("a run reports a missing layer: %v", m)
	}
}
