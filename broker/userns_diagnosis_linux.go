package broker

import (
	"errors"
	"os"
	"strings"

	"github.com/agentloom/loom/internal/errno"
	"golang.org/x/sys/unix"
)

// usernsKnobs are the kernel settings that make an unprivileged clone
// into a new user namespace fail, each with what an operator can do
// about it. They are checked in this order; the first that explains the
// failure is reported.
var usernsKnobs = []struct {
	file   string
	blocks func(v string) bool
	advice string
}{
	{
		file:   "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
		blocks: func(v string) bool { return v == "1" },
		advice: "AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later): " +
			"give the host binary an AppArmor profile that allows userns " +
			"(e.g. /etc/apparmor.d/<host> with `userns,`), or set " +
			"kernel.apparmor_restrict_unprivileged_userns=0",
	},
	{
		file:   "/proc/sys/kernel/unprivileged_userns_clone",
		blocks: func(v string) bool { return v == "0" },
		advice: "the kernel refuses unprivileged user namespaces (Debian's " +
			"kernel.unprivileged_userns_clone=0): set it to 1",
	},
	{
		file:   "/proc/sys/user/max_user_namespaces",
		blocks: func(v string) bool { return v == "0" },
		advice: "user namespaces are disabled (user.max_user_namespaces=0): raise it",
	},
}

// usernsDiagnosis explains why the trial clone into the jail's
// namespaces failed with err, reading the kernel's settings through read
// (os.ReadFile outside tests). It returns "" when no setting explains it.
func usernsDiagnosis(err error, read func(string) ([]byte, error)) string {
	if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.ENOSPC) {
		return ""
	}
	for _, k := range usernsKnobs {
		b, rerr := read(k.file)
		if rerr != nil {
			continue
		}
		if k.blocks(strings.TrimSpace(string(b))) {
			return k.advice
		}
	}
	if errors.Is(err, unix.EPERM) {
		if _, rerr := read("/.dockerenv"); rerr == nil {
			return "the host runs in a container whose seccomp profile or missing " +
				"CAP_SYS_ADMIN refuses user namespaces: run it with a profile that allows clone(CLONE_NEWUSER)"
		}
	}
	return ""
}

// usernsReason is the namespaces layer's skip reason for err: its errno
// name and, where a kernel setting explains it, what to do.
func usernsReason(err error) string {
	if d := usernsDiagnosis(err, os.ReadFile); d != "" {
		return errno.Name(err) + ": " + d
	}
	return errno.Name(err)
}
