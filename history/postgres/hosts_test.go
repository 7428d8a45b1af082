package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/history/historytest"
	"github.com/agentloom/loom/history/postgres/postgrestest"
	"github.com/agentloom/loom/tool"
)

// The many-hosts test re-executes the test binary: each child process is
// one host, opening the shared schema (so the hosts also race to migrate
// it), indexing, searching and remembering at once.
const (
	hostSchemaEnv = "LOOM_TEST_POSTGRES_HOST_SCHEMA"
	hostIDEnv     = "LOOM_TEST_POSTGRES_HOST_ID"
	hosts         = 4
	hostBatches   = 20
	hostPerBatch  = 100
	// hostNotes distinct notes per host, and sharedNotes every host
	// remembers alike: together more than history.MaxNotes.
	hostNotes   = 150
	sharedNotes = 100
)

// hostReport is what a host process prints on its last line.
type hostReport struct {
	Stored, Already, Ceiling, Added int
	Errors                          []string
}

// TestHostProcess is one host of TestManyHosts; it does nothing when run
// by itself.
func TestHostProcess(t *testing.T) {
	schema := os.Getenv(hostSchemaEnv)
	if schema == "" {
		t.Skip("a host process of TestManyHosts")
	}
	id, _ := strconv.Atoi(os.Getenv(hostIDEnv))
	ctx := context.Background()
	var r hostReport
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		r.Errors = append(r.Errors, err.Error())
		mu.Unlock()
	}
	s, err := Open(ctx, os.Getenv(postgrestest.URLEnv), Options{Schema: schema, BusyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() { // indexing: own entries, and the shared ones every host feeds
		defer close(done)
		for b := range hostBatches {
			es := make([]history.Entry, 0, 2*hostPerBatch)
			for j := range hostPerBatch {
				es = append(es,
					historytest.Entry(fmt.Sprintf("h%d", id), fmt.Sprintf("%d-%d", b, j), fmt.Sprintf("shared words host%d batch%d entry%d", id, b, j)),
					historytest.Entry("common", fmt.Sprintf("%d-%d", b, j), fmt.Sprintf("shared words common batch%d entry%d", b, j)))
			}
			n, err := s.IndexBatch(ctx, es)
			if err != nil {
				fail(err)
				return
			}
			r.Added += n
		}
	})
	wg.Go(func() { // remembering, past the ceiling
		remember := func(n history.Note) bool {
			got, err := s.Remember(ctx, n)
			switch {
			case tool.CodeOf(err) == history.CodeMemoryCeilingReached:
				r.Ceiling++
			case err != nil:
				fail(err)
				return false
			case got.AlreadyStored:
				r.Already++
			default:
				r.Stored++
			}
			return true
		}
		for i := range hostNotes {
			if !remember(historytest.NumberedNote(1000*(id+1) + i)) {
				return
			}
			if i < sharedNotes && !remember(historytest.NumberedNote(i)) {
				return
			}
		}
	})
	wg.Go(func() { // searching while the others write: no page repeats a hit
		for {
			select {
			case <-done:
				return
			default:
			}
			hits, err := s.Search(ctx, history.Query{Text: "shared words", Limit: history.MaxLimit})
			if err != nil {
				fail(err)
				return
			}
			seen := map[string]bool{}
			for i, h := range hits {
				k := h.Session + "/" + h.Entry
				if seen[k] || i > 0 && h.Seq >= hits[i-1].Seq {
					fail(fmt.Errorf("search answered %s twice or out of order", k))
					return
				}
				seen[k] = true
			}
		}
	})
	wg.Wait()
	b, _ := json.Marshal(r)
	fmt.Printf("\nhost-report %s\n", b)
}

// Several processes on one schema index, search and remember at once:
// nothing is lost, nothing duplicated, seq is dense and unique, paging
// through every hit repeats none, and the note ceiling holds across them.
func TestManyHosts(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.Schema(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := make([][]byte, hosts)
	errs := make([]error, hosts)
	var wg sync.WaitGroup
	for i := range hosts {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostProcess$", "-test.v")
		cmd.Env = append(os.Environ(), hostSchemaEnv+"="+schema, hostIDEnv+"="+strconv.Itoa(i), postgrestest.URLEnv+"="+url)
		wg.Go(func() { out[i], errs[i] = cmd.CombinedOutput() })
	}
	wg.Wait()
	var total hostReport
	for i := range hosts {
		if errs[i] != nil {
			t.Fatalf("host %d: %v\n%s", i, errs[i], out[i])
		}
		var r hostReport
		for _, line := range strings.Split(string(out[i]), "\n") {
			if rest, ok := strings.CutPrefix(line, "host-report "); ok {
				if err := json.Unmarshal([]byte(rest), &r); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, e := range r.Errors {
			t.Errorf("host %d: %s", i, e)
		}
		total.Stored += r.Stored
		total.Already += r.Already
		total.Ceiling += r.Ceiling
		total.Added += r.Added
	}
	s := openTest(t, Options{Schema: schema})
	const entries = hosts*hostBatches*hostPerBatch + hostBatches*hostPerBatch
	if total.Added != entries {
		t.Errorf("hosts added %d entries, want %d (each shared entry once)", total.Added, entries)
	}
	var count, distinct, top int
	if err := s.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT (session, entry)), coalesce(max(seq), 0) FROM entries`).Scan(&count, &distinct, &top); err != nil {
		t.Fatal(err)
	}
	if count != entries+history.MaxNotes || distinct != count || top != count {
		t.Errorf("%d rows, %d distinct, largest seq %d; want %d of each", count, distinct, top, entries+history.MaxNotes)
	}
	if total.Stored != history.MaxNotes {
		t.Errorf("hosts stored %d notes, want the ceiling %d (report %+v)", total.Stored, history.MaxNotes, total)
	}
	if n, err := s.Notes(ctx); err != nil || n != history.MaxNotes {
		t.Errorf("Notes = %d, %v", n, err)
	}
	attempts := hosts*hostNotes + hosts*sharedNotes
	if total.Stored+total.Already+total.Ceiling != attempts {
		t.Errorf("%d outcomes of %d notes", total.Stored+total.Already+total.Ceiling, attempts)
	}
	// Paging through every hit of the shared words sees each entry once.
	seen := map[string]bool{}
	q := history.Query{Text: "shared words", Limit: history.MaxLimit}
	for {
		hits, err := s.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 {
			break
		}
		for _, h := range hits {
			k := h.Session + "/" + h.Entry
			if seen[k] {
				t.Fatalf("paging repeated %s", k)
			}
			seen[k] = true
		}
		q.Before = hits[len(hits)-1].Seq
	}
	if len(seen) != entries {
		t.Errorf("paging saw %d entries, want %d", len(seen), entries)
	}
}
