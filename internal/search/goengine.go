package search

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// MaxWalkDepth bounds how deep the Go engine descends below the root.
const MaxWalkDepth = 256

// Go searches root with the pure-Go engine under the rules documented on
// Options. Files are read in parallel; the result is sorted and
// deterministic unless the search stopped at MaxScanMatches.
//
// root is an absolute, clean path with no symbolic link in it: the
// resolved form of a path the caller authorized. Go opens it one
// component at a time without following links, so a link swapped into
// it since makes the search fail rather than lead elsewhere, and below
// it every directory and file is opened relative to its parent's
// descriptor, never following a link, never blocking (a FIFO, device or
// socket is skipped, whatever its name: a .gitignore too), and only
// regular files are read. Nothing the Go engine reads lies outside root
// and, for .gitignore files, the directories from o.IgnoreRoot down to
// it.
//
// It returns a *PatternError or *GlobError for a bad pattern or glob, and
// an error when root cannot be opened (wrapping fs.ErrInvalid when it is
// neither a directory nor a regular file); unreadable entries below the
// root are skipped. When ctx ends first it returns what it found so far
// (files it finished) together with ctx.Err().
func Go(ctx context.Context, root string, o Options) (Result, error) {
	re, err := Validate(o)
	if err != nil {
		return Result{}, err
	}
	if o.Context < 0 {
		o.Context = 0
	}
	o.Context = min(o.Context, MaxContext)
	if !filepath.IsAbs(root) || filepath.Clean(root) != root {
		return Result{}, &fs.PathError{Op: "search", Path: root, Err: errors.New("not an absolute, clean path")}
	}
	s := &goSearch{re: re, o: o, ctx: ctx, invalid: newInvalidMatcher(o)}
	if m := s.invalid; m != nil {
		s.pre = newPrefilter(m.tree)
		s.nonASCII = s.pre == nil && needsNonASCII(m.tree)
	}
	files, err := listFiles(ctx, root, o, &s.stopped)
	if err != nil {
		return Result{}, err
	}
	return s.run(files)
}

// listFiles opens root as Go requires it and walks it in a goroutine of
// its own, sending every regular file a search with o would read until
// the walk ends, ctx ends or stop is set; the channel is closed at the
// end. Each job holds a reference to its directory, which the receiver
// releases.
func listFiles(ctx context.Context, root string, o Options, stop *atomic.Bool) (<-chan fileJob, error) {
	w := &walker{root: root, opts: o, ctx: ctx, stop: stop}
	dir, file, err := openRoot(root, w.ancestor)
	if err != nil {
		return nil, err
	}
	files := make(chan fileJob, walkQueue)
	w.out = files
	go func() {
		defer close(files)
		defer dir.release()
		if file != "" {
			if !isProtected(o.Protected, root) {
				dir.retain()
				files <- fileJob{dir: dir, name: file, path: root}
			}
			return
		}
		w.glob = newGlobFilter(root, o.Glob)
		w.walk(dir, 0)
	}()
	return files, nil
}

// Validate checks o's pattern and glob as both engines need them, and
// returns the compiled line regexp (see Compile). It returns a
// *PatternError or a *GlobError; a caller runs it before choosing an
// engine, so neither ever sees input the other would refuse.
func Validate(o Options) (*regexp.Regexp, error) {
	re, err := Compile(o)
	if err != nil {
		return nil, err
	}
	if err := ValidateGlob(o.Glob); err != nil {
		return nil, err
	}
	return re, nil
}

// walkQueue is how many listed files may wait for a reader: the walk
// runs ahead of the readers by at most this much, so memory (and the
// directory descriptors queued files hold) does not grow with the size
// of the tree.
const walkQueue = 256

// fileJob is one listed file: its name in a pinned directory, which the
// job holds a reference to until a reader is done with it.
type fileJob struct {
	dir  *pinnedDir
	name string
	path string // absolute
}

type walker struct {
	root string
	opts Options
	glob *globFilter
	ctx  context.Context
	// gitStack and rgStack are the .gitignore and .rgignore sets in
	// effect, shallowest first.
	gitStack, rgStack []*ruleSet
	stop              *atomic.Bool
	out               chan<- fileJob
}

// ancestor loads the ignore files of d, a directory openRoot passed on
// its way to the root, when d lies at or below IgnoreRoot.
func (w *walker) ancestor(d *pinnedDir) {
	top := w.opts.IgnoreRoot
	if top == "" || top == w.root {
		return
	}
	if _, below := relBelow(top, d.path); !below && d.path != top {
		return
	}
	w.push(d)
}

// push loads d's ignore files onto the stacks, reporting which it
// pushed so pop can take them off again.
func (w *walker) push(d *pinnedDir) (git, rg bool) {
	if rs := loadIgnore(d, gitignoreName); rs != nil {
		w.gitStack = append(w.gitStack, rs)
		git = true
	}
	if rs := loadIgnore(d, rgignoreName); rs != nil {
		w.rgStack = append(w.rgStack, rs)
		rg = true
	}
	return git, rg
}

func (w *walker) walk(dir *pinnedDir, depth int) {
	if depth > MaxWalkDepth || w.ctx.Err() != nil || w.stop.Load() {
		return
	}
	entries, err := dir.list()
	if err != nil && len(entries) == 0 {
		return
	}
	var git, rg bool
	if slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == gitignoreName || e.Name() == rgignoreName }) {
		git, rg = w.push(dir)
	}
	defer func() {
		if git {
			w.gitStack = w.gitStack[:len(w.gitStack)-1]
		}
		if rg {
			w.rgStack = w.rgStack[:len(w.rgStack)-1]
		}
	}()
	for _, e := range entries {
		// The type is the directory's word for it, a hint: sub and
		// readAt check what they actually open.
		t := e.Type()
		if t&os.ModeSymlink != 0 || !(t.IsDir() || t.IsRegular()) {
			continue
		}
		p := joinPath(dir.path, e.Name())
		isDir := t.IsDir()
		if !w.admit(p, e.Name(), isDir) {
			continue
		}
		if isProtected(w.opts.Protected, p) {
			continue
		}
		if isDir {
			sub, err := dir.sub(e.Name())
			if err != nil {
				continue
			}
			w.walk(sub, depth+1)
			sub.release()
			if w.ctx.Err() != nil {
				return
			}
			continue
		}
		dir.retain()
		select {
		case w.out <- fileJob{dir: dir, name: e.Name(), path: p}:
		case <-w.ctx.Done():
			dir.release()
			return
		}
	}
}

// joinPath joins a directory's absolute path and an entry name.
func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// admit applies the glob (which only narrows), then the .rgignore files
// and then the .gitignore files (each deepest first; the first matching
// rule decides), then the hidden rule, as ripgrep does.
func (w *walker) admit(p, name string, isDir bool) bool {
	if w.glob != nil && w.glob.match(p, isDir) == ignored {
		return false
	}
	for _, stack := range [...][]*ruleSet{w.rgStack, w.gitStack} {
		for i := len(stack) - 1; i >= 0; i-- {
			switch stack[i].match(p, isDir) {
			case ignored:
				return false
			case whitelist:
				return true
			}
		}
	}
	return !strings.HasPrefix(name, ".")
}

func isProtected(protected []string, p string) bool {
	for _, pr := range protected {
		if pr == p || (len(p) > len(pr) && p[len(pr)] == '/' && p[:len(pr)] == pr) || pr == "/" {
			return true
		}
	}
	return false
}

type goSearch struct {
	re  *regexp.Regexp
	pre *prefilter // nil: no literal is required of a match
	// nonASCII: with no prefilter, every match holds a byte at or
	// above 0x80 (needsNonASCII), so only lines holding one are matched.
	nonASCII bool
	invalid  *invalidMatcher // matches lines holding invalid UTF-8
	o        Options
	ctx      context.Context

	matches atomic.Int64
	stopped atomic.Bool
	large   atomic.Int64
}

func (s *goSearch) protected(p string) bool { return isProtected(s.o.Protected, p) }

func (s *goSearch) run(files <-chan fileJob) (Result, error) {
	workers := runtime.GOMAXPROCS(0)
	found := make([][]Hit, workers) // per worker, so no lock is needed
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 64<<10)
			for job := range files {
				if s.stopped.Load() || s.ctx.Err() != nil {
					job.dir.release()
					continue // drain, so the walker can finish
				}
				var hs []Hit
				hs, buf = s.file(job, buf)
				job.dir.release()
				found[w] = append(found[w], hs...)
			}
		}()
	}
	wg.Wait()
	var res Result
	for _, hs := range found {
		res.Hits = append(res.Hits, hs...)
	}
	res.Hits = sortHits(res.Hits)
	var last string
	for _, h := range res.Hits {
		if h.Match {
			res.Matches++
			if h.Path != last {
				res.Files++
				last = h.Path
			}
		}
	}
	res.Stopped = s.stopped.Load()
	if res.Stopped {
		res.Left = max(int(s.matches.Load())-MaxScanMatches, 1)
	}
	res.SkippedLarge = int(s.large.Load())
	return res, s.ctx.Err()
}

// file searches one listed file, reusing buf for its contents. The
// walk listed a regular file; readAt refuses whatever stands there now if
// it is not one (a link or a FIFO swapped in since).
func (s *goSearch) file(job fileJob, buf []byte) ([]Hit, []byte) {
	data, err := job.dir.readAt(job.name, buf, MaxFileBytes)
	if errors.Is(err, errTooLarge) {
		s.large.Add(1)
		return nil, data
	}
	if err != nil {
		return nil, data
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, data // binary
	}
	return s.scan(job.path, data), data
}

// scan finds the matching lines of data. With a prefilter, only the
// lines holding one of its literals are matched, each on its own, and
// likewise, for a pattern every match of which holds a non-ASCII byte,
// only the lines holding one; otherwise the whole buffer is searched
// first, so a file without a match costs one regexp pass, and each
// candidate line is then confirmed on its own, since a match of the
// whole buffer may span lines where no single line matches.
func (s *goSearch) scan(path string, data []byte) []Hit {
	var matched []lineSpan
	line, counted := 0, 0 // newlines in data[:counted]
	var cacheArr [maxNeedles]int
	var cache []int
	if s.pre != nil {
		cache = cacheArr[:len(s.pre.needles)]
		for i := range cache {
			cache[i] = -2
		}
	}
	for pos := 0; pos < len(data); {
		var off int
		if s.pre != nil {
			if off = s.pre.next(data, pos, cache); off < 0 {
				break
			}
		} else if s.nonASCII {
			if off = indexNonASCII(data, pos); off < 0 {
				break
			}
		} else {
			loc := s.re.FindIndex(data[pos:])
			if loc == nil {
				break
			}
			off = pos + loc[0]
		}
		start := pos + bytes.LastIndexByte(data[pos:off], '\n') + 1
		if start == len(data) {
			break // past the final newline: not a line
		}
		end := len(data)
		if nl := bytes.IndexByte(data[off:], '\n'); nl >= 0 {
			end = off + nl
		}
		line += bytes.Count(data[counted:start], newline)
		counted = start
		if s.lineMatch(data[start:end]) {
			if s.matches.Add(1) > MaxScanMatches {
				s.stopped.Store(true)
				break
			}
			matched = append(matched, lineSpan{line: line, start: start})
		}
		pos = end + 1
	}
	if len(matched) == 0 {
		return nil
	}
	return s.hits(path, data, matched)
}

// lineSpan is a line of a file: its 0-based index and the offset where
// it starts.
type lineSpan struct{ line, start int }

// lineMatch reports whether one line (without its terminator) matches,
// with ripgrep's meaning where it holds invalid UTF-8.
func (s *goSearch) lineMatch(line []byte) bool {
	if utf8.Valid(line) {
		return s.re.Match(line)
	}
	return s.invalid != nil && s.invalid.match(line)
}

var newline = []byte{'\n'}

// hits renders matches (in order) and their context windows, finding
// the context lines from each match's offset, so only the lines shown
// are split off data.
func (s *goSearch) hits(path string, data []byte, matched []lineSpan) []Hit {
	c := s.o.Context
	out := make([]Hit, 0, len(matched))
	next, nextStart := 0, 0 // the first line not yet emitted, and its offset
	k := 0                  // the first match not below the line emitted
	for _, m := range matched {
		from := max(m.line-c, next)
		if from > m.line+c {
			continue // emitted as context of an earlier match
		}
		start := nextStart
		if from != next {
			// Back from the match to the first line of its window.
			start = m.start
			for l := m.line; l > from; l-- {
				start = bytes.LastIndexByte(data[:start-1], '\n') + 1
			}
		}
		for l := from; l <= m.line+c && start < len(data); l++ {
			end := len(data)
			if nl := bytes.IndexByte(data[start:], '\n'); nl >= 0 {
				end = start + nl
			}
			for k < len(matched) && matched[k].line < l {
				k++
			}
			isMatch := k < len(matched) && matched[k].line == l
			out = append(out, Hit{Path: path, Line: l + 1, Text: lineText(data[start:end]), Match: isMatch})
			next, start = l+1, end+1
			nextStart = start
		}
	}
	return out
}
