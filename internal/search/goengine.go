package search

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// MaxWalkDepth bounds how deep the Go engine descends below the root.
const MaxWalkDepth = 256

// Go searches root (an absolute, clean path to a file or a directory)
// with the pure-Go engine under the rules documented on Options. Files
// are read in parallel; the result is sorted and deterministic unless
// the search stopped at MaxScanMatches. It returns a *PatternError for a
// bad pattern and an error when root cannot be read at all; unreadable
// entries below the root are skipped. When ctx ends first it returns
// what it found so far (files it finished) together with ctx.Err().
func Go(ctx context.Context, root string, o Options) (Result, error) {
	re, err := Compile(o)
	if err != nil {
		return Result{}, err
	}
	if o.Context < 0 {
		o.Context = 0
	}
	o.Context = min(o.Context, MaxContext)
	fi, err := os.Stat(root)
	if err != nil {
		return Result{}, err
	}
	s := &goSearch{re: re, o: o, ctx: ctx}
	files := make(chan string, walkQueue)
	go func() {
		defer close(files)
		if !fi.IsDir() {
			if !s.protected(root) {
				files <- root
			}
			return
		}
		w := &walker{root: root, opts: o, glob: newGlobFilter(root, o.Glob), ctx: ctx, stop: &s.stopped, out: files}
		w.ancestors()
		w.walk(root, 0)
	}()
	return s.run(files)
}

// walkQueue is how many listed files may wait for a reader: the walk
// runs ahead of the readers by at most this much, so memory does not
// grow with the size of the tree.
const walkQueue = 256

type walker struct {
	root  string
	opts  Options
	glob  *globFilter
	ctx   context.Context
	stack []*ruleSet // .gitignore sets in effect, shallowest first
	stop  *atomic.Bool
	out   chan<- string
}

// ancestors loads the .gitignore files of the directories from
// IgnoreRoot down to the root's parent.
func (w *walker) ancestors() {
	top := w.opts.IgnoreRoot
	if top == "" || top == w.root {
		return
	}
	rel, ok := relBelow(top, w.root)
	if !ok {
		return
	}
	dir := top
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if rs := loadIgnore(dir); rs != nil {
			w.stack = append(w.stack, rs)
		}
		dir = filepath.Join(dir, p)
	}
}

func (w *walker) walk(dir string, depth int) {
	if depth > MaxWalkDepth || w.ctx.Err() != nil || w.stop.Load() {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	pushed := false
	for _, e := range entries {
		if e.Name() == ".gitignore" {
			if rs := loadIgnore(dir); rs != nil {
				w.stack = append(w.stack, rs)
				pushed = true
			}
			break
		}
	}
	for _, e := range entries {
		t := e.Type()
		if t&os.ModeSymlink != 0 || !(t.IsDir() || t.IsRegular()) {
			continue
		}
		p := dir + "/" + e.Name()
		if dir == "/" {
			p = "/" + e.Name()
		}
		isDir := t.IsDir()
		if !w.admit(p, e.Name(), isDir) {
			continue
		}
		if isProtected(w.opts.Protected, p) {
			continue
		}
		if isDir {
			w.walk(p, depth+1)
		} else {
			select {
			case w.out <- p:
			case <-w.ctx.Done():
				return
			}
		}
	}
	if pushed {
		w.stack = w.stack[:len(w.stack)-1]
	}
}

// admit applies the glob, then .gitignore (deepest first), then the
// hidden rule, as ripgrep does.
func (w *walker) admit(p, name string, isDir bool) bool {
	if w.glob != nil {
		switch w.glob.match(p, isDir) {
		case ignored:
			return false
		case whitelist:
			return true
		}
	}
	for i := len(w.stack) - 1; i >= 0; i-- {
		switch w.stack[i].match(p, isDir) {
		case ignored:
			return false
		case whitelist:
			return true
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
	o   Options
	ctx context.Context

	matches atomic.Int64
	stopped atomic.Bool
	large   atomic.Int64
}

func (s *goSearch) protected(p string) bool { return isProtected(s.o.Protected, p) }

func (s *goSearch) run(files <-chan string) (Result, error) {
	workers := runtime.GOMAXPROCS(0)
	found := make([][]Hit, workers) // per worker, so no lock is needed
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 64<<10)
			for path := range files {
				if s.stopped.Load() || s.ctx.Err() != nil {
					continue // drain, so the walker can finish
				}
				var hs []Hit
				hs, buf = s.file(path, buf)
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
	res.SkippedLarge = int(s.large.Load())
	return res, s.ctx.Err()
}

// file searches one file, reusing buf for its contents. The walk only
// lists regular files; a file swapped for something else since is read
// with O_NONBLOCK, so a FIFO cannot stall the search.
func (s *goSearch) file(path string, buf []byte) ([]Hit, []byte) {
	data, err := readFile(path, buf)
	if err != nil {
		return nil, data
	}
	if len(data) > MaxFileBytes {
		s.large.Add(1)
		return nil, data
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, data // binary
	}
	return s.scan(path, data), data
}

// scan finds the matching lines of data. The whole buffer is searched
// first, so a file without a match costs one regexp pass; each candidate
// line is then confirmed on its own, since a match of the whole buffer
// may span lines where no single line matches.
func (s *goSearch) scan(path string, data []byte) []Hit {
	var matchLines []int  // 0-based line indexes
	line, counted := 0, 0 // newlines in data[:counted]
	for pos := 0; pos <= len(data); {
		loc := s.re.FindIndex(data[pos:])
		if loc == nil {
			break
		}
		off := pos + loc[0]
		start := bytes.LastIndexByte(data[:off], '\n') + 1
		if start == len(data) {
			break // past the final newline (or an empty file): not a line
		}
		end := len(data)
		if nl := bytes.IndexByte(data[off:], '\n'); nl >= 0 {
			end = off + nl
		}
		line += bytes.Count(data[counted:start], newline)
		counted = start
		if s.re.Match(data[start:end]) {
			if s.matches.Add(1) > MaxScanMatches {
				s.stopped.Store(true)
				break
			}
			matchLines = append(matchLines, line)
		}
		pos = end + 1
	}
	if len(matchLines) == 0 {
		return nil
	}
	return s.hits(path, data, matchLines)
}

var newline = []byte{'\n'}

// hits renders matches and their context windows.
func (s *goSearch) hits(path string, data []byte, matchLines []int) []Hit {
	c := s.o.Context
	lines := splitLines(data, matchLines[len(matchLines)-1]+c+1)
	isMatch := make(map[int]bool, len(matchLines))
	for _, m := range matchLines {
		isMatch[m] = true
	}
	var out []Hit
	next := 0 // first line not yet emitted
	for _, m := range matchLines {
		from := max(m-c, next)
		to := min(m+c, len(lines)-1)
		for l := from; l <= to; l++ {
			out = append(out, Hit{Path: path, Line: l + 1, Text: lineText(lines[l]), Match: isMatch[l]})
		}
		next = max(next, to+1)
	}
	return out
}

// splitLines returns up to n lines of data (without terminators kept by
// lineText's trimming: each element ends before its '\n').
func splitLines(data []byte, n int) [][]byte {
	var out [][]byte
	for len(out) < n && len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			out = append(out, data)
			break
		}
		out = append(out, data[:i])
		data = data[i+1:]
	}
	return out
}
