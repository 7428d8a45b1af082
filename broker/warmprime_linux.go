package broker

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentloom/loom/internal/gitguard"
	"golang.org/x/sys/unix"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
)

// Primed helpers.
//
// Commands cleared back to back usually carry one of a few policies (the
// plane's bash, a sub-agent's, a call granted more). A warm helper may
// therefore be primed, while it waits, with the policy of a recent
// command of its flavour (one of the last maxPrimedPolicies, the one the
// fewest ready helpers are primed for): it builds that policy's mounts
// and applies its rlimits, capabilities, no-new-privs, Landlock and
// seccomp (the helper's confine), exactly as it would for a command, and
// then waits for its command. Landlock and seccomp cannot be undone, so a
// primed helper can only ever serve that exact policy (jail.PrimeKey); a
// helper primed for a policy the pool no longer primes for is retired
// when a command of its flavour comes (takeWarm), never reused.
//
// What priming read from the host may have changed by the time the
// command comes, so the broker hands a primed helper a command only when
// all of these hold, and otherwise retires it and confines the command
// afresh (primedFor):
//   - the command's policy is the primed one (the helper checks it again
//     and refuses otherwise);
//   - every host socket the command's start lists was masked by the
//     priming (a socket bound since is not);
//   - the git guard's watch of every writable root stood and counted no
//     change between before priming and the handover (so no git control
//     file, protected path or root within them appeared, went or was
//     replaced);
//   - the identity (device, inode, type, link target) or absence of every
//     host path priming depended on — every root, the working directory,
//     every protected path, every secret it would mask, the resolver
//     file, the socket directories, the host root's top-level links — is
//     the same at the handover as before priming (pathPrint);
//   - no command with another policy, of any Broker in the process, that
//     may write outside the primed policy's writable roots was running
//     while the helper was primed or started since (such a command could
//     have changed a path priming read and put the same inode back, a
//     hard link, say; one with this policy, or with another whose
//     writable roots lie within these, can change only the writable
//     roots, where every path priming read is covered by the watches and
//     the checks below, as against any host process);
//   - every mount priming made is still in the helper's table (a host
//     process removing a path a mask or bind sits on detaches it, even
//     when the path is made again with its old inode number).
//
// The last two comparisons are skipped only when an inotify watch of
// the directory of every such path (the sockets it masked and the
// directories of the secret globs included) and of each ancestor saw no
// entry made, removed or renamed since before priming looked, the HOME
// is the priming's and /etc/passwd (which names the other homes) has
// the same stamp.

// maxPrimedPolicies is how many policies, per flavour, the warm pool
// primes helpers for: the most recent ones.
const maxPrimedPolicies = 3

// primeBook is the warm pool's record of priming (under warmPool.mu).
type primeBook struct {
	// sources are, per flavour, the priming configurations of the last
	// maxPrimedPolicies distinct policies of that flavour's commands
	// that could be primed for, the most recent first.
	sources map[flavour][]primeSource
	// reserve: a command of the flavour found only helpers primed for
	// another policy; from then on one helper of it stays unprimed.
	reserve map[flavour]bool
	// failed is, per flavour, the key of the last policy priming failed
	// for: it is not primed for again.
	failed map[flavour]string
}

// primeSource is a priming configuration (Prime set, no command) and its
// jail.PrimeKey.
type primeSource struct {
	cfg jail.Config
	key string
}

// recent says whether key is one of the policies flavour f's helpers are
// primed for now.
func (pb *primeBook) recent(f flavour, key string) bool {
	return slices.ContainsFunc(pb.sources[f], func(s primeSource) bool { return s.key == key })
}

// drop stops priming flavour f's helpers for key.
func (pb *primeBook) drop(f flavour, key string) {
	pb.sources[f] = slices.DeleteFunc(pb.sources[f], func(s primeSource) bool { return s.key == key })
}

// primeLedger is the process's record, across every Broker in it, of the
// commands running and the helpers primed: a command of one broker can
// change what a helper of another was primed with.
var primeLedger struct {
	mu sync.Mutex
	// live counts the running commands by policy key.
	live map[string]*liveCommands
	// open are the records of primed (or priming) helpers not yet handed
	// a command or discarded.
	open map[*primeRecord]bool
}

// primeRecord is what the broker knows of a primed helper's priming.
type primeRecord struct {
	key string
	// writable is where a command of the primed policy may write
	// (writableReach of its writable roots), which its watches cover.
	writable []string
	sockets  []string         // the host sockets the priming masked
	watches  []gitguard.Stamp // each writable root's git watch before priming
	print    []pathIdent
	// wds are the printWatch descriptors of the directories of print's
	// paths and their ancestors, wdEvents their event count before print
	// was taken, and watched says they cover every one of them.
	wds      []int32
	wdEvents uint64
	watched  bool
	// home is the HOME priming masked the secrets of, passwd the stamp of
	// the /etc/passwd that named the other homes (edited in place, it
	// makes no event a directory watch sees).
	home   string
	passwd fileStamp
	// mounts are the ids of the mounts in the primed helper's table once
	// it said primed (helperMountIDs): a mask or bind whose host dentry
	// was removed or replaced since (a socket bound again, a secret
	// written anew, even with its old inode number) is detached by the
	// kernel and missing from it.
	mounts []string
	// reach are the paths the priming depends on (primeReach), nil until
	// known (under primeLedger.mu).
	reach []string
	// tainted: a command with another policy that may write within
	// reach started since priming began (under primeLedger.mu).
	tainted bool
}

// primable says whether a helper could be primed for cfg: a policy's
// own root (not an empty root, not the host view), with namespaces, and
// the git guard on (its watches are what re-validates the writable
// roots).
func (b *Broker) primable(cfg jail.Config) bool {
	return cfg.Namespaces && cfg.EmptyRoot == nil && !cfg.TestHookPolicyRootOff && !cfg.HostViewByRemount &&
		!b.git.Test.Off && !b.test.noPrime && len(cfg.WritableRoots) > 0
}

// notePrimeSource records cfg (a command's configuration) as what the
// next helpers of flavour f are primed for, when it can be.
func (b *Broker) notePrimeSource(f flavour, cfg jail.Config) {
	if !b.primable(cfg) {
		return
	}
	src := cfg
	src.Argv, src.MaskSockets = nil, nil
	src.Env = nil
	if h := cfg.Home(); h != "" {
		src.Env = []string{"HOME=" + h}
	}
	src.Trace, src.NullStdin, src.Extra, src.Prime = false, false, jail.ExtraNone, true
	key := string(jail.PrimeKey(src))
	p := &b.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.primes.sources == nil {
		p.primes.sources = map[flavour][]primeSource{}
	}
	p.primes.drop(f, key)
	if p.primes.failed[f] == key {
		return // not primed for again
	}
	recent := append([]primeSource{{src, key}}, p.primes.sources[f]...)
	p.primes.sources[f] = recent[:min(len(recent), maxPrimedPolicies)]
}

// noteStart records that a command with policy key, writing (at most)
// under writable, starts in some Broker of the process: every primed
// helper of another policy whose priming depended on a path within
// writable (or whose paths are not known yet) is tainted, unless writable
// lies within that policy's own writable roots (confinedTo). It returns
// what to call once the command's tree is gone.
func noteStart(key string, writable []string) (done func()) {
	w := writableReach(writable)
	l := &primeLedger
	l.mu.Lock()
	defer l.mu.Unlock()
	for r := range l.open {
		if r.key != key && !confinedTo(w, r.writable) && (r.reach == nil || reaches(w, r.reach)) {
			r.tainted = true
		}
	}
	if l.live == nil {
		l.live = map[string]*liveCommands{}
	}
	c := l.live[key]
	if c == nil {
		c = &liveCommands{writable: w}
		l.live[key] = c
	}
	c.n++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if c.n--; c.n <= 0 {
			delete(l.live, key)
		}
	}
}

// liveCommands are the running commands of one policy: how many, and
// the paths they may write under (writableReach).
type liveCommands struct {
	n        int
	writable []string
}

// writableReach is where a command with these writable roots may write:
// each root as written and where it resolves now.
func writableReach(writable []string) []string {
	out := make([]string, 0, 2*len(writable))
	for _, w := range writable {
		out = append(out, filepath.Clean(w))
		if r, err := filepath.EvalSymlinks(w); err == nil && r != filepath.Clean(w) {
			out = append(out, r)
		}
	}
	return out
}

// reaches says whether a path in paths lies within a root of writable.
func reaches(writable, paths []string) bool {
	for _, w := range writable {
		for _, p := range paths {
			if sandbox.Covers(w, p) {
				return true
			}
		}
	}
	return false
}

// confinedTo says whether every path of writable (a writableReach) lies
// within a root of roots (another): a command writing there can change
// only what a command of the policy with roots could, which is what a
// primed helper's watches and checks are built to see.
func confinedTo(writable, roots []string) bool {
	if len(writable) == 0 || len(roots) == 0 {
		return false
	}
	for _, w := range writable {
		if !slices.ContainsFunc(roots, func(r string) bool { return sandbox.Covers(r, w) }) {
			return false
		}
	}
	return true
}

// othersLiveLocked says whether a command with a policy other than rec's
// runs in the process and may write where rec's priming read (any such
// command, while rec's paths are not known), outside rec's own writable
// roots; primeLedger.mu is held.
func othersLiveLocked(rec *primeRecord) bool {
	for k, c := range primeLedger.live {
		if k != rec.key && c.n > 0 && !confinedTo(c.writable, rec.writable) && (rec.reach == nil || reaches(c.writable, rec.reach)) {
			return true
		}
	}
	return false
}

// openPrime registers rec (its paths not known yet) unless a command
// with another policy runs; it says whether it did.
func openPrime(rec *primeRecord) bool {
	l := &primeLedger
	l.mu.Lock()
	defer l.mu.Unlock()
	if othersLiveLocked(rec) {
		return false
	}
	if l.open == nil {
		l.open = map[*primeRecord]bool{}
	}
	l.open[rec] = true
	return true
}

// setReach records the paths rec's priming depends on (primeReach), from
// which on only a command that may write within them taints it.
func setReach(rec *primeRecord, reach []string) {
	primeLedger.mu.Lock()
	rec.reach = reach
	primeLedger.mu.Unlock()
}

// closePrime unregisters rec and says whether it is clean: not tainted,
// and no command with another policy that may write where its priming
// read runs.
func closePrime(rec *primeRecord) bool {
	l := &primeLedger
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.open, rec)
	return !rec.tainted && !othersLiveLocked(rec)
}

// primeReach is every path of print, and every one again where its
// directory resolves now (a path reached through a link is changed by
// whoever may write where the link leads).
func primeReach(print []pathIdent) []string {
	out := make([]string, 0, 2*len(print))
	dirs := map[string]string{}
	for _, id := range print {
		out = append(out, id.path)
		d := filepath.Dir(id.path)
		r, ok := dirs[d]
		if !ok {
			if x, err := filepath.EvalSymlinks(d); err == nil {
				r = x
			}
			dirs[d] = r
		}
		if r != "" && r != d {
			out = append(out, filepath.Join(r, filepath.Base(id.path)))
		}
	}
	return out
}

// prime primes the warm helper h, just started and prepared, for the
// recent policy of its flavour the fewest ready helpers are primed for
// (the most recent among equals), if there is one. It returns an error
// only when h tried and failed (it is then unusable and the caller
// discards it); a helper that was not primed stays as it was.
func (b *Broker) prime(h *waitingHelper) error {
	p := &b.pool
	p.mu.Lock()
	var src jail.Config
	var rec *primeRecord
	fewest := -1
	for _, s := range p.primes.sources[h.flavour] {
		n := 0
		for _, r := range p.ready {
			if r.flavour == h.flavour && r.prime != nil && r.prime.key == s.key {
				n++
			}
		}
		if fewest < 0 || n < fewest {
			src, rec, fewest = s.cfg, &primeRecord{key: s.key}, n
		}
	}
	ok := rec != nil
	unprimed := slices.ContainsFunc(p.ready, func(r *waitingHelper) bool { return r.flavour == h.flavour && r.prime == nil })
	reserved := p.primes.reserve[h.flavour] && !unprimed
	p.mu.Unlock()
	if !ok || reserved {
		return nil
	}
	rec.writable = writableReach(src.WritableRoots)
	if !openPrime(rec) {
		return nil
	}
	forget := func() { closePrime(rec) }
	watches, ok := b.git.Stamps(src.WritableRoots)
	if !ok {
		forget()
		return nil
	}
	rec.watches = watches
	// The directories are watched before the paths are looked at, so any
	// change after the look shows as an event.
	first, firstSockets := pathPrint(src), b.maskedSockets(src.Sockets)
	// The glob secrets' directories too (a match made after priming is an
	// event there even where the glob matched nothing), and the sockets
	// it masks (one bound again is an event in its directory).
	reach := slices.Concat(primeReach(first), jail.SecretGlobs(), firstSockets)
	rec.wds, rec.wdEvents, rec.watched = printWatchAdd(reach)
	rec.print = pathPrint(src)
	src.MaskSockets = b.maskedSockets(src.Sockets)
	rec.sockets = src.MaskSockets
	// The watches cover the paths looked at only if the same ones were.
	rec.watched = rec.watched && slices.Equal(firstSockets, rec.sockets) &&
		slices.EqualFunc(first, rec.print, func(a, b pathIdent) bool { return a.path == b.path })
	rec.home = src.Home()
	rec.passwd = passwdStamp()
	setReach(rec, slices.Concat(reach, primeReach(rec.print)))
	payload, err := json.Marshal(src)
	if err != nil {
		forget()
		return nil
	}
	h.cfgW.Write(append(payload, '\n')) // an error means the helper is gone; the read says so
	rep, err := h.readLine()
	switch {
	case err != nil:
		err = fmt.Errorf("primed helper ended (%w)", err)
	case rep.Fatal != "":
		err = errors.New(rep.Fatal)
	case !rep.Primed:
		err = errors.New("primed helper said something else than primed")
	}
	if err != nil {
		forget()
		p.mu.Lock()
		if p.primes.failed == nil {
			p.primes.failed = map[flavour]string{}
		}
		p.primes.failed[h.flavour] = rec.key
		p.primes.drop(h.flavour, rec.key)
		p.mu.Unlock()
		return err
	}
	rec.mounts = helperMountIDs(h)
	h.prime = rec
	return nil
}

// helperMountIDs returns the sorted ids of the mounts in h's mount
// namespace (its /proc/<pid>/mountinfo; the broker has not reaped it, so
// the pid is its), or nil when they cannot be read.
func helperMountIDs(h *waitingHelper) []string {
	pid := h.proc.pid
	if h.proc.launched {
		pid = h.proc.jailPid
	}
	if pid <= 0 {
		return nil
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil || len(raw) == 0 {
		return nil
	}
	var ids []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(raw)), "\n") {
		id, _, _ := strings.Cut(line, " ")
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// primedFor says whether the primed helper h may serve a command whose
// configuration is cfg (see the conditions above). Either way h's record
// is closed: a helper that may not is retired by the caller.
func (b *Broker) primedFor(h *waitingHelper, cfg jail.Config) bool {
	rec := h.prime
	key := string(jail.PrimeKey(cfg))
	clean := closePrime(rec)
	ok := rec.key == key && (clean || b.test.primeTaintOff)
	if !ok || b.test.primeCheckOff {
		return ok
	}
	if !jail.SocketsCovered(cfg.MaskSockets, rec.sockets) || !gitguard.Sync() {
		return false
	}
	for _, w := range rec.watches {
		if !w.Unchanged() {
			return false
		}
	}
	if rec.watched && cfg.Home() == rec.home && passwdStamp() == rec.passwd {
		if n, ok := printWatchSum(rec.wds); ok && n == rec.wdEvents {
			// No entry of any directory holding a path priming depended on
			// (a mask's or a bind's among them) was made, removed or
			// renamed: no path changed, and none of its mounts was detached.
			return true
		}
	}
	// Every mount priming made is still there: the host removing a path
	// a mask or bind sits on detaches it whatever identity the path has
	// again (a socket rebound, a secret recreated with its inode number).
	if m := helperMountIDs(h); !b.test.primeMountsOff && (rec.mounts == nil || !slices.Equal(m, rec.mounts)) {
		return false
	}
	return slices.Equal(pathPrint(cfg), rec.print)
}

// forgetPrime closes h's priming record, if any (h is being discarded).
func (b *Broker) forgetPrime(h *waitingHelper) {
	if h.prime != nil {
		closePrime(h.prime)
	}
}

// fileStamp is what changes when a file is replaced or written: its
// identity, size and times.
type fileStamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
	errno        unix.Errno
}

// passwdStamp is the host's /etc/passwd's fileStamp (hostHomes reads it).
func passwdStamp() fileStamp {
	var st unix.Stat_t
	if err := unix.Stat("/etc/passwd", &st); err != nil {
		e, _ := err.(unix.Errno)
		return fileStamp{errno: e}
	}
	return fileStamp{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

// pathIdent is what pathPrint records of one host path.
type pathIdent struct {
	path     string
	dev, ino uint64
	mode     uint32
	link     string
	errno    unix.Errno
}

// pathPrint records the identity, or the absence, of every host path a
// helper confined for cfg's policy depends on (jail.HostPaths: the
// roots, the working directory, the protected paths, the secrets it
// would mask, the kernel files it masks, the resolver file and the host
// socket directories and where they lead, the shared sockets), and the
// host root's top-level links (jail.TopLevelLinks).
func pathPrint(cfg jail.Config) []pathIdent {
	paths := jail.HostPaths(cfg)
	out := make([]pathIdent, 0, len(paths)+8)
	for _, l := range jail.TopLevelLinks() {
		out = append(out, pathIdent{path: "/" + l[0], link: l[1]})
	}
	for _, p := range paths {
		id := pathIdent{path: p}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			id.errno, _ = err.(unix.Errno)
			if id.errno == 0 {
				id.errno = unix.EIO
			}
		} else {
			id.dev, id.ino, id.mode = st.Dev, st.Ino, st.Mode&unix.S_IFMT
			if id.mode == unix.S_IFLNK {
				id.link, _ = os.Readlink(p)
			}
		}
		out = append(out, id)
	}
	return out
}

// printWatch is the process's inotify instance watching the directories
// the paths of priming records lie in, and every ancestor of each: an
// entry of a directory cannot appear, go or be replaced (nor a directory
// be moved or removed) without an event in a watched directory, so while
// none came, no path of a record changed its identity and primedFor need
// not look (printUnchanged). Only filesystems whose every change passes
// through this kernel's inotify are trusted so (printWatchedFS); a
// record with a path elsewhere is always looked at.
var printWatch struct {
	once sync.Once
	fd   int
	err  error

	mu       sync.Mutex
	changes  map[int32]uint64 // events noted per watch descriptor
	overflow uint64           // queue overflows noted
	buf      []byte
}

// printWatchMask is every event that adds, removes or replaces a
// directory entry, or moves or removes the directory itself.
const printWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ATTRIB | unix.IN_ONLYDIR

// printWatchedFS says whether a filesystem of this magic delivers an
// inotify event for every change to it (local filesystems; not network,
// FUSE, overlay or kernel filesystems, whose changes may come from
// elsewhere).
func printWatchedFS(magic int64) bool {
	switch magic {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.F2FS_SUPER_MAGIC:
		return true
	}
	return false
}

// printReadBytes sizes the buffer printWatch reads events into: many
// events per read(2), and at least one of the largest (a header and a
// NAME_MAX name).
const printReadBytes = 64 << 10

// printWatchStart opens the instance once.
func printWatchStart() error {
	w := &printWatch
	w.once.Do(func() {
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			w.err = err
			return
		}
		w.fd, w.changes, w.buf = fd, map[int32]uint64{}, make([]byte, printReadBytes)
	})
	return w.err
}

// printDrainLocked notes every event queued; printWatch.mu is held. It
// reports whether the queue read empty (false: reading failed).
func printDrainLocked() bool {
	w := &printWatch
	for {
		n, err := unix.Read(w.fd, w.buf)
		switch {
		case err == unix.EAGAIN:
			return true
		case err == unix.EINTR:
			continue
		case err != nil || n <= 0:
			return false
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(w.buf[off:]))
			mask := binary.NativeEndian.Uint32(w.buf[off+4:])
			off += unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(w.buf[off+12:]))
			if mask&unix.IN_Q_OVERFLOW != 0 {
				w.overflow++
				continue
			}
			w.changes[wd]++
		}
	}
}

// printWatchAdd watches the directory of every path in reach and every
// ancestor of it, and returns the watches with their event count now;
// false when one lies on a filesystem printWatchedFS does not trust or
// cannot be watched (a directory that does not exist is not watched: it
// appears as an event in its parent).
func printWatchAdd(reach []string) (wds []int32, sum uint64, ok bool) {
	if printWatchStart() != nil {
		return nil, 0, false
	}
	seen := map[string]bool{}
	for _, p := range reach {
		for d := filepath.Dir(p); !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			var fs unix.Statfs_t
			if err := unix.Statfs(d, &fs); err == unix.ENOENT || err == unix.ENOTDIR {
				continue
			} else if err != nil || !printWatchedFS(int64(fs.Type)) {
				return nil, 0, false
			}
			wd, err := unix.InotifyAddWatch(printWatch.fd, d, printWatchMask)
			switch {
			case err == unix.ENOENT || err == unix.ENOTDIR:
			case err != nil:
				return nil, 0, false
			default:
				wds = append(wds, int32(wd))
			}
		}
	}
	sum, ok = printWatchSum(wds)
	return wds, sum, ok
}

// printWatchSum drains the queue and returns the events noted on wds and
// the overflows, summed.
func printWatchSum(wds []int32) (uint64, bool) {
	w := &printWatch
	w.mu.Lock()
	defer w.mu.Unlock()
	if !printDrainLocked() {
		return 0, false
	}
	sum := w.overflow
	for _, wd := range wds {
		sum += w.changes[wd]
	}
	return sum, true
}
