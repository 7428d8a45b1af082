package broker

import (
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// extraMode says what a helper holds at ExtraFileFD when its
// configuration arrives.
type extraMode string

const (
	// extraNone: nothing of the command's; whatever is there (a warm
	// helper's handoff socket) is closed at exec.
	extraNone extraMode = ""
	// extraInherited: the command's file itself, inherited at start.
	extraInherited extraMode = "inherited"
	// extraHandoff: a unix socket the broker sends the command's file
	// over (SCM_RIGHTS) once the helper is chosen; it is replaced by
	// that file.
	extraHandoff extraMode = "handoff"
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

// maxHandoffRights bounds the descriptors one handoff message may carry;
// the broker sends one, and any more are closed.
const maxHandoffRights = 4

// takeExtraFile, in the helper, makes ExtraFileFD the command's file:
// with extraHandoff it receives the file over the handoff socket there
// (close-on-exec while it is held) and puts it in the socket's place;
// with extraInherited it is there already. It fails unless exactly one
// descriptor arrived.
func takeExtraFile(mode extraMode) error {
	if mode != extraHandoff {
		return nil
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*maxHandoffRights))
	var n, oobn int
	var err error
	for {
		n, oobn, _, _, err = unix.Recvmsg(ExtraFileFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("extra file handoff: %w", err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if r, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, r...)
			}
		}
	}
	if n != 1 || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return fmt.Errorf("extra file handoff: %d bytes and %d descriptors, want 1 and 1", n, len(fds))
	}
	err = unix.Dup3(fds[0], ExtraFileFD, unix.O_CLOEXEC)
	unix.Close(fds[0])
	if err != nil {
		return fmt.Errorf("extra file to fd %d: %w", ExtraFileFD, err)
	}
	return nil
}

// sealDescriptors, the helper's last step before exec, marks every
// descriptor above 2 close-on-exec except, with keepExtra, ExtraFileFD,
// which it makes survive exec: the command inherits its standard streams
// and the extra file, nothing else, whatever the helper (or its runtime)
// opened. Linux 5.11 and later do it with close_range; before, each
// descriptor /proc/self/fd lists is marked.
func sealDescriptors(keepExtra bool) error {
	ranges := [][2]uint{{3, math.MaxUint32}}
	if keepExtra {
		ranges = [][2]uint{{3, ExtraFileFD - 1}, {ExtraFileFD + 1, math.MaxUint32}}
	}
	for _, r := range ranges {
		err := unix.CloseRange(r[0], r[1], unix.CLOSE_RANGE_CLOEXEC)
		if err == unix.ENOSYS || err == unix.EINVAL {
			err = cloexecListed(r[0], r[1])
		}
		if err != nil {
			return fmt.Errorf("descriptors %d..%d close-on-exec: %w", r[0], r[1], err)
		}
	}
	if keepExtra {
		if _, err := unix.FcntlInt(ExtraFileFD, unix.F_SETFD, 0); err != nil {
			return fmt.Errorf("extra file at fd %d: %w", ExtraFileFD, err)
		}
	}
	return nil
}

// cloexecListed marks close-on-exec every descriptor in [first, last]
// that /proc/self/fd lists.
func cloexecListed(first, last uint) error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, name := range names {
		fd, err := strconv.ParseUint(name, 10, 32)
		if err != nil || uint(fd) < first || uint(fd) > last {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return err
		}
	}
	return nil
}
