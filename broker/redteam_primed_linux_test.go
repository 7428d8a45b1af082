//go:build linux

package broker

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentloom/loom/sandbox"
)

// Red team of primed helpers (branch red3): a primed helper's masks are
// mounts on the dentries priming found. A host process that removes a
// masked file or socket and makes a new one at the same path detaches
// the mask (the kernel lazily unmounts mounts on an unlinked dentry in
// every namespace), so the primed helper then shows the new one, where a
// helper confined at the command's start masks it.

// TestRedteamPrimedSocketReboundAfterPrimingIsMasked: a host service
// under a readable root restarts between priming and the next command
// (its socket removed and bound again at the same path, as any server
// restart does). The socket table lists the same path at the handover,
// so primedFor's socket check passes, and no identity of a masked socket
// is recorded; the primed helper's mask went with the old dentry and the
// command finds the live socket. The control (no priming) masks it.
// primedWorld is one run of primedVersusFresh: the policy and
// environment of both commands, the change made between them and the
// probe, which prints its leak when it reaches what it must not, then
// "done".
type primedWorld struct {
	p      sandbox.Policy
	env    map[string]string
	change func()
	probe  string
}

// primedVersusFresh runs a world's probe on a helper confined at the
// command's start (the control) and, in a world made afresh, on one
// primed with its policy, each after the world's change. The test fails
// when the probe did not run, when the control was primed or printed
// leak (it could not tell), or when the primed helper's command printed
// leak: what names what leaked.
func primedVersusFresh(t *testing.T, world func(t *testing.T) primedWorld, leak, what string) {
	t.Helper()
	for _, control := range []bool{true, false} {
		w := world(t)
		var b *Broker
		if control {
			b = newTestBroker(t, Options{})
			b.test.tracePhases = true
			b.test.noPrime = true
			primedRun(t, b, w.p, w.env, "true")
			waitPool(t, b, defaultWarmHelpers)
		} else {
			b = primedBroker(t, w.p, w.env, nil)
		}
		w.change()
		out, s, _, primed := primedRun(t, b, w.p, w.env, "sh", "-c", w.probe)
		switch {
		case !strings.Contains(out, "done"):
			t.Fatalf("control %v: the probe did not run: %q %+v", control, out, s)
		case control && (primed || strings.Contains(out, leak)):
			t.Fatalf("control: primed %v, %q: a helper confined at the start must hide %s", primed, out, what)
		case !control && strings.Contains(out, leak):
			t.Fatalf("%s is reachable by the primed helper's command (primed %v): %q", what, primed, out)
		}
	}
}

func TestRedteamPrimedSocketReboundAfterPrimingIsMasked(t *testing.T) {
	primedVersusFresh(t, func(t *testing.T) primedWorld {
		dir := t.TempDir()
		sock := filepath.Join(dir, "svc.sock")
		l1, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		p := testPolicy(gitWorkspace(t))
		p.ReadableRoots = append(p.ReadableRoots, dir)
		// The service restarts: Close unlinks the socket file, Listen
		// binds a new one at the same path.
		restart := func() {
			l1.Close()
			l2, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l2.Close() })
		}
		return primedWorld{p: p, change: restart, probe: "test -S " + sock + " && echo reachable-socket; echo done"}
	}, "reachable-socket", "a host socket rebound at its path after priming")
}

// TestRedteamPrimedSecretRecreatedWithTheSameInodeIsMasked: the host
// removes a masked home secret and puts one back at the same path with
// the same inode number (a hard-link round trip outside the home, as
// backup and sync tools make; rm and a fresh write often do the same on
// ext4, which hands the freed inode number back): pathPrint's identity (device, inode, type) is the
// same, the inotify shortcut's events only send primedFor to compare it,
// and the primed helper (whose mask went with the old dentry) shows the
// new secret. The control (no priming) masks it.
func TestRedteamPrimedSecretRecreatedWithTheSameInodeIsMasked(t *testing.T) {
	primedVersusFresh(t, func(t *testing.T) primedWorld {
		home := t.TempDir()
		netrc := filepath.Join(home, ".netrc")
		if err := os.WriteFile(netrc, []byte("machine old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p := testPolicy(gitWorkspace(t))
		p.ReadableRoots = append(p.ReadableRoots, home)
		// The host relinks the file (rm and a fresh write often get the
		// freed inode number back on ext4; a hard-link round trip, as a
		// backup or sync tool makes, always keeps it), then rewrites it in
		// place.
		relink := func() {
			var before, after syscall.Stat_t
			syscall.Lstat(netrc, &before)
			tmp := filepath.Join(t.TempDir(), "keep")
			if err := os.Link(netrc, tmp); err != nil {
				t.Skipf("no hard link across the test's temporary directories: %v", err)
			}
			if err := os.Remove(netrc); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(tmp, netrc); err != nil {
				t.Fatal(err)
			}
			os.Remove(tmp)
			if err := os.WriteFile(netrc, []byte("machine NEWSECRET\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			syscall.Lstat(netrc, &after)
			if before.Ino != after.Ino || before.Dev != after.Dev {
				t.Fatalf("the secret's identity changed (%d, %d): the test cannot tell", before.Ino, after.Ino)
			}
		}
		return primedWorld{p: p, env: map[string]string{"HOME": home}, change: relink, probe: `cat "$HOME/.netrc"; echo done`}
	}, "NEWSECRET", "a home secret recreated at its path (same inode) after priming")
}

// TestRedteamPrimedHostKeyMadeAfterPrimingIsMasked: the system secrets
// include a glob (/etc/ssh/ssh_host_*_key). Where it matched nothing at
// priming, no path of the print lies in /etc/ssh, so the inotify shortcut
// watches /etc but not /etc/ssh; a host key generated after priming
// (ssh-keygen -A, an sshd's first start) makes no event it counts, and
// primedFor hands the primed helper (which masked no key) the command
// without comparing the print, whose secret list now names the key. The
// control (no priming) masks it. It writes a file in the host's /etc/ssh,
// so it runs only with LOOM_REDTEAM_TOUCH_ETC=1, as root.
func TestRedteamPrimedHostKeyMadeAfterPrimingIsMasked(t *testing.T) {
	if os.Getenv("LOOM_REDTEAM_TOUCH_ETC") != "1" || os.Geteuid() != 0 {
		t.Skip("writes /etc/ssh: set LOOM_REDTEAM_TOUCH_ETC=1 and run as root")
	}
	if m, _ := filepath.Glob("/etc/ssh/ssh_host_*_key"); len(m) > 0 {
		t.Skipf("the host already has keys %v: the shortcut watches /etc/ssh", m)
	}
	if _, err := os.Stat("/etc/ssh"); err != nil {
		t.Skip("no /etc/ssh")
	}
	const key = "/etc/ssh/ssh_host_loomredteam_key"
	t.Cleanup(func() { os.Remove(key) })
	primedVersusFresh(t, func(t *testing.T) primedWorld {
		os.Remove(key)
		p := testPolicy(gitWorkspace(t))
		if !slices.ContainsFunc(slices.Concat(p.SystemRoots, p.ReadableRoots), func(r string) bool { return sandbox.Covers(r, "/etc/ssh") }) {
			t.Skip("the test policy does not show /etc")
		}
		generate := func() {
			if err := os.WriteFile(key, []byte("HOSTKEY\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return primedWorld{p: p, change: generate, probe: "cat " + key + "; echo done"}
	}, "HOSTKEY", "an SSH host key made after priming")
}

// TestRedteamPrimedHomeAddedToPasswdAfterPrimingIsMasked: /etc/passwd
// edited in place after priming to name a home under a readable root
// makes no event a directory watch counts; the shortcut compares the
// file's stamp, so the home's .netrc is masked for the next command as
// for one confined afresh (the control). It edits the host's
// /etc/passwd and restores it, so it runs only with
// LOOM_REDTEAM_TOUCH_ETC=1, as root.
func TestRedteamPrimedHomeAddedToPasswdAfterPrimingIsMasked(t *testing.T) {
	if os.Getenv("LOOM_REDTEAM_TOUCH_ETC") != "1" || os.Geteuid() != 0 {
		t.Skip("edits /etc/passwd: set LOOM_REDTEAM_TOUCH_ETC=1 and run as root")
	}
	orig, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Skip("no /etc/passwd")
	}
	restore := func() {
		if err := os.WriteFile("/etc/passwd", orig, 0o644); err != nil {
			t.Errorf("restoring /etc/passwd: %v", err)
		}
	}
	t.Cleanup(restore)
	primedVersusFresh(t, func(t *testing.T) primedWorld {
		restore()
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine HOMESECRET\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p := testPolicy(gitWorkspace(t))
		p.ReadableRoots = append(p.ReadableRoots, home)
		// In place, as an editor that appends does.
		addUser := func() {
			f, err := os.OpenFile("/etc/passwd", os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("loomredteam:x:64999:64999::" + home + ":/bin/false\n"); err != nil {
				t.Fatal(err)
			}
		}
		return primedWorld{p: p, change: addUser, probe: "cat " + filepath.Join(home, ".netrc") + "; echo done"}
	}, "HOMESECRET", "the .netrc of a home added to /etc/passwd after priming")
}

// TestRedteamPrimedOtherPolicyInTheWorkspaceRelinksASecret: a command of
// another policy writing only within the primed policy's workspace (it
// does not taint the primed helpers) detaches a secret's mask of theirs
// and puts the secret back as the same inode (a hard link), which no
// identity check sees; the re-validation at the handover does (the
// workspace's watches, the mount check), so no primed helper serves the
// next command and the secret stays masked. The control turns the
// re-validation off and shows the secret.
func TestRedteamPrimedOtherPolicyInTheWorkspaceRelinksASecret(t *testing.T) {
	for _, control := range []bool{false, true} {
		ws := gitWorkspace(t)
		home := filepath.Join(ws, "home")
		if err := os.MkdirAll(home, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("SECRET\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p := testPolicy(ws)
		env := map[string]string{"HOME": home} // its secrets masked
		b := primedBroker(t, p, env, func(b *Broker) { b.test.primeCheckOff = control })
		// Another policy on the same workspace, its HOME elsewhere (so
		// the workspace's .netrc is not masked for it), of another broker.
		other, ob := testPolicy(ws), newTestBroker(t, Options{WarmHelperIdle: -1})
		other.ReadableRoots = append(slices.Clone(other.ReadableRoots), t.TempDir())
		ob.test.tracePhases = true
		if out, s, _, _ := primedRun(t, ob, other, nil, "sh", "-c", "cd home && ln .netrc x && rm .netrc && ln x .netrc && rm x"); s.ExitCode != 0 {
			t.Fatalf("the other policy's command: %q %+v", out, s)
		}
		out, _, _, primed := primedRun(t, b, p, env, "sh", "-c", "cat \"$HOME/.netrc\"")
		if control {
			if !primed || !strings.Contains(out, "SECRET") {
				t.Fatalf("control: primed %v, %q: the test cannot tell", primed, out)
			}
			continue
		}
		if primed || strings.Contains(out, "SECRET") {
			t.Fatalf("after another policy's command: primed %v, %q", primed, out)
		}
	}
}
