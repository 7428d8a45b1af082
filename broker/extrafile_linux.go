package broker

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// newHandoff returns a connected pair of unix stream sockets: the
// helper's end (its ExtraFileFD until the command's file replaces it)
// and the broker's, both close-on-exec in this process. A helper holds
// ExtraFileFD from birth, so nothing the helper's runtime opens can land
// on that number, and replacing it later (dup3) closes nothing but the
// socket.
func newHandoff() (helper, broker *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("handoff socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "handoff-helper"), os.NewFile(uintptr(fds[1]), "handoff-broker"), nil
}

// sendExtraFile passes f over the broker's end of a handoff socket (one
// byte carrying one SCM_RIGHTS descriptor). It reads f's descriptor
// without switching f to blocking mode.
func sendExtraFile(handoff, f *os.File) error {
	fc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	hc, err := handoff.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	ctlErr := fc.Control(func(fd uintptr) {
		rights := unix.UnixRights(int(fd))
		if err := hc.Control(func(h uintptr) {
			sendErr = unix.Sendmsg(int(h), []byte{0}, rights, nil, 0)
		}); err != nil {
			sendErr = err
		}
	})
	if ctlErr != nil {
		return ctlErr
	}
	return sendErr
}
