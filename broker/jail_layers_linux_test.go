//go:build linux

package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"

	"golang.org/x/sys/unix"
)

func TestMaskedSecretListsAreCopies(t *testing.T) {
	s := MaskedSystemSecrets()
	s[0] = "changed"
	h := MaskedHomeSecrets()
	h[0] = "changed"
	if MaskedSystemSecrets()[0] == "changed" || MaskedHomeSecrets()[0] == "changed" {
		t.Fatal("the exported lists share their backing arrays")
	}
	for _, want := range []string{"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d", "/etc/ssh/ssh_host_*_key"} {
		if !slices.Contains(MaskedSystemSecrets(), want) {
			t.Errorf("system secrets lack %s", want)
		}
	}
	for _, want := range []string{".ssh", ".aws", ".netrc", ".config/gh", ".docker/config.json", ".kube", ".gnupg"} {
		if !slices.Contains(MaskedHomeSecrets(), want) {
			t.Errorf("home secrets lack %s", want)
		}
	}
}

func TestParseUnixTable(t *testing.T) {
	table := "Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 17351 /run/systemd/private\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 17352 /home/u/.gnupg/S.gpg-agent\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 17353 /home/u/with space.sock\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 17354 @/tmp/.X11-unix/X0\n" +
		"0000000000000000: 00000003 00000000 00000000 0001 03 17355\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 17356 relative.sock\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 17357 /home/u/shared.sock\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 17358 /home/u/.gnupg/S.gpg-agent\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 17359 /srv/elsewhere.sock\n"
	got := parseUnixTable(strings.NewReader(table), []string{"/home/u", "/run"}, []string{"/home/u/shared.sock"})
	want := []string{"/run/systemd/private", "/home/u/.gnupg/S.gpg-agent", "/home/u/with space.sock"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestRequiredLayerRefused: a host that requires the mount layer gets a
// layer_required denial, and no command runs, where the jail has no
// mount namespace; without the requirement the same command runs with a
// report that says the mount layer is missing and why.
func TestRequiredLayerRefused(t *testing.T) {
	ws := t.TempDir()
	marker := filepath.Join(ws, "ran")
	for _, required := range [][]string{nil, {sandbox.LayerMounts}, {sandbox.LayerNamespaces}, {sandbox.LayerSeccomp}} {
		b := newTestBroker(t, Options{WarmHelperIdle: -1, RequiredLayers: required})
		b.probeOnce.Do(func() {
			b.probe = probeLayers(b.opts.HelperPath, false)
			b.probe.usernsErr = unix.EPERM // as where unprivileged user namespaces are refused
		})
		os.Remove(marker)
		r, d := tryRun(b, t.Name(), testPolicy(ws), 10*time.Second, "sh", "-c", "touch "+marker)
		_, ranErr := os.Stat(marker)
		switch {
		case len(required) == 0 || required[0] == sandbox.LayerSeccomp:
			if d != nil {
				t.Fatalf("required %v: refused: %v", required, d)
			}
			if ranErr != nil {
				t.Errorf("required %v: the command did not run", required)
			}
			l, ok := r.enf.Layer(sandbox.LayerMounts)
			if !ok || l.Applied || !strings.Contains(l.Reason, "no mount namespace") || !r.enf.Degraded {
				t.Errorf("required %v: mounts layer %+v (present %v), degraded %v", required, l, ok, r.enf.Degraded)
			}
		default:
			var den *sandbox.Denial
			if !errors.As(d, &den) || den.Code != sandbox.DenialLayerRequired {
				t.Fatalf("required %v: got %v, want %s", required, d, sandbox.DenialLayerRequired)
			}
			if ranErr == nil {
				t.Errorf("required %v: the command ran although refused", required)
			}
		}
		b.Close()
	}
}

// TestRlimitsReportWhatBoundsProcesses: the rlimits layer names
// RLIMIT_NPROC only where the kernel enforces it (never for uid 0), and
// then says the pid namespace's pid_max bounds the processes instead.
func TestRlimitsReportWhatBoundsProcesses(t *testing.T) {
	b := newTestBroker(t, Options{})
	defer b.Close()
	p := testPolicy(t.TempDir())
	p.Limits.Processes = 77
	r := run(t, b, p, 10*time.Second, "true")
	l, ok := r.enf.Layer(sandbox.LayerRlimits)
	if !ok || !l.Applied {
		t.Fatalf("rlimits layer: %+v", l)
	}
	if os.Getuid() == 0 {
		if strings.Contains(l.Params, "nproc 77") || !strings.Contains(l.Params, "nproc not enforced for uid 0") || !strings.Contains(l.Params, "pid_max 378") {
			t.Errorf("uid 0: rlimits params %q", l.Params)
		}
	} else if !strings.Contains(l.Params, "nproc 77") {
		t.Errorf("uid %d: rlimits params %q", os.Getuid(), l.Params)
	}
}

// TestWritableRootsNosuid: inside the jail the workspace's mount is
// nosuid and nodev and writable, and the host view around it read-only.
func TestWritableRootsNosuid(t *testing.T) {
	b := newTestBroker(t, Options{})
	defer b.Close()
	ws := t.TempDir()
	r := run(t, b, testPolicy(ws), 10*time.Second, "sh", "-c", `grep -E " (`+ws+`|/usr|/) " /proc/self/mountinfo`)
	found := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 {
			found[f[4]] = f[5]
		}
	}
	opts := func(mp string) []string { return strings.Split(found[mp], ",") }
	if o := opts(ws); !slices.Contains(o, "rw") || !slices.Contains(o, "nosuid") || !slices.Contains(o, "nodev") {
		t.Errorf("workspace mount options %v (mountinfo %q)", o, r.stdout)
	}
	if o := opts("/"); !slices.Contains(o, "ro") {
		t.Errorf("/ mount options %v, want ro", o)
	}
}

// TestSystemRootsReachTheJail: a policy whose programs' roots are in
// SystemRoots alone runs them and reads under them; without them the
// same file is out of reach.
func TestSystemRootsReachTheJail(t *testing.T) {
	b := newTestBroker(t, Options{})
	defer b.Close()
	ws := t.TempDir()
	sys := t.TempDir()
	if err := os.WriteFile(filepath.Join(sys, "tool.conf"), []byte("system-root-content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testPolicy(ws)
	p.SystemRoots, p.ReadableRoots = append(p.ReadableRoots, sys), nil
	r := run(t, b, p, 10*time.Second, "cat", filepath.Join(sys, "tool.conf"))
	if !strings.Contains(r.stdout, "system-root-content") {
		t.Fatalf("system root not readable: %+v %q %q", r.settled, r.stdout, r.stderr)
	}
	p.SystemRoots = p.SystemRoots[:len(p.SystemRoots)-1]
	r = run(t, b, p, 10*time.Second, "cat", filepath.Join(sys, "tool.conf"))
	if strings.Contains(r.stdout, "system-root-content") {
		t.Fatalf("readable without its system root")
	}
}

// TestSecretsMaskedWithoutLandlock: where Landlock is missing nothing
// confines reads, so secrets are masked wherever the jail's view shows
// them, not only under its roots. The home here is outside /tmp and, in
// the host view (the policy_root layer off), under no root, so the
// jail's mount table shows it as the host has it; with the policy's root
// it is shown only because base is listed as a readable root.
func TestSecretsMaskedWithoutLandlock(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "loom-nolandlock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	home := filepath.Join(base, "home")
	cred := filepath.Join(home, ".aws", "credentials")
	if err := os.MkdirAll(filepath.Dir(cred), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cred, []byte("s3cr3t-no-landlock\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rootOff := range []bool{true, false} {
		b := newTestBroker(t, Options{WarmHelperIdle: -1})
		b.test.policyRootOff = rootOff
		b.probeOnce.Do(func() {
			b.probe = probeLayers(b.opts.HelperPath, false)
			b.probe.landlockABI, b.probe.landlockErr = 0, unix.EOPNOTSUPP
		})
		p := testPolicy(t.TempDir())
		if !rootOff {
			p.ReadableRoots = append(p.ReadableRoots, base)
		}
		for _, asHome := range []bool{false, true} {
			env := map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
			if asHome {
				env["HOME"] = home
			}
			ex, d := b.Clear(context.Background(), sandbox.CallSpec{Key: sandbox.StepKey{OpID: "t", StepID: t.Name()}, Argv: []string{"cat", cred},
				Env: env, Policy: p, Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 10 * time.Second})
			if d != nil {
				t.Fatal(d)
			}
			r := collect(ex)
			if r.enf.Applied(sandbox.LayerLandlock) || r.enf.Applied(sandbox.LayerPolicyRoot) == rootOff {
				t.Fatalf("layers %s: the test does not exercise Landlock's absence with policy_root off=%v", r.enf, rootOff)
			}
			leaked := strings.Contains(r.stdout, "s3cr3t-no-landlock")
			// Not a home: an ordinary file, readable for want of Landlock
			// (the control). The command's HOME: masked.
			if leaked == asHome {
				t.Errorf("policy_root off=%v, HOME is the file's home: %v; leaked: %v (stdout %q stderr %q)", rootOff, asHome, leaked, r.stdout, r.stderr)
			}
		}
		b.Close()
	}
}

// namespaceLimitsRoom is what ordinary tools need under the jail's
// namespace limits, and each check the jail must pass: a SysV segment a
// database test server configures (64 MiB, written through), one as
// large as the bound, and a recursive watcher over a few thousand files.
var namespaceLimitsRoom = []struct{ name, script string }{
	{"sysv segment 64 MiB written", layerProbeEnv + `=shm-touch exec "$PROBE" ` + strconv.Itoa(64<<20)},
	{"sysv segment at the bound", layerProbeEnv + `=shm exec "$PROBE" ` + strconv.Itoa(jail.SysVShmBytes)},
	{"4000 inotify watches", layerProbeEnv + `=inotify exec "$PROBE" "$(mktemp -d -p /dev/shm loom-inotify-XXXXXX)" 4000`},
}

// TestNamespaceLimitsLeaveRoom: under the namespace limits the jail
// still runs what ordinary tools do (namespaceLimitsRoom), and, as uid 0
// (which may set every limit), the report says each limit was set with
// its value.
func TestNamespaceLimitsLeaveRoom(t *testing.T) {
	b := newTestBroker(t, Options{})
	defer b.Close()
	for _, tc := range namespaceLimitsRoom {
		t.Run(tc.name, func(t *testing.T) {
			e := newEscapeEnv(t)
			r := runIn(t, b, e, e.policy(), 30*time.Second, tc.script)
			if !strings.Contains(r.stdout, "PROBE-SUCCEEDED") {
				t.Errorf("stdout %q stderr %q settled %+v", r.stdout, r.stderr, r.settled)
			}
			l, ok := r.enf.Layer(sandbox.LayerNamespaceLimits)
			if !ok {
				t.Fatalf("no %s layer in %s", sandbox.LayerNamespaceLimits, r.enf)
			}
			if os.Geteuid() != 0 {
				return
			}
			if !l.Applied {
				t.Errorf("uid 0: %+v", l)
			}
			for _, want := range []string{
				"kernel.shmmax=" + strconv.Itoa(jail.SysVShmBytes),
				"kernel.shmall=" + strconv.Itoa(jail.SysVShmBytes/os.Getpagesize()),
				"kernel.msgmni=" + strconv.Itoa(jail.SysVMsgQueues),
				"fs.mqueue.queues_max=" + strconv.Itoa(jail.MqueueQueues),
				"user.max_inotify_watches=",
				"user.max_user_namespaces=0",
			} {
				if !strings.Contains(l.Params, want) {
					t.Errorf("params %q lack %q", l.Params, want)
				}
			}
		})
	}
}

// TestDevShmSharesScratch: POSIX shared memory has room for what a
// program maps there (64 MiB, as Python's multiprocessing.shared_memory
// or a database's dynamic shared memory takes), and it is the scratch
// tmpfs itself (one device with /tmp, so the one ScratchBytes the broker
// reserves bounds both), not /dev's small one.
func TestDevShmSharesScratch(t *testing.T) {
	b := newTestBroker(t, Options{})
	defer b.Close()
	e := newEscapeEnv(t)
	r := runIn(t, b, e, e.policy(), 30*time.Second,
		`head -c 64M /dev/zero > /dev/shm/seg && rm /dev/shm/seg && stat -c %d /tmp /dev/shm /dev`)
	f := strings.Fields(r.stdout)
	if r.settled.ExitCode != 0 || len(f) != 3 {
		t.Fatalf("stdout %q stderr %q settled %+v", r.stdout, r.stderr, r.settled)
	}
	if f[0] != f[1] || f[1] == f[2] {
		t.Errorf("devices /tmp %s, /dev/shm %s, /dev %s: want /dev/shm on /tmp's", f[0], f[1], f[2])
	}
	if l, _ := r.enf.Layer(sandbox.LayerMounts); !strings.Contains(l.Params, "/tmp and /dev/shm share one scratch tmpfs") {
		t.Errorf("mounts params %q", l.Params)
	}
}
