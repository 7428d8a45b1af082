//go:build linux && (amd64 || arm64)

package jail

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// runSeccomp interprets the classic BPF subset the jail's filter uses
// (absolute word loads, JEQ/JGE/JSET with constants, constant returns)
// on one syscall, the way the kernel evaluates it, and returns the
// action. It fails the test on any instruction outside that subset or a
// program that runs off its end.
func runSeccomp(t *rapid.T, prog []unix.SockFilter, nr uintptr, args [6]uint64) uint32 {
	var data [64]byte
	binary.LittleEndian.PutUint32(data[seccompDataNr:], uint32(nr))
	binary.LittleEndian.PutUint32(data[seccompDataArch:], seccompAuditArch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[seccompDataArg0+seccompArgBytes*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		switch ins.Code {
		case bpfLd:
			acc = binary.LittleEndian.Uint32(data[ins.K:])
		case bpfRet:
			return ins.K
		case bpfJeq, bpfJge, bpfJset:
			var taken bool
			switch ins.Code {
			case bpfJeq:
				taken = acc == ins.K
			case bpfJge:
				taken = acc >= ins.K
			default:
				taken = acc&ins.K != 0
			}
			if taken {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		default:
			t.Fatalf("instruction %d: unexpected opcode %#x", pc, ins.Code)
		}
	}
	t.Fatalf("program ran off its end")
	return 0
}

// TestSeccompArguments holds the filter's argument checks to their
// definition for arbitrary arguments: terminal-injection ioctls, setuid
// and setgid modes on every mode-setting syscall (creation modes only
// when the flags create a file), openat2 and clone3 answered ENOSYS,
// namespace clones and (network off) non-unix sockets refused.
func TestSeccompArguments(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		networkOff := rapid.Bool().Draw(t, "networkOff")
		prog := seccompProgram(networkOff)
		var args [6]uint64
		for i := range args {
			args[i] = rapid.OneOf(rapid.Uint64(), rapid.Uint64Range(0, 0o7777), rapid.Uint64Range(0, 1<<23),
				rapid.SampledFrom([]uint64{unix.TIOCSTI, unix.TIOCGWINSZ, unix.TIOCSCTTY, unix.O_CREAT, unix.AF_INET, unix.AF_UNIX, 0o4755})).Draw(t, "arg")
		}
		calls := []uintptr{unix.SYS_IOCTL, unix.SYS_OPENAT2, unix.SYS_CLONE3, unix.SYS_CLONE, unix.SYS_SOCKET, unix.SYS_GETPID, unix.SYS_READ}
		for _, m := range seccompModeSyscalls {
			calls = append(calls, m.nr)
		}
		nr := rapid.SampledFrom(calls).Draw(t, "nr")
		want := uint32(seccompAllow)
		switch nr {
		case unix.SYS_IOCTL:
			for _, req := range seccompTerminalIoctls {
				if uint32(args[1]) == req {
					want = seccompEPERM
				}
			}
		case unix.SYS_OPENAT2, unix.SYS_CLONE3:
			want = seccompENOSYS
		case unix.SYS_CLONE:
			if args[0]&cloneNamespaceFlags != 0 {
				want = seccompEPERM
			}
		case unix.SYS_SOCKET:
			if networkOff && uint32(args[0]) != unix.AF_UNIX {
				want = seccompEPERM
			}
		}
		for _, m := range seccompModeSyscalls {
			if m.nr != nr {
				continue
			}
			creates := m.flags < 0 || args[m.flags]&seccompCreateFlags != 0
			if creates && args[m.mode]&seccompSpecialModeBits != 0 {
				want = seccompEPERM
			}
		}
		if got := runSeccomp(t, prog, nr, args); got != want {
			t.Fatalf("syscall %d args %#o: action %#x, want %#x", nr, args, got, want)
		}
	})
}

// TestSeccompModeArgumentIndex pins where each mode-setting syscall keeps
// its mode (and flags): the filter reads exactly that argument.
func TestSeccompModeArgumentIndex(t *testing.T) {
	want := map[uintptr][2]int{
		unix.SYS_FCHMOD: {1, -1}, unix.SYS_FCHMODAT: {2, -1}, unix.SYS_FCHMODAT2: {2, -1},
		unix.SYS_OPENAT: {3, 2}, unix.SYS_MKDIRAT: {2, -1}, unix.SYS_MKNODAT: {2, -1},
	}
	for nr, w := range seccompArchModeArgs {
		want[nr] = w
	}
	got := map[uintptr][2]int{}
	for _, m := range seccompModeSyscalls {
		got[m.nr] = [2]int{m.mode, m.flags}
	}
	if len(got) != len(want) {
		t.Errorf("%d mode syscalls filtered, want %d", len(got), len(want))
	}
	for nr, w := range want {
		if got[nr] != w {
			t.Errorf("syscall %d: mode/flags args %v, want %v", nr, got[nr], w)
		}
	}
}
