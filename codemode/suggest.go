package codemode

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Bounds of the hints a compile error gets (suggestions).
const (
	// maxSuggestions is how many hint lines one answer carries.
	maxSuggestions = 3
	// maxSuggestEdits is the largest edit distance (insertions,
	// deletions, substitutions) at which a name of the same package is
	// offered as a near miss.
	maxSuggestEdits = 2
	// maxSuggestNameBytes bounds the names compared: a longer one gets no
	// near miss.
	maxSuggestNameBytes = 64
	// maxSuggestLines bounds how many diagnostic lines are read.
	maxSuggestLines = 512
)

// capExports is the exported package-level names (constants, variables,
// types and functions) of every capability package of the embedded
// prelude, by import path, each list sorted. It is computed once, from
// the prelude's source, so it cannot drift from what a program compiles
// against.
var capExports = sync.OnceValue(func() map[string][]string { return exportedNames(embeddedPrelude()) })

// exportedNames parses every capability package of tree (not
// cap/internal/...) and lists its exported package-level names. A file
// that does not parse contributes what parsed.
func exportedNames(tree fs.FS) map[string][]string {
	out := map[string][]string{}
	for _, pkg := range preludeCapPackages(tree) {
		dir := strings.TrimPrefix(pkg, preludeModule+"/")
		entries, _ := fs.ReadDir(tree, dir)
		var names []string
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			src, err := fs.ReadFile(tree, dir+"/"+n)
			if err != nil {
				continue
			}
			f, _ := parser.ParseFile(token.NewFileSet(), n, src, parser.SkipObjectResolution)
			if f == nil {
				continue
			}
			names = append(names, fileExports(f)...)
		}
		slices.Sort(names)
		out[pkg] = slices.Compact(names)
	}
	return out
}

// fileExports is f's exported package-level names (methods are not).
func fileExports(f *ast.File) []string {
	var names []string
	add := func(id *ast.Ident) {
		if id != nil && id.IsExported() {
			names = append(names, id.Name)
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				add(d.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					add(s.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						add(n)
					}
				}
			}
		}
	}
	return names
}

// programImports maps each name f binds an import to (its own name, or
// the last element of its path) to the path. Blank, dot and unquotable
// imports are left out; nil f gives none.
func programImports(f *ast.File) map[string]string {
	out := map[string]string{}
	if f == nil {
		return out
	}
	for _, im := range f.Imports {
		if im.Path == nil {
			continue
		}
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			continue
		}
		name := path.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		if name == "_" || name == "." {
			continue
		}
		out[name] = p
	}
	return out
}

// The compiler's messages about a package-qualified name a package does
// not export, exactly (cmd/compile/internal/types2, Go 1.26).
var (
	undefinedQualified = regexp.MustCompile(`^undefined: ([\pL_][\pL\pN_]*)\.([\pL_][\pL\pN_]*)(?: \(but have [\pL_][\pL\pN_]*\))?$`)
	notExported        = regexp.MustCompile(`^name ([\pL_][\pL\pN_]*) not exported by package ([\pL_][\pL\pN_]*)$`)
)

// undefinedRef is one "undefined: q.name" a diagnostic reported: the
// qualifier as written (or, for "not exported", the package's name), the
// name and the line.
type undefinedRef struct {
	qual, name string
	line       int
}

// parseUndefined reads a compiler diagnostic line about the program file
// ("main.go:L:C: message") and returns the package-qualified name it
// says the package lacks. It is total: any other line, or one it cannot
// read, gives ok false.
func parseUndefined(line string) (undefinedRef, bool) {
	m := diagLine.FindStringSubmatch(strings.TrimSuffix(line, "\r"))
	if m == nil {
		return undefinedRef{}, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 {
		return undefinedRef{}, false
	}
	if u := undefinedQualified.FindStringSubmatch(m[3]); u != nil {
		return undefinedRef{qual: u[1], name: u[2], line: n}, true
	}
	if u := notExported.FindStringSubmatch(m[3]); u != nil {
		return undefinedRef{qual: u[2], name: u[1], line: n}, true
	}
	return undefinedRef{}, false
}

// suggestions are at most maxSuggestions hint lines for the undefined
// capability names diag (compiler output, read defensively) reports:
// "hint (line 7): Start is in cap/job, not cap/proc" when another
// capability package of seam exports the name, else the nearest
// spelling the same package exports (within maxSuggestEdits). imports
// maps the program's import names to paths; a qualifier naming no cap
// package of seam gets nothing.
func suggestions(diag string, imports map[string]string, seam []string) []string {
	return suggestFrom(diag, imports, seam, capExports())
}

func suggestFrom(diag string, imports map[string]string, seam []string, exports map[string][]string) []string {
	var out []string
	seen := map[undefinedRef]bool{}
	lines := 0
	for l := range strings.Lines(diag) {
		if lines++; lines > maxSuggestLines || len(out) == maxSuggestions {
			break
		}
		ref, ok := parseUndefined(strings.TrimSuffix(l, "\n"))
		if !ok || len(ref.name) > maxSuggestNameBytes {
			continue
		}
		key := undefinedRef{qual: ref.qual, name: ref.name}
		if seen[key] {
			continue
		}
		seen[key] = true
		if s := suggestOne(ref, imports, seam, exports); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// suggestOne is the hint for ref, or "".
func suggestOne(ref undefinedRef, imports map[string]string, seam []string, exports map[string][]string) string {
	pkg := capPathOf(ref.qual, imports)
	own, ok := exports[pkg]
	if !ok || !slices.Contains(seam, pkg) {
		return ""
	}
	if _, found := slices.BinarySearch(own, ref.name); found {
		return ""
	}
	var elsewhere []string
	for _, other := range seam {
		if names, ok := exports[other]; ok && other != pkg {
			if _, found := slices.BinarySearch(names, ref.name); found {
				elsewhere = append(elsewhere, other)
			}
		}
	}
	slices.Sort(elsewhere)
	if len(elsewhere) > 0 {
		if len(elsewhere) > 2 {
			elsewhere = elsewhere[:2]
		}
		return "hint (line " + strconv.Itoa(ref.line) + "): " + ref.name + " is in " + strings.Join(elsewhere, " and ") + ", not " + pkg
	}
	best, bestD := "", maxSuggestEdits+1
	for _, n := range own {
		if d := editDistance(strings.ToLower(ref.name), strings.ToLower(n), bestD); d < bestD { // own is sorted: ties keep the first
			best, bestD = n, d
		}
	}
	if best == "" || bestD >= len(ref.name) {
		return ""
	}
	return "hint (line " + strconv.Itoa(ref.line) + "): " + pkg + " has no " + ref.name + "; did you mean " + ref.qual + "." + best + "?"
}

// capPathOf is the capability package qual names: the program's import
// bound to qual, else (a "not exported by package" message names the
// package, not the import) the cap/ import whose package is qual.
func capPathOf(qual string, imports map[string]string) string {
	if p, ok := imports[qual]; ok {
		return p
	}
	var found string
	for _, p := range imports {
		if strings.HasPrefix(p, preludeModule+"/") && path.Base(p) == qual {
			if found != "" && found != p {
				return ""
			}
			found = p
		}
	}
	return found
}

// editDistance is the Levenshtein distance between a and b (bytes),
// or limit when it is at least limit (or either is over
// maxSuggestNameBytes).
func editDistance(a, b string, limit int) int {
	if len(a) > maxSuggestNameBytes || len(b) > maxSuggestNameBytes {
		return limit
	}
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

// nearestPackage is the capability package of offered (import paths) the
// unknown name (a path without its "cap/") most likely meant, or "": one
// within maxSuggestEdits of it (and fewer than its length), one whose name is a prefix of it or has
// it as a prefix ("exec" for cap/execution), or one with the same first
// letter within half its length plus one edits ("file" for cap/fs). The
// fewest edits win; ties keep the first of offered.
func nearestPackage(name string, offered []string) string {
	name = strings.ToLower(name)
	if name == "" || len(name) > maxSuggestNameBytes {
		return ""
	}
	best, bestD := "", maxSuggestNameBytes+1
	for _, p := range offered {
		cand := strings.ToLower(strings.TrimPrefix(p, preludeModule+"/"))
		if cand == "" {
			continue
		}
		d := editDistance(name, cand, maxSuggestNameBytes+1)
		near := (d <= maxSuggestEdits && d < len(name)) ||
			strings.HasPrefix(name, cand) || strings.HasPrefix(cand, name) ||
			(name[0] == cand[0] && d <= len(name)/2+1)
		if near && d < bestD {
			best, bestD = p, d
		}
	}
	return best
}
