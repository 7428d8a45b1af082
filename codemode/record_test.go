package codemode

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRecordItemisesThenCounts: the first maxRecordedCalls calls are
// itemised, the counters stay exact past them, and calls in flight at
// the end are unsettled.
func TestRecordItemisesThenCounts(t *testing.T) {
	t.Parallel()
	clock := time.Unix(0, 0)
	var mu sync.Mutex
	r := newRecorder(func() time.Time { mu.Lock(); defer mu.Unlock(); clock = clock.Add(time.Millisecond); return clock })
	const n = maxRecordedCalls + 10
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ref := r.begin("kv.get", func() string { return "key=" + strings.Repeat("k", i) })
			switch i % 3 {
			case 0:
				r.end(ref, CallOK, "", false)
			case 1:
				r.end(ref, CallFailed, codeKVFull, true)
			}
		}()
	}
	wg.Wait()
	rec := r.finish()
	if rec.Total != n || len(rec.Calls) != maxRecordedCalls || rec.Omitted != n-maxRecordedCalls {
		t.Fatalf("total %d, itemised %d, omitted %d", rec.Total, len(rec.Calls), rec.Omitted)
	}
	if rec.OK+rec.Failed+rec.Cancelled+rec.Unsettled != n {
		t.Fatalf("counters %+v do not add up to %d", rec, n)
	}
	if rec.Unsettled != n/3 {
		t.Errorf("unsettled %d, want %d", rec.Unsettled, n/3)
	}
	for _, e := range rec.Calls {
		if len(e.Summary) > maxCallSummaryBytes {
			t.Fatalf("a summary of %d bytes", len(e.Summary))
		}
		if e.Status == CallFailed && e.DurationMs != 0 {
			t.Errorf("a call refused before it was served has a duration: %+v", e)
		}
	}
}

// TestSummaryNeverCarriesAPayload: file content, stdin, values and
// artifacts are sized, never quoted.
func TestSummaryNeverCarriesAPayload(t *testing.T) {
	t.Parallel()
	secret := "TOP-SECRET-PAYLOAD"
	cases := map[string]map[string]any{
		"fs.write":    {"path": "a", "content": []byte(secret)},
		"kv.set":      {"key": "k", "value": []byte(secret)},
		"proc.run":    {"argv": []any{"cat"}, "stdin": []byte(secret)},
		"report.emit": {"name": "r", "content": secret},
		"job.send":    {"handle": "j", "input": []byte(secret)},
	}
	for cap, args := range cases {
		if s := summary(cap, args); strings.Contains(s, secret) || !strings.Contains(s, "bytes") {
			t.Errorf("%s summary %q", cap, s)
		}
	}
}
