package broker

import (
	"github.com/agentloom/loom/internal/errno"
	"github.com/agentloom/loom/sandbox"

	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentloom/loom/broker/internal/jail"
)

// The cgroup layer. A host that delegates a cgroup v2 directory to Loom
// (Options.CgroupParent) has every helper born into a child cgroup of its
// own (clone3 with CLONE_INTO_CGROUP: the helper never runs a moment
// outside it, and the host's own process is never moved), which the
// broker bounds with memory.max and pids.max from the command's Limits
// before the command is handed to the helper, and kills (cgroup.kill) and
// removes once the command's tree is gone.
const (
	// cgroupChildPrefix starts the name of every child cgroup the broker
	// makes: <prefix><host pid>-<random hex>-<sequence> (random per
	// Broker, so brokers sharing one parent never collide).
	cgroupChildPrefix = "loom-"
	// cgroupDrainTimeout bounds how long settlement waits, after killing
	// a command's cgroup, for its last process to leave before removing
	// it (a cgroup that still holds one cannot be removed; it is then
	// left behind and the next sweep tries again).
	cgroupDrainTimeout = 2 * time.Second
	// maxCgroupFileBytes bounds what the broker reads from one cgroup
	// interface file.
	maxCgroupFileBytes = 4 << 10
)

// cgroupControllers are the controllers the broker bounds a command with,
// when its parent offers them.
var cgroupControllers = []string{"memory", "pids"}

// cgroupParent is the host's delegated cgroup v2 directory, pinned by a
// descriptor.
type cgroupParent struct {
	path string
	fd   int
	// enabled lists the controllers of cgroupControllers the children
	// have; missing says why the others are absent.
	enabled []string
	missing string
	tag     string // names this Broker's children (see cgroupChildPrefix)

	mu  sync.Mutex
	seq uint64
}

// openCgroupParent pins path, checks that it is a cgroup v2 directory,
// and enables the memory and pids controllers for its children where it
// offers them. The host's own cgroup membership is never touched.
func openCgroupParent(path string) (*cgroupParent, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return nil, fmt.Errorf("cgroup parent %q is not an absolute, clean path", path)
	}
	fd, err := unix.Open(path, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("open cgroup parent %s: %s", path, errno.Name(err))
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		unix.Close(fd)
		return nil, fmt.Errorf("cgroup parent %s is not a cgroup v2 directory", path)
	}
	var tag [4]byte
	rand.Read(tag[:])
	p := &cgroupParent{path: path, fd: fd, tag: strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(tag[:])}
	offered := strings.Fields(readCgroupFile(fd, "cgroup.controllers"))
	var absent []string
	for _, c := range cgroupControllers {
		if !slices.Contains(offered, c) {
			absent = append(absent, c+" not offered (cgroup.controllers: "+cmp.Or(strings.Join(offered, " "), "none")+")")
			continue
		}
		if err := writeCgroupFile(fd, "cgroup.subtree_control", "+"+c); err != nil {
			absent = append(absent, c+" not enabled for children: "+errno.Name(err))
		}
	}
	on := strings.Fields(readCgroupFile(fd, "cgroup.subtree_control"))
	for _, c := range cgroupControllers {
		if slices.Contains(on, c) {
			p.enabled = append(p.enabled, c)
		}
	}
	p.missing = strings.Join(absent, "; ")
	return p, nil
}

// readCgroupFile reads a small interface file beneath dir, or "".
func readCgroupFile(dir int, name string) string {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	buf := make([]byte, maxCgroupFileBytes)
	n, err := unix.Read(fd, buf)
	if err != nil || n < 0 {
		return ""
	}
	return strings.TrimSpace(string(buf[:n]))
}

// writeCgroupFile writes value to an interface file beneath dir.
func writeCgroupFile(dir int, name, value string) error {
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(value))
	return err
}

// helperCgroup is the child cgroup one helper (and so one command) was
// born into.
type helperCgroup struct {
	parent *cgroupParent
	name   string
	fd     int // the child's directory; -1 when it could not be made
	// layer is what the report says: set when the child was made (or
	// could not be), refined by limit.
	layer sandbox.Layer

	removeOnce sync.Once
}

// child makes a fresh child cgroup for one helper. When it cannot be
// made the result carries fd -1 and a skipped layer saying why.
func (p *cgroupParent) child() *helperCgroup {
	p.mu.Lock()
	p.seq++
	name := cgroupChildPrefix + p.tag + "-" + strconv.FormatUint(p.seq, 10)
	p.mu.Unlock()
	c := &helperCgroup{parent: p, name: name, fd: -1}
	if err := unix.Mkdirat(p.fd, name, 0o755); err != nil {
		c.layer = sandbox.Layer{Name: sandbox.LayerCgroup, Reason: fmt.Sprintf("mkdir %s/%s: %s", p.path, name, errno.Name(err))}
		return c
	}
	fd, err := unix.Openat(p.fd, name, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		unix.Unlinkat(p.fd, name, unix.AT_REMOVEDIR)
		c.layer = sandbox.Layer{Name: sandbox.LayerCgroup, Reason: fmt.Sprintf("open %s/%s: %s", p.path, name, errno.Name(err))}
		return c
	}
	c.fd = fd
	c.layer = sandbox.Layer{Name: sandbox.LayerCgroup, Reason: "the helper was not started in its cgroup"}
	return c
}

// placed records that the helper was born in c.
func (c *helperCgroup) placed() {
	c.layer = sandbox.Layer{Name: sandbox.LayerCgroup, Reason: "no limit written yet"}
}

// limit writes the command's bounds into c before the command is handed
// to its helper: memory.max (Limits.MemoryBytes, the whole tree's memory
// including what it writes to its in-memory /tmp), memory.oom.group (an
// out-of-memory kill takes the whole tree) and pids.max
// (Limits.Processes, enforced for every uid, root included). The layer is
// applied only when at least one bound was written, and its Params say
// which.
func (c *helperCgroup) limit(l sandbox.Limits) {
	if c == nil || c.fd < 0 {
		return
	}
	var done, skipped []string
	set := func(controller, file, value string) {
		if !slices.Contains(c.parent.enabled, controller) {
			return
		}
		if err := writeCgroupFile(c.fd, file, value); err != nil {
			skipped = append(skipped, file+": "+errno.Name(err))
			return
		}
		done = append(done, file+"="+value)
	}
	set("memory", "memory.max", strconv.FormatUint(l.MemoryBytes, 10))
	set("memory", "memory.oom.group", "1")
	set("pids", "pids.max", strconv.FormatUint(l.Processes, 10))
	if c.parent.missing != "" {
		skipped = append(skipped, c.parent.missing)
	}
	where := c.parent.path + "/" + c.name
	if len(done) == 0 {
		c.layer = sandbox.Layer{Name: sandbox.LayerCgroup, Reason: "in " + where + " but no bound written: " + strings.Join(skipped, "; ")}
		return
	}
	params := "in " + where + ": " + strings.Join(done, ", ")
	if len(skipped) > 0 {
		params += "; not bounded: " + strings.Join(skipped, "; ")
	}
	c.layer = sandbox.Layer{Name: sandbox.LayerCgroup, Applied: true, Detail: strings.Join(c.parent.enabled, ","), Params: params}
}

// remove kills whatever is left in c (cgroup.kill, Linux 5.14+), waits up
// to cgroupDrainTimeout for it to empty, and removes it; a cgroup that
// would not empty stays behind, killed. Calling it again does nothing.
func (c *helperCgroup) remove() {
	if c == nil || c.fd < 0 {
		return
	}
	c.removeOnce.Do(func() {
		writeCgroupFile(c.fd, "cgroup.kill", "1")
		c.awaitEmpty(cgroupDrainTimeout)
		unix.Close(c.fd)
		unix.Unlinkat(c.parent.fd, c.name, unix.AT_REMOVEDIR)
	})
}

// awaitEmpty waits until c holds no process (cgroup.events says
// "populated 0"; the kernel signals each change to a poller with
// POLLPRI) or d passed.
func (c *helperCgroup) awaitEmpty(d time.Duration) {
	fd, err := unix.Openat(c.fd, "cgroup.events", unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(d)
	buf := make([]byte, maxCgroupFileBytes)
	for {
		n, err := unix.Pread(fd, buf, 0)
		if err != nil || strings.Contains(string(buf[:max(n, 0)]), "populated 0") {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
		if _, err := unix.Poll(fds, int(left/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// cgroupParent returns the host's delegated cgroup, opened on first use,
// or nil when Options.CgroupParent is empty or unusable (cgroupErr says
// why).
func (b *Broker) cgroupParent() *cgroupParent {
	if b.opts.CgroupParent == "" {
		return nil
	}
	b.cgOnce.Do(func() { b.cg, b.cgErr = openCgroupParent(b.opts.CgroupParent) })
	return b.cg
}

// newHelperCgroup returns the child cgroup a new helper is to be born
// into: nil when the host delegated none, one with fd -1 (and a skipped
// layer) when the delegated parent or the child is unusable.
func (b *Broker) newHelperCgroup() *helperCgroup {
	if b.opts.CgroupParent == "" {
		return nil
	}
	p := b.cgroupParent()
	if p == nil {
		return &helperCgroup{fd: -1, layer: sandbox.Layer{Name: sandbox.LayerCgroup, Reason: b.cgErr.Error()}}
	}
	return p.child()
}

// trackCgroup remembers which cgroup proc was born in, until Clear (or a
// discard) claims it.
func (b *Broker) trackCgroup(proc *jailProcess, c *helperCgroup) {
	if c != nil {
		b.helperCgroups.Store(proc, c)
	}
}

// claimCgroup returns (and forgets) the cgroup proc was born in, or nil.
func (b *Broker) claimCgroup(proc *jailProcess) *helperCgroup {
	if proc == nil {
		return nil
	}
	c, ok := b.helperCgroups.LoadAndDelete(proc)
	if !ok {
		return nil
	}
	return c.(*helperCgroup)
}

// limitHelperCgroup bounds the cgroup proc was born in by l (see
// helperCgroup.limit). The broker calls it before a helper receives its
// command's configuration.
func (b *Broker) limitHelperCgroup(proc *jailProcess, l sandbox.Limits) {
	if c, ok := b.helperCgroups.Load(proc); ok {
		c.(*helperCgroup).limit(l)
	}
}

// sweepCgroups removes the cgroup of every tracked helper whose process
// has been reaped without a command claiming it (a helper that failed to
// confine itself, say). A helper's process is reaped only after its
// command claimed its cgroup, by the discard that forgets it, or on such
// a failure, so nothing claimed is swept.
func (b *Broker) sweepCgroups() {
	b.helperCgroups.Range(func(k, v any) bool {
		proc := k.(*jailProcess)
		select {
		case <-proc.exited:
			b.helperCgroups.Delete(k)
			v.(*helperCgroup).remove()
		default:
		}
		return true
	})
}

// jailScratchBytes is what one namespaced jail reserves of the scratch
// budget: its private /tmp and its /dev (which holds /dev/shm), both
// in-memory tmpfs sized at mount.
const jailScratchBytes = sandbox.ScratchBytes + jail.DevBytes

// physicalMemoryBytes is the host's MemTotal, or 0 when unknown.
func physicalMemoryBytes() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
