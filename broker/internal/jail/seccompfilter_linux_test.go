package jail

import (
	"encoding/binary"
	"testing"
)

// TestSeccompFilterIsTheProgram decodes SeccompFilter's bytes as struct
// sock_filter entries in host order and compares them with the program
// the jail installs, with and without the network.
func TestSeccompFilterIsTheProgram(t *testing.T) {
	if !seccompArchSupported {
		if SeccompFilter(true) != nil {
			t.Fatal("a filter on a machine with no syscall table")
		}
		t.Skip("no seccomp syscall table for this machine")
	}
	for _, networkOff := range []bool{false, true} {
		prog := seccompProgram(networkOff)
		raw := SeccompFilter(networkOff)
		if len(raw) != 8*len(prog) {
			t.Fatalf("networkOff %v: %d bytes for %d instructions", networkOff, len(raw), len(prog))
		}
		for i, f := range prog {
			b := raw[8*i:]
			code, k := binary.NativeEndian.Uint16(b), binary.NativeEndian.Uint32(b[4:])
			if code != f.Code || b[2] != f.Jt || b[3] != f.Jf || k != f.K {
				t.Fatalf("networkOff %v: instruction %d is % x, want %+v", networkOff, i, b[:8], f)
			}
		}
	}
	if len(SeccompFilter(true)) == len(SeccompFilter(false)) {
		t.Error("the network's socket rule changed nothing") // the control: the two differ
	}
}
