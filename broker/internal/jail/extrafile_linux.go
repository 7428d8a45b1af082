package jail

import (
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/agentloom/loom/sandbox"
)

// maxHandoffRights bounds the descriptors one handoff message may carry;
// the broker sends one, and any more are closed.
const maxHandoffRights = 4

// takeExtraFile, in the helper, makes ExtraFileFD the command's file:
// with ExtraHandoff it receives the file over the handoff socket there
// (close-on-exec while it is held) and puts it in the socket's place;
// with ExtraInherited it is there already. It fails unless exactly one
// descriptor arrived.
func takeExtraFile(mode Extra) error {
	if mode != ExtraHandoff {
		return nil
	}
	fd, err := receiveHandoff("extra file")
	if err != nil {
		return err
	}
	err = unix.Dup3(fd, sandbox.ExtraFileFD, unix.O_CLOEXEC)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("extra file to fd %d: %w", sandbox.ExtraFileFD, err)
	}
	return nil
}

// takeStdinFile, in the helper, receives the command's stdin over the
// handoff socket at ExtraFileFD and puts it at fd 0, blocking, in place
// of the broker's stdin pipe. It fails unless exactly one descriptor
// arrived.
func takeStdinFile() error {
	fd, err := receiveHandoff("stdin")
	if err != nil {
		return err
	}
	err = unix.Dup3(fd, 0, 0)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("stdin to fd 0: %w", err)
	}
	// Blocking, as os/exec makes a file it starts a helper with (the
	// broker's end of a pipe is non-blocking for its poller).
	if err := unix.SetNonblock(0, false); err != nil {
		return fmt.Errorf("stdin blocking: %w", err)
	}
	return nil
}

// receiveHandoff receives one message of one byte and one descriptor
// (close-on-exec) on the handoff socket at ExtraFileFD; what is named
// in its errors.
func receiveHandoff(what string) (int, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*maxHandoffRights))
	var n, oobn int
	var err error
	for {
		n, oobn, _, _, err = unix.Recvmsg(sandbox.ExtraFileFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return -1, fmt.Errorf("%s handoff: %w", what, err)
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
		return -1, fmt.Errorf("%s handoff: %d bytes and %d descriptors, want 1 and 1", what, n, len(fds))
	}
	return fds[0], nil
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
		ranges = [][2]uint{{3, sandbox.ExtraFileFD - 1}, {sandbox.ExtraFileFD + 1, math.MaxUint32}}
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
		if _, err := unix.FcntlInt(sandbox.ExtraFileFD, unix.F_SETFD, 0); err != nil {
			return fmt.Errorf("extra file at fd %d: %w", sandbox.ExtraFileFD, err)
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
