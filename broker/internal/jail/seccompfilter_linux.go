package jail

import "encoding/binary"

// SeccompFilter returns the jail's seccomp filter (see seccompProgram)
// as the raw array of struct sock_filter in host byte order, 8 bytes an
// instruction, as bubblewrap's --seccomp reads it. It returns nil where
// this build has no syscall table for its machine (the jail installs no
// filter there).
func SeccompFilter(networkOff bool) []byte {
	if !seccompArchSupported {
		return nil
	}
	prog := seccompProgram(networkOff)
	out := make([]byte, 0, 8*len(prog))
	for _, f := range prog {
		out = binary.NativeEndian.AppendUint16(out, f.Code)
		out = append(out, f.Jt, f.Jf)
		out = binary.NativeEndian.AppendUint32(out, f.K)
	}
	return out
}
