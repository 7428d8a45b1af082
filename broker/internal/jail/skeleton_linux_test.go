//go:build linux

package jail

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// A skeleton is current only while the host's top-level links and
// device nodes are those it was made from.
func TestSkeletonCurrent(t *testing.T) {
	t.Parallel()
	nodes := map[string]uint64{}
	for _, n := range devNodes {
		var st unix.Stat_t
		if unix.Stat("/dev/"+n, &st) == nil {
			nodes[n] = st.Rdev
		}
	}
	links := TopLevelLinks()
	other := func(f func(map[string]uint64)) map[string]uint64 {
		m := map[string]uint64{}
		for k, v := range nodes {
			m[k] = v
		}
		f(m)
		return m
	}
	for _, tc := range []struct {
		name  string
		links [][2]string
		nodes map[string]uint64
		want  bool
	}{
		{"as made", links, nodes, true},
		{"a link more", append(slices.Clone(links), [2]string{"loom-none", "usr/none"}), nodes, false},
		{"a link retargeted", func() [][2]string {
			l := slices.Clone(links)
			if len(l) == 0 {
				return [][2]string{{"bin", "elsewhere"}}
			}
			l[0][1] += "x"
			return l
		}(), nodes, false},
		{"another device", links, other(func(m map[string]uint64) { m["null"]++ }), false},
		{"a node it lacked", links, other(func(m map[string]uint64) { delete(m, "zero") }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &skeleton{links: tc.links, nodes: tc.nodes}
			if got := s.current(); got != tc.want {
				t.Fatalf("current() = %v, want %v", got, tc.want)
			}
		})
	}
}
