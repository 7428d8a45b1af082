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
func TestRedteamPrimedSocketReboundAfterPrimingIsMasked(t *testing.T) {
	for _, control := range []bool{true, false} {
		dir := t.TempDir()
		sock := filepath.Join(dir, "svc.sock")
		l1, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		ws := gitWorkspace(t)
		p := testPolicy(ws)
		p.ReadableRoots = append(p.ReadableRoots, dir)
		var b *Broker
		if control {
			b = newTestBroker(t, Options{})
			b.tracePhases = true
			b.noPrime = true
			primedRun(t, b, p, nil, "true")
			waitPool(t, b, DefaultWarmHelpers)
		} else {
			b = primedBroker(t, p, nil, nil)
		}
		// The service restarts: Close unlinks the socket file, Listen
		// binds a new one at the same path.
		l1.Close()
		l2, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Close()
		out, s, _, primed := primedRun(t, b, p, nil, "sh", "-c", "test -S "+sock+" && echo reachable-socket; echo done")
		if !strings.Contains(out, "done") {
			t.Fatalf("control %v: the probe did not run: %q %+v", control, out, s)
		}
		if control {
			if primed || strings.Contains(out, "reachable-socket") {
				t.Fatalf("control: primed %v, %q: a helper confined at the start must mask the socket", primed, out)
			}
			continue
		}
		if strings.Contains(out, "reachable-socket") {
			t.Fatalf("a host socket rebound at its path after priming is visible to the next command (primed %v): %q", primed, out)
		}
	}
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
	for _, control := range []bool{true, false} {
		home := t.TempDir()
		netrc := filepath.Join(home, ".netrc")
		if err := os.WriteFile(netrc, []byte("machine old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ws := gitWorkspace(t)
		p := testPolicy(ws)
		p.ReadableRoots = append(p.ReadableRoots, home)
		env := map[string]string{"HOME": home}
		var b *Broker
		if control {
			b = newTestBroker(t, Options{})
			b.tracePhases = true
			b.noPrime = true
			primedRun(t, b, p, env, "true")
			waitPool(t, b, DefaultWarmHelpers)
		} else {
			b = primedBroker(t, p, env, nil)
		}
		// The host relinks the file (rm and a fresh write often get the
		// freed inode number back on ext4; a hard-link round trip, as a
		// backup or sync tool makes, always keeps it), then rewrites it in
		// place.
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
		out, s, _, primed := primedRun(t, b, p, env, "sh", "-c", "cat \"$HOME/.netrc\"; echo done")
		if !strings.Contains(out, "done") {
			t.Fatalf("control %v: the probe did not run: %q %+v", control, out, s)
		}
		if control {
			if primed || strings.Contains(out, "NEWSECRET") {
				t.Fatalf("control: primed %v, %q: a helper confined at the start must mask the secret", primed, out)
			}
			continue
		}
		if strings.Contains(out, "NEWSECRET") {
			t.Fatalf("a home secret recreated at its path (same inode) after priming is readable by the next command (primed %v): %q", primed, out)
		}
	}
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
	key := "/etc/ssh/ssh_host_loomredteam_key"
	for _, control := range []bool{true, false} {
		ws := gitWorkspace(t)
		p := testPolicy(ws)
		if !coveredByAny(slices.Concat(p.SystemRoots, p.ReadableRoots), "/etc/ssh") {
			t.Skip("the test policy does not show /etc")
		}
		var b *Broker
		if control {
			b = newTestBroker(t, Options{})
			b.tracePhases = true
			b.noPrime = true
			primedRun(t, b, p, nil, "true")
			waitPool(t, b, DefaultWarmHelpers)
		} else {
			b = primedBroker(t, p, nil, nil)
		}
		if err := os.WriteFile(key, []byte("HOSTKEY\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, s, _, primed := primedRun(t, b, p, nil, "sh", "-c", "cat "+key+"; echo done")
		os.Remove(key)
		if !strings.Contains(out, "done") {
			t.Fatalf("control %v: the probe did not run: %q %+v", control, out, s)
		}
		if control {
			if primed || strings.Contains(out, "HOSTKEY") {
				t.Fatalf("control: primed %v, %q: a helper confined at the start must mask the key", primed, out)
			}
			continue
		}
		if strings.Contains(out, "HOSTKEY") {
			t.Fatalf("an SSH host key made after priming is readable by the primed helper's command (primed %v): %q", primed, out)
		}
	}
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
	for _, control := range []bool{true, false} {
		ws := gitWorkspace(t)
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine HOMESECRET\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p := testPolicy(ws)
		p.ReadableRoots = append(p.ReadableRoots, home)
		var b *Broker
		if control {
			b = newTestBroker(t, Options{})
			b.tracePhases = true
			b.noPrime = true
			primedRun(t, b, p, nil, "true")
			waitPool(t, b, DefaultWarmHelpers)
		} else {
			b = primedBroker(t, p, nil, nil)
		}
		// In place, as an editor that truncates and writes does.
		f, err := os.OpenFile("/etc/passwd", os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString("loomredteam:x:64999:64999::" + home + ":/bin/false\n")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		out, s, _, primed := primedRun(t, b, p, nil, "sh", "-c", "cat "+filepath.Join(home, ".netrc")+"; echo done")
		if err := os.WriteFile("/etc/passwd", orig, 0o644); err != nil {
			t.Fatalf("restoring /etc/passwd: %v", err)
		}
		if !strings.Contains(out, "done") {
			t.Fatalf("control %v: the probe did not run: %q %+v", control, out, s)
		}
		if control {
			if primed || strings.Contains(out, "HOMESECRET") {
				t.Fatalf("control: primed %v, %q: a helper confined at the start must mask the home's .netrc", primed, out)
			}
			continue
		}
		if strings.Contains(out, "HOMESECRET") {
			t.Fatalf("a home added to /etc/passwd after priming has its .netrc readable by the primed helper's command (primed %v): %q", primed, out)
		}
	}
}
