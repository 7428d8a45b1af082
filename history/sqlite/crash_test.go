package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/history"
)

// crashEnv names the database a re-executed test binary writes to until it
// is killed (see TestHelperWriter).
const crashEnv = "LOOM_HISTORY_CRASH_DB"

// crashBatch is how many entries the helper writer indexes per batch.
const crashBatch = 300

// writeBatches indexes batches of crashBatch entries into path, reporting
// each committed batch on report, until stop says so.
func writeBatches(t testing.TB, path string, report func(int), stop func(int) bool) {
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for b := 0; !stop(b); b++ {
		es := make([]history.Entry, crashBatch)
		for i := range es {
			es[i] = entry(fmt.Sprintf("s%d", b%7), fmt.Sprintf("b%d-%d", b, i),
				fmt.Sprintf("durable payload %d of batch %d with some filler words to tokenize", i, b))
		}
		if _, err := s.IndexBatch(context.Background(), es); err != nil {
			t.Fatal(err)
		}
		report(b + 1)
	}
}

// TestHelperWriter is the writer loop of TestCrashMidIngest. Run by that
// test in a child process (crashEnv set), it writes until it is killed;
// run directly, it writes a few batches and checks they all landed.
func TestHelperWriter(t *testing.T) {
	if path := os.Getenv(crashEnv); path != "" {
		out := bufio.NewWriter(os.Stdout)
		writeBatches(t, path, func(n int) { fmt.Fprintf(out, "committed %d\n", n); out.Flush() }, func(int) bool { return false })
		return
	}
	path := filepath.Join(t.TempDir(), "h.db")
	committed := 0
	writeBatches(t, path, func(n int) { committed = n }, func(b int) bool { return b == 3 })
	assertRecoverable(t, path, committed)
}

// TestCrashMidIngest kills a writer process with SIGKILL while it is
// indexing and checks that the database opens, passes SQLite's and FTS5's
// integrity checks, holds only whole batches, and answers a search.
func TestCrashMidIngest(t *testing.T) {
	for round := range 3 {
		path := filepath.Join(t.TempDir(), "h.db")
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		committed := 0
		for committed < 2+round && sc.Scan() {
			fmt.Sscanf(sc.Text(), "committed %d", &committed)
		}
		// Let the next batch get under way, then kill without warning.
		time.Sleep(time.Duration(round*7) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if committed < 2+round {
			t.Fatalf("round %d: the writer reported only %d batches", round, committed)
		}
		assertRecoverable(t, path, committed)
	}
}

// assertRecoverable opens path after a writer stopped and checks it.
func assertRecoverable(t *testing.T, path string, committed int) {
	t.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("open after crash: %v", err)
	}
	defer s.Close()
	var check string
	if err := s.writer.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q %v", check, err)
	}
	for _, table := range []string{"entries_words", "vocabulary_grams"} {
		if _, err := s.writer.Exec(`INSERT INTO ` + table + `(` + table + `) VALUES('integrity-check')`); err != nil {
			t.Fatalf("%s integrity-check: %v", table, err)
		}
	}
	var n int
	if err := s.writer.QueryRow(`SELECT count(*) FROM entries`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n%crashBatch != 0 || n < committed*crashBatch {
		t.Fatalf("%d entries after %d committed batches of %d: a batch was torn or lost", n, committed, crashBatch)
	}
	hits, err := s.Search(context.Background(), history.Query{Text: "durable payload", Limit: 3})
	if err != nil || len(hits) != 3 || !strings.Contains(hits[0].Snippet, "**durable**") {
		t.Fatalf("search after crash: %v %v", hits, err)
	}
	// And it takes writes again.
	if err := s.Index(context.Background(), entry("after", "1", "after the crash")); err != nil {
		t.Fatalf("write after crash: %v", err)
	}
}
