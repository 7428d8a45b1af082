//go:build linux

package broker

import (
	"os"
	"slices"
	"testing"
)

// TestSocketsMaskedByResolvedForm: a socket the table shows bound
// through a link is masked where it resolves too (red team: a root
// written as the resolved directory reached a socket bound as
// /work/hl/u/app.sock); a shared socket's resolved form stays shared, and
// each directory is resolved once.
func TestSocketsMaskedByResolvedForm(t *testing.T) {
	t.Parallel()
	calls := map[string]int{}
	resolve := func(d string) (string, error) {
		calls[d]++
		switch d {
		case "/hl/u":
			return "/real/u", nil
		case "/gone":
			return "", os.ErrNotExist
		}
		return d, nil
	}
	got := withResolvedForms([]string{"/hl/u/a.sock", "/hl/u/b.sock", "/run/c.sock", "/gone/d.sock"}, []string{"/real/u/b.sock"}, resolve)
	want := []string{"/hl/u/a.sock", "/hl/u/b.sock", "/run/c.sock", "/gone/d.sock", "/real/u/a.sock"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if calls["/hl/u"] != 1 {
		t.Errorf("resolved /hl/u %d times", calls["/hl/u"])
	}
}
