package jailtest

import (
	"os"
	"sync"
	"testing"
)

// Shared is one host-built helper for a whole test binary: built on the
// first Path, removed by Remove (a TestMain calls it once every test
// ran), so a package's test brokers start it instead of re-executing the
// race-instrumented test binary for every jail. The zero value is ready
// to use; it is safe for concurrent use.
type Shared struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Path returns the shared helper's path, for broker.Options.HelperPath:
// the one HelperEnv names, as it is, or else one built (see Build) on
// first use into a directory everyone may read, since the unprivileged
// re-run of a suite executes it as another user. It fails tb when the
// helper cannot be built: a test broker never falls back to re-executing
// the test binary unnoticed.
func (s *Shared) Path(tb testing.TB) string {
	tb.Helper()
	s.once.Do(func() {
		if p := os.Getenv(HelperEnv); p != "" {
			s.path = p
			return
		}
		s.dir, s.err = os.MkdirTemp("", "loom-test-helper-")
		if s.err == nil {
			s.err = os.Chmod(s.dir, 0o755)
		}
		if s.err == nil {
			s.path, s.err = Build(s.dir)
		}
	})
	if s.err != nil {
		tb.Fatalf("jailtest: the host-built jail helper: %v", s.err)
	}
	return s.path
}

// Remove deletes the helper Path built, if it built one.
func (s *Shared) Remove() {
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}
