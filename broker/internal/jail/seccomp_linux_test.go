package jail

import (
	"testing"

	"golang.org/x/sys/unix"
)

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
