package codemode

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestCriticalPathOrder: the plan puts the longest chain first, keeps
// every package after its imports, ignores imports outside the set and
// lists each package once.
func TestCriticalPathOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		pkgs []plannedPackage
		want []string
	}{
		{"empty", nil, []string{}},
		{
			// The depth-first order (a, b, rt, …) would start the side
			// branches first; the plan starts the long chain rt -> sys ->
			// os, with a, which os imports, before os.
			"the chain before side branches",
			[]plannedPackage{
				{Path: "a", Cost: 1},
				{Path: "b", Cost: 1},
				{Path: "rt", Cost: 100},
				{Path: "sys", Imports: []string{"rt"}, Cost: 50},
				{Path: "os", Imports: []string{"sys", "a"}, Cost: 30},
				{Path: "fmt", Imports: []string{"os", "b"}, Cost: 10},
			},
			[]string{"rt", "sys", "a", "os", "b", "fmt"},
		},
		{
			"a costly leaf beside a cheap chain",
			[]plannedPackage{
				{Path: "x", Cost: 1},
				{Path: "y", Imports: []string{"x"}, Cost: 1},
				{Path: "big", Cost: 1000},
				{Path: "main", Imports: []string{"y", "big"}, Cost: 1},
			},
			[]string{"big", "x", "y", "main"},
		},
		{
			"imports outside the set, a repeated path, a zero cost",
			[]plannedPackage{
				{Path: "p", Imports: []string{"unlisted", "q"}},
				{Path: "q", Imports: []string{"unsafe"}},
				{Path: "p", Cost: 999},
			},
			[]string{"q", "p"},
		},
		{
			"ties by path",
			[]plannedPackage{{Path: "c", Cost: 5}, {Path: "a", Cost: 5}, {Path: "b", Cost: 5}},
			[]string{"a", "b", "c"},
		},
		{
			"a cycle still lists each package once",
			[]plannedPackage{{Path: "a", Imports: []string{"b"}}, {Path: "b", Imports: []string{"a"}}},
			[]string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := criticalPathOrder(tt.pkgs)
			if !slices.Equal(got, tt.want) {
				t.Errorf("criticalPathOrder = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCriticalPathOrderProperties: on any import graph without cycles,
// the plan lists each package of the set exactly once, nothing outside
// it, every package after the packages of the set it imports, and first
// a package heading a costliest chain.
func TestCriticalPathOrderProperties(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(t, "n")
		pkgs := make([]plannedPackage, n)
		for i := range pkgs {
			pkgs[i] = plannedPackage{Path: fmt.Sprintf("p%d", i), Cost: rapid.Int64Range(0, 1000).Draw(t, "cost")}
			// Only earlier packages are imported: no cycle. Some imports
			// name packages outside the set.
			for j := range i {
				if rapid.IntRange(0, 3).Draw(t, "edge") == 0 {
					pkgs[i].Imports = append(pkgs[i].Imports, pkgs[j].Path)
				}
			}
			if rapid.Bool().Draw(t, "outside") {
				pkgs[i].Imports = append(pkgs[i].Imports, "outside/"+pkgs[i].Path)
			}
		}
		rapid.Permutation(pkgs).Draw(t, "listing order")
		got := criticalPathOrder(pkgs)
		pos := map[string]int{}
		for i, p := range got {
			if _, dup := pos[p]; dup {
				t.Fatalf("%s planned twice: %q", p, got)
			}
			pos[p] = i
		}
		if len(got) != n {
			t.Fatalf("planned %d packages of %d: %q", len(got), n, got)
		}
		// The costliest chain from each package to the end of the graph.
		byPath := map[string]plannedPackage{}
		for _, p := range pkgs {
			byPath[p.Path] = p
		}
		chain := map[string]int64{}
		for k := len(got) - 1; k >= 0; k-- {
			p := byPath[got[k]]
			var longest int64
			for _, q := range pkgs {
				if slices.Contains(q.Imports, p.Path) {
					longest = max(longest, chain[q.Path])
				}
			}
			chain[p.Path] = p.Cost + 1 + longest
		}
		var top int64
		for _, p := range pkgs {
			if _, ok := pos[p.Path]; !ok {
				t.Fatalf("%s was left out: %q", p.Path, got)
			}
			for _, im := range p.Imports {
				if at, ok := pos[im]; ok && at > pos[p.Path] {
					t.Fatalf("%s planned before its import %s: %q", p.Path, im, got)
				}
			}
			top = max(top, chain[p.Path])
		}
		if n > 0 && chain[got[0]] != top {
			t.Fatalf("first is %s (chain %d), but a chain costs %d: %q", got[0], chain[got[0]], top, got)
		}
	})
}
