//go:build linux

package jail

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/agentloom/loom/sandbox"
)

// TestApplyNamespaceLimitsReport: the layer is applied only when every
// limit the kernel has was written; a missing file is a facility the
// kernel lacks, any other error makes the layer skipped with every
// refused limit named, grouped by error; Params name only what was set.
func TestApplyNamespaceLimitsReport(t *testing.T) {
	limits := []nsLimit{
		{file: "kernel/shmmax", value: "268435456", ipc: true},
		{file: "kernel/sem", value: "250 32000 32 128", ipc: true},
		{file: "fs/mqueue/queues_max", value: "64", ipc: true},
		{file: "user/max_inotify_watches", value: "8192"},
		{file: "user/max_fanotify_marks", value: "8192"},
	}
	for _, tc := range []struct {
		name        string
		errs        map[string]error
		applied     bool
		params      []string // each must appear in Params
		notParams   []string // none may appear in Params
		reason      []string // each must appear in Reason
		reasonParts int      // how many "not set" groups
	}{
		{
			name:    "all written",
			applied: true,
			params:  []string{"kernel.shmmax=268435456", "kernel.sem=250,32000,32,128", "fs.mqueue.queues_max=64", "user.max_inotify_watches=8192", "user.max_fanotify_marks=8192"},
		},
		{
			name:      "a facility the kernel lacks",
			errs:      map[string]error{"user/max_fanotify_marks": unix.ENOENT},
			applied:   true,
			params:    []string{"kernel.shmmax=268435456", "not in this kernel: user.max_fanotify_marks"},
			notParams: []string{"user.max_fanotify_marks="},
		},
		{
			name:        "ipc refused",
			errs:        map[string]error{"kernel/shmmax": unix.EACCES, "kernel/sem": unix.EACCES, "fs/mqueue/queues_max": unix.EACCES},
			params:      []string{"user.max_inotify_watches=8192"},
			notParams:   []string{"kernel.shmmax=", "kernel.sem="},
			reason:      []string{"kernel.shmmax, kernel.sem, fs.mqueue.queues_max not set (EACCES"},
			reasonParts: 1,
		},
		{
			name:        "two kinds of refusal",
			errs:        map[string]error{"kernel/shmmax": unix.EINVAL, "user/max_inotify_watches": unix.EPERM, "user/max_fanotify_marks": unix.EPERM},
			params:      []string{"kernel.sem=250,32000,32,128"},
			reason:      []string{"kernel.shmmax not set (EINVAL)", "user.max_inotify_watches, user.max_fanotify_marks not set (EPERM)"},
			reasonParts: 2,
		},
		{
			name:        "wrapped error",
			errs:        map[string]error{"kernel/sem": &os.PathError{Op: "write", Path: "/proc/sys/kernel/sem", Err: unix.EINVAL}},
			reason:      []string{"kernel.sem not set (write /proc/sys/kernel/sem: EINVAL)"},
			reasonParts: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wrote []string
			l := applyNamespaceLimits(limits, func(file, value string) error {
				wrote = append(wrote, file)
				return tc.errs[file]
			})
			if len(wrote) != len(limits) {
				t.Errorf("wrote %v, want every limit once", wrote)
			}
			if l.Name != sandbox.LayerNamespaceLimits || l.Applied != tc.applied || (l.Reason == "") != tc.applied {
				t.Errorf("layer %+v, want applied %v with a reason exactly when not", l, tc.applied)
			}
			for _, p := range tc.params {
				if !strings.Contains(l.Params, p) {
					t.Errorf("params %q lack %q", l.Params, p)
				}
			}
			for _, p := range tc.notParams {
				if strings.Contains(l.Params, p) {
					t.Errorf("params %q claim %q", l.Params, p)
				}
			}
			for _, r := range tc.reason {
				if !strings.Contains(l.Reason, r) {
					t.Errorf("reason %q lacks %q", l.Reason, r)
				}
			}
			if got := strings.Count(l.Reason, "not set"); got != tc.reasonParts {
				t.Errorf("reason %q has %d groups, want %d", l.Reason, got, tc.reasonParts)
			}
		})
	}
}

// TestNotifyCeiling: never above the jail's constant, never above the
// host's share (when the host's limit is known), never zero, and the
// constant itself wherever the host's share is at least that.
func TestNotifyCeiling(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bound := rapid.Uint64Range(1, 1<<20).Draw(t, "bound")
		host := rapid.Uint64Range(0, 1<<24).Draw(t, "host")
		got := notifyCeiling(bound, host)
		if got == 0 || got > bound {
			t.Fatalf("notifyCeiling(%d, %d) = %d, want 1..%d", bound, host, got, bound)
		}
		if host > 0 && got > max(host/jailHostShareDivisor, 1) {
			t.Fatalf("notifyCeiling(%d, %d) = %d, above the host's share", bound, host, got)
		}
		if (host == 0 || host/jailHostShareDivisor >= bound) && got != bound {
			t.Fatalf("notifyCeiling(%d, %d) = %d, want the constant %d", bound, host, got, bound)
		}
	})
}

// TestNamespaceLimitsList: every limit is listed once; shmall is the
// shared-memory bound in pages; notification ceilings follow the host's
// limits; every nested namespace count is 0.
func TestNamespaceLimitsList(t *testing.T) {
	hosts := map[string]uint64{"fs/inotify/max_user_watches": 8192, "fs/inotify/max_user_instances": 128}
	ls := namespaceLimits(4096, func(f string) uint64 { return hosts[f] })
	got := map[string]nsLimit{}
	for _, l := range ls {
		if _, dup := got[l.file]; dup {
			t.Errorf("%s listed twice", l.file)
		}
		got[l.file] = l
	}
	for file, want := range map[string]string{
		"kernel/shmmax":              strconv.Itoa(SysVShmBytes),
		"kernel/shmall":              strconv.Itoa(SysVShmBytes / 4096),
		"kernel/shmmni":              strconv.Itoa(SysVShmSegments),
		"kernel/msgmni":              strconv.Itoa(SysVMsgQueues),
		"kernel/sem":                 SysVSem,
		"fs/mqueue/queues_max":       strconv.Itoa(MqueueQueues),
		"user/max_inotify_watches":   strconv.Itoa(8192 / jailHostShareDivisor),
		"user/max_inotify_instances": strconv.Itoa(InotifyInstances),
		"user/max_fanotify_groups":   strconv.Itoa(FanotifyGroups),
		"user/max_user_namespaces":   "0",
		"user/max_mnt_namespaces":    "0",
	} {
		if l, ok := got[file]; !ok || l.value != want {
			t.Errorf("%s = %+v (listed %v), want %q", file, l, ok, want)
		}
		if l := got[file]; l.ipc != (strings.HasPrefix(file, "kernel/") || strings.HasPrefix(file, "fs/mqueue/")) {
			t.Errorf("%s: ipc %v", file, l.ipc)
		}
	}
	for _, f := range nestedNamespaceFiles {
		if got[f].value != "0" {
			t.Errorf("%s = %q, want 0", f, got[f].value)
		}
	}
}

// TestWriteSysctlRefusesLinks: the writer never follows a link planted
// where a knob should be (it opens with O_NOFOLLOW), and reports the
// kernel's error.
func TestWriteSysctlRefusesLinks(t *testing.T) {
	err := writeSysctl("../self/cwd", "1")
	if err == nil || !errors.Is(err, unix.ELOOP) {
		t.Fatalf("writeSysctl through /proc/self/cwd: %v, want ELOOP", err)
	}
}

// TestSysctlDirs: reading through the held directories gives what a
// walk from /proc gives (a file that is there, and, as a control, one
// that is not), and writing through them still refuses a link.
func TestSysctlDirs(t *testing.T) {
	d := sysctlDirs{}
	defer d.close()
	for _, f := range []string{"fs/inotify/max_user_watches", "kernel/pid_max", "kernel/no_such_knob"} {
		if got, want := d.read(f), hostSysctl(f); got != want {
			t.Errorf("read %s: %d, want %d", f, got, want)
		}
	}
	if d.read("kernel/pid_max") == 0 {
		t.Error("kernel/pid_max read as 0")
	}
	if d.read("kernel/no_such_knob") != 0 {
		t.Error("a missing knob read as non-zero")
	}
	if err := d.write("../self/cwd", "1"); !errors.Is(err, unix.ELOOP) {
		t.Fatalf("write through /proc/self/cwd: %v, want ELOOP", err)
	}
}
