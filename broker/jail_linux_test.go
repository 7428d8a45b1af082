package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLandlockRightsByABI(t *testing.T) {
	for _, tc := range []struct {
		abi            int
		fs, net, scope uint64
	}{
		{0, 0, 0, 0},
		{1, llFSABI1, 0, 0},
		{2, llFSABI1 | llFSRefer, 0, 0},
		{3, llFSABI1 | llFSRefer | llFSTruncate, 0, 0},
		{4, llFSABI1 | llFSRefer | llFSTruncate, llNetBindTCP | llNetConnectTCP, 0},
		{5, llFSABI1 | llFSRefer | llFSTruncate | llFSIoctlDev, llNetBindTCP | llNetConnectTCP, 0},
		{6, llFSABI1 | llFSRefer | llFSTruncate | llFSIoctlDev, llNetBindTCP | llNetConnectTCP, llScopeAbstractUnix | llScopeSignal},
		{landlockMaxKnownABI, llFSABI1 | llFSRefer | llFSTruncate | llFSIoctlDev, llNetBindTCP | llNetConnectTCP, llScopeAbstractUnix | llScopeSignal},
		{landlockMaxKnownABI + 1, llFSABI1 | llFSRefer | llFSTruncate | llFSIoctlDev, llNetBindTCP | llNetConnectTCP, llScopeAbstractUnix | llScopeSignal},
	} {
		fs, net, scope := landlockRights(tc.abi)
		if fs != tc.fs || net != tc.net || scope != tc.scope {
			t.Errorf("abi %d: got %#x %#x %#x, want %#x %#x %#x", tc.abi, fs, net, scope, tc.fs, tc.net, tc.scope)
		}
	}
}

// TestSeccompProgramShape checks the filter is well formed: every jump
// lands inside the program, it ends in a return, and it has an EPERM
// check for every denied syscall and for foreign architectures.
func TestSeccompProgramShape(t *testing.T) {
	for _, off := range []bool{false, true} {
		prog := seccompProgram(off)
		if len(prog) > 4096 {
			t.Fatalf("program of %d instructions exceeds BPF_MAXINSNS", len(prog))
		}
		for i, ins := range prog {
			if ins.Code&0x07 == unix.BPF_JMP {
				if i+1+int(ins.Jt) >= len(prog) || i+1+int(ins.Jf) >= len(prog) {
					t.Fatalf("instruction %d jumps past the end", i)
				}
			}
		}
		if last := prog[len(prog)-1]; last.Code != unix.BPF_RET|unix.BPF_K || last.K != unix.SECCOMP_RET_ALLOW {
			t.Fatalf("program does not end in RET ALLOW: %+v", last)
		}
		for _, nr := range seccompDenied {
			found := false
			for i, ins := range prog[:len(prog)-1] {
				if ins.Code == unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K && ins.K == uint32(nr) &&
					prog[i+1].K == unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM) {
					found = true
				}
			}
			if !found {
				t.Errorf("syscall %d is not denied", nr)
			}
		}
		hasSocket := false
		for _, ins := range prog {
			if ins.Code == unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K && ins.K == uint32(unix.SYS_SOCKET) {
				hasSocket = true
			}
		}
		if hasSocket != off {
			t.Errorf("networkOff=%v: socket filter present=%v", off, hasSocket)
		}
	}
}

func TestProtectPlan(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{".git/hooks", ".git/objects", "sub/.git/modules/x/hooks", ".husky"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	os.WriteFile(filepath.Join(ws, ".git", "config"), nil, 0o644)
	os.Symlink(filepath.Join(ws, ".husky"), filepath.Join(ws, "sub", ".git", "hooks"))
	j := func(p ...string) string { return filepath.Join(append([]string{ws}, p...)...) }
	pins, ro, links := protectPlan([]string{
		j(".git", "hooks"), j(".git", "config"), j(".git", "missing"),
		j("sub", ".git", "modules", "x", "hooks"), j("sub", ".git", "hooks"),
	}, []string{ws})
	wantRO := []string{j(".husky"), j(".git", "hooks"), j(".git", "config"), j("sub", ".git", "modules", "x", "hooks")}
	wantPins := []string{ws, j(".git"), j("sub"), j("sub", ".git"), j("sub", ".git", "modules"), j("sub", ".git", "modules", "x")}
	wantLinks := []string{j("sub", ".git", "hooks")}
	slices.Sort(ro)
	slices.Sort(wantRO)
	slices.Sort(pins)
	slices.Sort(wantPins)
	if !slices.Equal(ro, wantRO) {
		t.Errorf("read-only binds\n got %v\nwant %v", ro, wantRO)
	}
	if !slices.Equal(pins, wantPins) {
		t.Errorf("pins\n got %v\nwant %v", pins, wantPins)
	}
	if !slices.Equal(links, wantLinks) {
		t.Errorf("links\n got %v\nwant %v", links, wantLinks)
	}
	// Outside every writable root nothing needs pinning.
	pins, ro, _ = protectPlan([]string{j(".git", "hooks")}, nil)
	if len(pins) != 0 || len(ro) != 1 {
		t.Errorf("no writable roots: pins %v ro %v", pins, ro)
	}
}

func TestReadHelperReport(t *testing.T) {
	for _, tc := range []struct {
		in          string
		layers      int
		fatal, exec string
		reported    bool
		jailPid     int
	}{
		{`{"jail_pid":42}` + "\n", 0, "helper ended before reporting", "", false, 42},
		{`{"jail_pid":42}` + "\n" + `{"layers":[{"name":"a","applied":true}]}` + "\n", 1, "", "", true, 42},
		{`{"layers":[{"name":"a","applied":true}]}` + "\n" + `{"jail_pid":7}` + "\n", 1, "", "", true, 7},
		{"", 0, "helper ended before reporting", "", false, 0},
		{`{"layers":[{"name":"seccomp","applied":true}]}` + "\n", 1, "", "", true, 0},
		{`{"layers":[{"name":"a","applied":true}]}` + "\n" + `{"exec":"exec x: ENOENT"}` + "\n", 1, "", "exec x: ENOENT", true, 0},
		{`{"fatal":"mount: EPERM"}` + "\n", 0, "mount: EPERM", "", true, 0},
		{"not json\n", 0, "malformed", "", true, 0},
	} {
		pid := 0
		layers, fatal, exec, _, reported := readHelperReport(strings.NewReader(tc.in), func(p int) { pid = p }, nil)
		if len(layers) != tc.layers || !strings.HasPrefix(fatal, tc.fatal) || exec != tc.exec || reported != tc.reported || pid != tc.jailPid {
			t.Errorf("%q: %v %q %q reported=%v pid=%d", tc.in, layers, fatal, exec, reported, pid)
		}
	}
}

func FuzzReadHelperReport(f *testing.F) {
	f.Add([]byte(`{"layers":[{"name":"landlock","applied":true,"detail":"abi 6"}]}` + "\n"))
	f.Add([]byte(`{"fatal":"x"}` + "\n" + `{"exec":"y"}`))
	f.Add([]byte("\n\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		layers, fatal, _, _, reported := readHelperReport(strings.NewReader(string(data)), func(int) {}, nil)
		if fatal == "" && len(data) == 0 {
			t.Fatal("an empty report must be fatal")
		}
		if !reported && fatal == "" {
			t.Fatal("a stream with no report must be fatal")
		}
		_ = layers
	})
}

func TestErrnoName(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{unix.EPERM, "EPERM"},
		{fmt.Errorf("landlock_add_rule /x: %w", unix.EACCES), "landlock_add_rule /x: EACCES"},
		{errors.New("plain"), "plain"},
	} {
		if got := errnoName(tc.err); got != tc.want {
			t.Errorf("errnoName(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
