//go:build linux

package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeEnv selects a probe mode when this test binary is run as a probe
// (jailed or not) by the escape suite: "<mode> <arg>". A probe exits 0
// when its action succeeded and 1 when it was refused.
const probeEnv = "LOOM_ESCAPE_PROBE"

func runProbe(mode, arg string) int {
	err := probeAction(mode, arg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "probe %s: %v\n", mode, err)
		return 1
	}
	fmt.Println("PROBE-SUCCEEDED")
	return 0
}

func probeAction(mode, arg string) error {
	switch mode {
	case "tcp":
		c, err := net.DialTimeout("tcp", arg, 2*time.Second)
		if err != nil {
			return err
		}
		c.Write([]byte("escape"))
		return c.Close()
	case "udp":
		c, err := net.Dial("udp", arg)
		if err != nil {
			return err
		}
		defer c.Close()
		for i := 0; i < 5; i++ {
			if _, err := c.Write([]byte("escape")); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	case "dns":
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "udp", arg)
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := r.LookupHost(ctx, "escape.loom.test")
		if err != nil {
			if de, ok := err.(*net.DNSError); ok && de.IsTimeout {
				return err
			}
		}
		return err
	case "abstract":
		c, err := net.DialTimeout("unix", "@"+arg, 2*time.Second)
		if err != nil {
			return err
		}
		c.Write([]byte("escape"))
		return c.Close()
	case "ptrace":
		var pid int
		fmt.Sscan(arg, &pid)
		return ptraceAttachDetach(pid)
	case "ptrace-child":
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			return err
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		return ptraceAttachDetach(cmd.Process.Pid)
	case "io_uring":
		var params [120]byte
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if e != 0 {
			return e
		}
		unix.Close(int(fd))
		return nil
	case "keyctl":
		_, err := unix.AddKey("user", "loom-escape", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
		return err
	case "bpf":
		// BPF_MAP_CREATE of a tiny array map.
		attr := [5]uint32{2 /* BPF_MAP_TYPE_ARRAY */, 4, 4, 1, 0}
		fd, _, e := unix.Syscall(unix.SYS_BPF, 0, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
		if e != 0 {
			return e
		}
		unix.Close(int(fd))
		return nil
	}
	return fmt.Errorf("unknown probe mode %q", mode)
}

func ptraceAttachDetach(pid int) error {
	done := make(chan error, 1)
	go func() {
		// ptrace requests must come from the attaching thread.
		lockAndRun(func() {
			if err := unix.PtraceAttach(pid); err != nil {
				done <- err
				return
			}
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, unix.WALL, nil)
			done <- unix.PtraceDetach(pid)
		})
	}()
	return <-done
}

func lockAndRun(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f()
}
