package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// matchStream is a ripgrep --json stream holding one match at line 1 of
// path, closed by its summary.
func matchStream(path string) string {
	p, _ := json.Marshal(map[string]string{"text": path})
	return fmt.Sprintf(`{"type":"begin","data":{"path":%s}}`+"\n"+
		`{"type":"match","data":{"path":%s,"lines":{"text":"needle\n"},"line_number":1}}`+"\n"+
		`{"type":"end","data":{"path":%s,"binary_offset":null}}`+"\n"+
		`{"type":"summary","data":{}}`+"\n", p, p, p)
}

// TestPinnedCollectorPlacesPathsUnderTheRoot: a pinned run's paths are
// mapped under the root (OperandDir) or to it (OperandStdin), and a path
// such a run never reports (absolute, climbing out, another name for
// stdin) fails the stream with a *ParseError and collects nothing.
// Control: OperandPath keeps the paths as reported.
func TestPinnedCollectorPlacesPathsUnderTheRoot(t *testing.T) {
	t.Parallel()
	const root = "/ws/src"
	for _, tt := range []struct {
		op       Operand
		reported string
		want     string // "" means refused
	}{
		{OperandDir, "./a.txt", "/ws/src/a.txt"},
		{OperandDir, "./sub/b.go", "/ws/src/sub/b.go"},
		{OperandDir, "sub/b.go", "/ws/src/sub/b.go"},
		{OperandDir, "./<stdin>", "/ws/src/<stdin>"},
		{OperandDir, "/etc/passwd", ""},
		{OperandDir, "../etc/passwd", ""},
		{OperandDir, "./sub/../../x", ""},
		{OperandStdin, StdinPath, root},
		{OperandStdin, "/etc/passwd", ""},
		{OperandStdin, "./<stdin>", root}, // cleaned to StdinPath: still the root
		{OperandStdin, "a.txt", ""},
		{OperandPath, "/etc/passwd", "/etc/passwd"},
		{OperandPath, "/ws/src/a.txt", "/ws/src/a.txt"},
	} {
		c := NewRipgrepCollectorFor(Options{}, root, tt.op)
		_, err := c.Write([]byte(matchStream(tt.reported)))
		r := c.Result()
		if tt.want == "" {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.ErrorCode() != "bad_ripgrep_event" || r.Matches != 0 || len(r.Hits) != 0 {
				t.Errorf("op %d, path %q: err %v, result %+v; want a *ParseError and nothing collected", tt.op, tt.reported, err, r)
			}
			continue
		}
		if err != nil || len(r.Hits) != 1 || r.Hits[0].Path != tt.want {
			t.Errorf("op %d, path %q: err %v, hits %+v; want one hit at %s", tt.op, tt.reported, err, r.Hits, tt.want)
		}
	}
}

// TestPinnedCollectorNeverPlacesOutsideTheRoot: whatever path a pinned
// directory run reports, a collected hit lies at or under the root.
func TestPinnedCollectorNeverPlacesOutsideTheRoot(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom([]string{".", "..", "a", "/", "b.txt", "", "/etc"}), 1, 6).Draw(t, "parts")
		reported := ""
		for _, p := range parts {
			reported += p
			if rapid.Bool().Draw(t, "slash") {
				reported += "/"
			}
		}
		const root = "/ws/src"
		c := NewRipgrepCollectorFor(Options{}, root, OperandDir)
		c.Write([]byte(matchStream(reported)))
		for _, h := range c.Result().Hits {
			if h.Path != root && !isProtected([]string{root}, h.Path) {
				t.Fatalf("reported %q collected at %q, outside %s", reported, h.Path, root)
			}
		}
	})
}

// TestRipgrepArgsForNamesTheRootAsOperand: the operand is the last
// argument, after "--", and only OperandPath passes the root's path;
// every other argument is the same whichever operand.
func TestRipgrepArgsForNamesTheRootAsOperand(t *testing.T) {
	t.Parallel()
	o := Options{Pattern: "needle", Glob: "*.go", IgnoreRoot: "/ws"}
	base := RipgrepArgs("/ws/src", o)
	for op, want := range map[Operand]string{OperandPath: "/ws/src", OperandDir: ".", OperandStdin: "-"} {
		args := RipgrepArgsFor("/ws/src", o, op)
		if n := len(args); args[n-1] != want || args[n-2] != "--" || !slices.Equal(args[:n-1], base[:len(base)-1]) {
			t.Errorf("op %d: %q, want %q then %q after %q", op, args, "--", want, base[:len(base)-1])
		}
	}
}
