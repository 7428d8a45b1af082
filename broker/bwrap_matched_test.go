//go:build linux

package broker

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
)

// bwrapMatched is bubblewrap set up to confine a command as the jail
// confines it under one policy, as far as bubblewrap's flags can:
//
//   - the same namespaces (user, mount, pid, ipc, uts, and network when
//     the policy has none), a new session, death with its parent, every
//     capability dropped;
//   - the jail's policy root: a tmpfs root, read-only at the end, holding
//     the host root's top-level links and binds of the policy's roots
//     only (read-only, writable roots read-write, nosuid and nodev), a
//     read-only bind of the file /etc/resolv.conf resolves to;
//   - a fresh /proc, its parts that configure the kernel read-only (sys,
//     sysrq-trigger, irq, bus, fs), a fresh /dev, a tmpfs at /tmp and at
//     /dev/shm (the jail's share one);
//   - the host socket directories a root covers hidden under a tmpfs, the
//     roots beneath them bound back;
//   - the protected paths read-only, the directories above them within a
//     writable root bound onto themselves (the jail's pins);
//   - every secret, host socket and kernel file the jail masks that
//     exists, a file under an empty read-only file and a directory under
//     an empty read-only tmpfs;
//   - the jail's seccomp filter (--seccomp), and no-new-privs (which
//     bubblewrap sets).
//
// What bubblewrap has no flag for is not applied: Landlock, the
// per-namespace limit sysctls (user, mount and ipc namespace counts,
// inotify and SysV IPC ceilings), pid_max, the rlimits, the locked
// securebits and pinning protected symbolic links.
type bwrapMatched struct {
	bwrap string
	args  []string
	env   []string
	// filter is a file holding the seccomp filter, handed to bubblewrap
	// as descriptor 3 ("" when this machine has none).
	filter string
}

// newBwrapMatched returns bubblewrap, at path bwrap, set up to run argv
// in the workspace dir as the jail runs it under p with env (KEY=value
// entries). sockets are the host sockets the broker would have the jail
// mask (maskedSockets).
func newBwrapMatched(tb testing.TB, bwrap string, p sandbox.Policy, dir string, env, sockets []string, argv ...string) *bwrapMatched {
	tb.Helper()
	networkOff := p.Network != sandbox.NetworkFull
	m := &bwrapMatched{bwrap: bwrap, env: env}
	a := []string{"--new-session", "--die-with-parent", "--unshare-user", "--unshare-ipc",
		"--unshare-pid", "--unshare-uts", "--cap-drop", "ALL", "--chdir", dir}
	if networkOff {
		a = append(a, "--unshare-net")
	}
	if filter := jail.SeccompFilter(networkOff); filter != nil {
		m.filter = filepath.Join(tb.TempDir(), "seccomp.bpf")
		if err := os.WriteFile(m.filter, filter, 0o600); err != nil {
			tb.Fatal(err)
		}
		a = append(a, "--seccomp", "3")
	}

	// The policy root's links: the host root's own, then roots that are
	// links themselves.
	linked := map[string]bool{}
	link := func(path, target string) {
		if !linked[path] {
			linked[path] = true
			a = append(a, "--symlink", target, path)
		}
	}
	for _, l := range jail.TopLevelLinks() {
		link("/"+l[0], l[1])
	}
	// The jail's own filesystems, before the roots bound beneath them.
	a = append(a, "--proc", "/proc", "--dev", "/dev",
		"--size", strconv.Itoa(sandbox.ScratchBytes), "--tmpfs", sandbox.ScratchDir,
		"--size", strconv.Itoa(sandbox.ScratchBytes), "--tmpfs", "/dev/shm")
	// The parts of /proc that configure the kernel, read-only as the
	// jail binds them: bubblewrap binds /proc/irq and /proc/bus so itself,
	// but skips /proc/sys and /proc/sysrq-trigger where access(2) says
	// they are not writable (it says so for uid 0 too), and never binds
	// /proc/fs. The host's are bound: what a sysctl file shows follows
	// the namespaces of the process reading it, not the procfs.
	for _, pr := range []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/fs"} {
		if _, err := os.Lstat(pr); err == nil {
			a = append(a, "--ro-bind", pr, pr)
		}
	}

	// The roots, as policyRootPlan orders and prunes them.
	visible := slices.Concat(p.SystemRoots, p.ReadableRoots, p.WritableRoots)
	all := slices.Concat(visible, p.Sockets)
	var resolv string
	if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
		resolv = r
		if coveredByAnyRoot(visible, "/etc/resolv.conf") {
			all = append(all, r)
		}
	}
	for i, r := range all {
		all[i] = filepath.Clean(r)
	}
	sort.SliceStable(all, func(i, j int) bool { return len(all[i]) < len(all[j]) })
	type bound struct {
		path     string
		writable bool
	}
	var binds []bound
	bind := func(b bound) {
		if b.writable {
			a = append(a, "--bind", b.path, b.path)
		} else {
			a = append(a, "--ro-bind", b.path, b.path)
		}
	}
	for _, r := range all {
		if r == "/" {
			tb.Fatal("bwrapMatched does not expand a root of / as the jail does")
		}
		if sandbox.Covers("/proc", r) || sandbox.Covers("/dev", r) || slices.ContainsFunc(binds, func(b bound) bool { return b.path == r }) {
			continue
		}
		w := coveredByAnyRoot(p.WritableRoots, r)
		above := -1
		for i, b := range binds {
			if sandbox.Covers(b.path, r) && (above < 0 || len(b.path) > len(binds[above].path)) {
				above = i
			}
		}
		if above >= 0 && !binds[above].writable && !w {
			continue
		}
		fi, err := os.Lstat(r)
		switch {
		case err != nil:
			continue // absent on the host: the jail binds nothing either
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(r); err == nil {
				link(r, t)
			}
			continue
		}
		binds = append(binds, bound{r, w})
		bind(binds[len(binds)-1])
	}

	// The socket directories a root covers (hideSocketDirs in the policy
	// root), the roots beneath them bound back.
	jailRoots := slices.Concat(p.SystemRoots, p.ReadableRoots, []string{dir}, p.Protected, p.WritableRoots)
	var hidden []string
	for _, d := range jail.HostSocketDirs() {
		real, err := filepath.EvalSymlinks(d)
		if err != nil || real == "/" || slices.Contains(hidden, real) ||
			!coveredByAnyRoot(jailRoots, d) || !coveredByAnyRoot(jailRoots, real) ||
			slices.ContainsFunc(jailRoots, func(r string) bool { return filepath.Clean(r) == real }) {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			continue
		}
		hidden = append(hidden, real)
		a = append(a, "--size", "65536", "--tmpfs", real)
		for _, b := range binds {
			if b.path != real && sandbox.Covers(real, b.path) {
				bind(b)
			}
		}
		for _, s := range slices.Concat(p.Sockets, []string{resolv}) {
			if s != "" && sandbox.Covers(real, s) {
				bind(bound{path: s})
			}
		}
	}

	// The protected paths (protectPlan): the directories above each within
	// a writable root pinned, parents first, then each read-only.
	var pins, ro []string
	for _, pr := range p.Protected {
		pr = filepath.Clean(pr)
		fi, err := os.Lstat(pr)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if pr, err = filepath.EvalSymlinks(pr); err != nil {
				continue
			}
		}
		if !slices.Contains(ro, pr) {
			ro = append(ro, pr)
		}
		top := ""
		for _, w := range p.WritableRoots {
			if sandbox.Covers(w, pr) && w != "/" && (top == "" || len(w) < len(top)) {
				top = filepath.Clean(w)
			}
		}
		for d := filepath.Dir(pr); top != "" && sandbox.Covers(top, d); d = filepath.Dir(d) {
			if !slices.Contains(pins, d) {
				pins = append(pins, d)
			}
			if d == top {
				break
			}
		}
	}
	sort.SliceStable(pins, func(i, j int) bool { return len(pins[i]) < len(pins[j]) })
	sort.SliceStable(ro, func(i, j int) bool { return len(ro[i]) < len(ro[j]) })
	for _, d := range pins {
		a = append(a, "--bind", d, d)
	}
	for _, pr := range ro {
		a = append(a, "--ro-bind", pr, pr)
	}

	// The masks: what the jail's mount table masks for these roots (for
	// every root, where no Landlock confines reads), and the host sockets
	// the new root can name.
	maskVisible := visible
	if abi, _ := jail.LandlockABI(); abi <= 0 {
		maskVisible = []string{"/"}
	}
	masks := jail.MaskTargets(maskVisible, envValueOf(env, "HOME"))
	for _, s := range sockets {
		if coveredByAnyRoot(visible, s) || coveredByAnyRoot(p.Sockets, s) {
			masks = append(masks, s)
		}
	}
	// The jail's stand-in for a file is an empty read-only file (so a
	// masked file reads empty); /dev/null would refuse reads instead, on
	// bubblewrap's nodev binds.
	empty := filepath.Join(tb.TempDir(), "masked")
	if err := os.WriteFile(empty, nil, 0o444); err != nil {
		tb.Fatal(err)
	}
	masked := map[string]bool{}
	for _, t := range masks {
		fi, err := os.Lstat(t)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if t, err = filepath.EvalSymlinks(t); err != nil {
				continue
			}
			if fi, err = os.Stat(t); err != nil {
				continue
			}
		}
		if masked[t] {
			continue
		}
		masked[t] = true
		if fi.IsDir() {
			a = append(a, "--perms", "0555", "--size", "4096", "--tmpfs", t, "--remount-ro", t)
		} else {
			a = append(a, "--ro-bind", empty, t)
		}
	}
	m.args = append(append(a, "--remount-ro", "/", "--"), argv...)
	return m
}

// command returns the bubblewrap command, with the seccomp filter open
// as its descriptor 3; done closes that file once the command has run.
func (m *bwrapMatched) command() (cmd *exec.Cmd, done func(), err error) {
	cmd = exec.Command(m.bwrap, m.args...)
	cmd.Env = m.env
	if m.filter == "" {
		return cmd, func() {}, nil
	}
	f, err := os.Open(m.filter)
	if err != nil {
		return nil, nil, err
	}
	cmd.ExtraFiles = []*os.File{f}
	return cmd, func() { f.Close() }, nil
}

// run runs the command and waits for it.
func (m *bwrapMatched) run() error {
	cmd, done, err := m.command()
	if err != nil {
		return err
	}
	defer done()
	return cmd.Run()
}

// coveredByAnyRoot reports whether a root in roots covers p.
func coveredByAnyRoot(roots []string, p string) bool {
	return slices.ContainsFunc(roots, func(r string) bool { return sandbox.Covers(r, p) })
}

// envValueOf is the value of name in env (the last entry counts), or "".
func envValueOf(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, name+"="); ok {
			v = rest
		}
	}
	return v
}

// TestBwrapMatchedConfines runs a script under BenchmarkCold's
// bwrap-matched row and checks it applies what it claims: a masked
// secret and a masked kernel file read empty, /proc/sys is read-only,
// the host's /run, /root and /tmp entries are absent, the network is
// only loopback, the workspace is writable but its protected git config
// is not, and the seccomp filter refuses a setuid chmod. The control:
// the same script under BenchmarkCold's bwrap row (Codex's flags) fails
// the checks of what those flags do not do.
func TestBwrapMatchedConfines(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skipf("bwrap is not installed: %v", err)
	}
	ws := newCostWorkspace(t)
	probe, err := os.CreateTemp("", "bwrap-matched-probe-")
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	defer os.Remove(probe.Name())
	secret := ""
	for _, s := range []string{"/etc/shadow", "/etc/gshadow"} {
		if fi, err := os.Stat(s); err == nil && fi.Size() > 0 {
			secret = s
			break
		}
	}
	if secret == "" {
		t.Skip("no non-empty /etc/shadow or /etc/gshadow on this host to see masked")
	}
	checks := []struct{ name, script string }{
		{"secret masked", `out=$(cat ` + secret + `) && [ -z "$out" ]`},
		{"kernel keys masked", `[ ! -e /proc/keys ] || { out=$(cat /proc/keys) && [ -z "$out" ]; }`},
		{"/proc/sys read-only", `awk '$5 == "/proc/sys" && $6 ~ /^ro/ { f = 1 } END { exit !f }' /proc/self/mountinfo`},
		{"/run hidden", `[ ! -e /run ] || [ -z "$(ls -A /run)" ]`},
		{"/root absent", `[ ! -e /root ]`},
		{"host /tmp hidden", `[ ! -e ` + probe.Name() + ` ]`},
		{"loopback only", `[ "$(grep -c : /proc/net/dev)" = 1 ]`},
		{"workspace writable", `echo x > ` + ws + `/f`},
		{"protected read-only", `! echo x >> ` + ws + `/.git/config`},
		{"seccomp refuses setuid", `echo x > ` + ws + `/s && ! chmod u+s ` + ws + `/s && chmod u+x ` + ws + `/s`},
	}
	script := ""
	for _, c := range checks {
		script += "if { " + c.script + "; } 2>/dev/null; then echo ok; else echo FAIL; fi\n"
	}
	argv := []string{"sh", "-c", script}
	p := testPolicy(ws)
	p.Protected = DefaultProtected(ws)
	b := New(Options{})
	defer b.Close()
	m := newBwrapMatched(t, bwrap, p, ws, []string{"PATH=/usr/bin:/bin"}, b.maskedSockets(nil), argv...)
	results := func(cmd *exec.Cmd, done func()) []string {
		t.Helper()
		defer done()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Skipf("bwrap cannot create its namespaces here: %v: %s", err, out)
		}
		lines := strings.Fields(string(out))
		if len(lines) != len(checks) {
			t.Fatalf("script printed %q, want one word a check", out)
		}
		return lines
	}
	cmd, done, err := m.command()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results(cmd, done) {
		if r != "ok" {
			t.Errorf("bwrap-matched: %s: %s (argv %q)", checks[i].name, r, m.args)
		}
	}
	// The control: Codex's flags leave the secret, /run, /root, the
	// host's /tmp and the setuid bit alone, so those checks fail there.
	plainResults := results(exec.Command(bwrap, codexBwrapArgs(ws, argv...)...), func() {})
	for i, c := range checks {
		want := "ok"
		switch c.name {
		case "secret masked", "/proc/sys read-only", "/run hidden", "/root absent", "host /tmp hidden", "seccomp refuses setuid", "kernel keys masked":
			want = "FAIL"
		}
		if c.name == "kernel keys masked" && plainResults[i] == "ok" {
			continue // the host may show no keys at all
		}
		if plainResults[i] != want {
			t.Errorf("control (bwrap row): %s: %s, want %s", c.name, plainResults[i], want)
		}
	}
}
