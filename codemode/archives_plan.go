package codemode

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// plannedPackage is one package of an archive build's plan: its import
// path, the imports it names and its cost, the bytes of its Go and
// assembly files (a compile's time grows with them).
type plannedPackage struct {
	Path    string
	Imports []string
	Cost    int64
}

// criticalPathOrder orders pkgs critical path first: by descending
// bottom level (a package's cost plus the costliest chain of packages
// importing it, transitively, among pkgs), ties by import path. With
// every cost counted at least 1, a package's bottom level exceeds each
// importer's, so the order is also topological: every package comes
// after the packages of pkgs it imports. Imports outside pkgs are
// ignored; each path of pkgs appears once (a repeated path counts as its
// first). An import cycle, which Go forbids, is broken where the walk
// meets it.
func criticalPathOrder(pkgs []plannedPackage) []string {
	index := make(map[string]int, len(pkgs))
	for i, p := range pkgs {
		if _, ok := index[p.Path]; !ok {
			index[p.Path] = i
		}
	}
	importers := make([][]int, len(pkgs))
	for i, p := range pkgs {
		if index[p.Path] != i {
			continue
		}
		for _, im := range sortedSet(p.Imports) {
			if j, ok := index[im]; ok && j != i {
				importers[j] = append(importers[j], i)
			}
		}
	}
	const (
		unseen = iota
		walking
		done
	)
	state := make([]int, len(pkgs))
	level := make([]int64, len(pkgs))
	var walk func(i int) int64
	walk = func(i int) int64 {
		switch state[i] {
		case done:
			return level[i]
		case walking:
			return 0 // a cycle: Go forbids it; cut it here
		}
		state[i] = walking
		var longest int64
		for _, j := range importers[i] {
			longest = max(longest, walk(j))
		}
		level[i] = max(pkgs[i].Cost, 0) + 1 + longest
		state[i] = done
		return level[i]
	}
	order := make([]int, 0, len(index))
	for i, p := range pkgs {
		if index[p.Path] == i {
			walk(i)
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		if level[a] != level[b] {
			if level[a] > level[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(pkgs[a].Path, pkgs[b].Path)
	})
	out := make([]string, len(order))
	for k, i := range order {
		out[k] = pkgs[i].Path
	}
	return out
}

// planArchives lists want and the runtime with their dependencies (the
// go command's `list -deps`, nothing compiled) in mod with env, and
// returns them critical path first (criticalPathOrder, each package's
// cost its files' bytes). The go command runs ready compiles in the
// order its arguments list them, so given this order it starts the
// longest chain (the runtime, then syscall, time, os…) before short
// side branches, where its own order (a depth-first walk of the imports)
// lets side branches hold both slots while the chain waits.
func (b *builder) planArchives(ctx context.Context, mod string, env, want []string) ([]string, error) {
	args := append([]string{"-deps", "-json=ImportPath,Imports,Dir,GoFiles,SFiles,Incomplete,Error", "--"}, want...)
	listed, err := b.goList(ctx, mod, env, "go list -deps", append(args, "runtime"))
	if err != nil {
		return nil, err
	}
	pkgs := make([]plannedPackage, 0, len(listed))
	for _, p := range listed {
		pp := plannedPackage{Path: p.ImportPath, Imports: p.Imports}
		for _, f := range slices.Concat(p.GoFiles, p.SFiles) {
			if fi, err := os.Stat(filepath.Join(p.Dir, f)); err == nil {
				pp.Cost += fi.Size()
			}
		}
		pkgs = append(pkgs, pp)
	}
	return criticalPathOrder(pkgs), nil
}
