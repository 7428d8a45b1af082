package search

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
)

// Confirm holds a result another engine produced (ripgrep, which opens
// what lies below its root by path, so a link swapped in during its walk
// is followed) to what the files hold: it re-reads each file holding a
// hit that Bound(res.Hits, maxMatches, context) keeps, as the Go engine
// reads (root opened one component at a time from "/", everything below
// relative to its parent's descriptor, no link followed, no open
// blocking, regular files only), and keeps a hit only if the file's line
// at Hit.Line reads as Hit.Text. Dropping hits lets later ones into what
// Bound keeps, so it repeats until every kept hit is confirmed; each file
// is read once, at most up to its last hit's line and MaxFileBytes. A
// file that cannot be opened so, or whose line differs or lies past that
// bound, confirms none of its hits.
//
// The returned result has the dropped hits removed, Matches and Files
// lowered by the matches and files they held (files not read keep the
// counts they came with) and Unconfirmed raised by the hits dropped.
// Every hit must lie at or below root, the clean absolute search root.
// When ctx ends, the hits not yet confirmed are dropped.
func Confirm(ctx context.Context, root string, res Result, maxMatches, context int) Result {
	c := &confirmer{root: root, dirs: map[string]*pinnedDir{}}
	defer c.close()
	done := map[string]bool{}
	for {
		shown, _ := Bound(res.Hits, maxMatches, context)
		var todo []string
		at := map[string][]int{} // the indexes into res.Hits of each file to read
		for _, h := range shown {
			if _, listed := at[h.Path]; !done[h.Path] && !listed {
				todo = append(todo, h.Path)
				at[h.Path] = nil
			}
		}
		if len(todo) == 0 {
			return res
		}
		for i, h := range res.Hits {
			if idx, listed := at[h.Path]; listed {
				at[h.Path] = append(idx, i)
			}
		}
		bad := map[int]bool{} // indexes into res.Hits
		for _, p := range todo {
			done[p] = true
			idx := at[p]
			lines := c.lines(ctx, p, res.Hits[idx[len(idx)-1]].Line)
			for _, i := range idx {
				h := res.Hits[i]
				if h.Line > len(lines) || lineText(lines[h.Line-1]) != h.Text {
					bad[i] = true
				}
			}
		}
		res = drop(res, bad)
	}
}

// drop removes the hits at the indexes in bad and lowers the counts.
func drop(res Result, bad map[int]bool) Result {
	if len(bad) == 0 {
		return res
	}
	before := map[string]bool{}
	for _, h := range res.Hits {
		if h.Match {
			before[h.Path] = true
		}
	}
	var kept []Hit
	for i, h := range res.Hits {
		if !bad[i] {
			kept = append(kept, h)
			continue
		}
		res.Unconfirmed++
		if h.Match {
			res.Matches--
		}
	}
	after := map[string]bool{}
	for _, h := range kept {
		if h.Match {
			after[h.Path] = true
		}
	}
	for p := range before {
		if !after[p] {
			res.Files--
		}
	}
	res.Hits = kept
	return res
}

// confirmer opens the files Confirm reads, holding each directory it
// opened on the way for the next file below it.
type confirmer struct {
	root string
	top  *pinnedDir // the root (or a file root's directory); nil until opened
	file string     // the file root's name, or ""
	err  bool       // the root could not be opened
	dirs map[string]*pinnedDir
	// buf and split hold the last file read and its lines.
	buf   []byte
	split [][]byte
}

func (c *confirmer) close() {
	for _, d := range c.dirs {
		if d != nil {
			d.release()
		}
	}
	if c.top != nil {
		c.top.release()
	}
}

// lines returns the first n lines of the file p (each without its
// newline), or fewer (none when it cannot be read as Confirm reads). They
// lie in c's buffers, which the next call reuses.
func (c *confirmer) lines(ctx context.Context, p string, n int) [][]byte {
	if ctx.Err() != nil {
		return nil
	}
	dir, name := c.dirOf(p)
	if dir == nil {
		return nil
	}
	data, err := dir.readLines(name, c.buf[:0], MaxFileBytes, n)
	c.buf = data
	if err != nil && err != errTooLarge {
		return nil
	}
	out := appendLines(c.split[:0], data, n)
	c.split = out
	if err == errTooLarge && len(out) > 0 && !bytes.HasSuffix(data, newline) {
		// Cut at the bound before its end: the last line does not count.
		out = out[:len(out)-1]
	}
	return out
}

// dirOf returns the pinned directory holding p and p's name in it, or
// nil when p is not the root or below it, or a directory on the way
// cannot be opened without following a link.
func (c *confirmer) dirOf(p string) (*pinnedDir, string) {
	if c.top == nil && !c.err {
		d, file, err := openRoot(c.root, func(*pinnedDir) {})
		if err != nil {
			c.err = true
		} else {
			c.top, c.file = d, file
		}
	}
	if c.top == nil {
		return nil, ""
	}
	if c.file != "" {
		if p != c.root {
			return nil, ""
		}
		return c.top, c.file
	}
	rel, ok := relBelow(c.root, p)
	if !ok || !filepath.IsLocal(rel) {
		return nil, ""
	}
	parts := strings.Split(rel, "/")
	d, at := c.top, c.root
	for _, name := range parts[:len(parts)-1] {
		at = joinPath(at, name)
		next, ok := c.dirs[at]
		if !ok {
			sub, err := d.sub(name)
			if err != nil {
				sub = nil
			}
			c.dirs[at] = sub
			next = sub
		}
		if next == nil {
			return nil, ""
		}
		d = next
	}
	return d, parts[len(parts)-1]
}

// appendLines appends up to n lines of data to out, each without its
// '\n' (lineText trims a '\r' before it).
func appendLines(out [][]byte, data []byte, n int) [][]byte {
	for k := 0; k < n && len(data) > 0; k++ {
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
