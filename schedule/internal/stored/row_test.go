package stored

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/tool"
)

// TestParseID: only "sch-" and a positive base-10 int64 is an id.
func TestParseID(t *testing.T) {
	tests := []struct {
		id   string
		want int64
		ok   bool
	}{
		{"sch-1", 1, true},
		{"sch-42", 42, true},
		{"sch-9223372036854775807", math.MaxInt64, true},
		{"sch-007", 0, false}, // one spelling per schedule
		{"sch-+5", 0, false},
		{"sch-0", 0, false},
		{"sch--1", 0, false},
		{"sch-9223372036854775808", 0, false},
		{"sch-", 0, false},
		{"sch-1x", 0, false},
		{"sch- 1", 0, false},
		{"1", 0, false},
		{"SCH-1", 0, false},
		{" sch-1", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		n, ok := ParseID(tt.id)
		if ok != tt.ok || (ok && n != tt.want) {
			t.Errorf("ParseID(%q) = %d, %v; want %d, %v", tt.id, n, ok, tt.want, tt.ok)
		}
	}
}

// TestFormatIDRoundTrips: ParseID reads back every id FormatID writes.
func TestFormatIDRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.Int64Range(1, math.MaxInt64).Draw(t, "n")
		id := FormatID(n)
		if got, ok := ParseID(id); !ok || got != n {
			t.Fatalf("ParseID(FormatID(%d) = %q) = %d, %v", n, id, got, ok)
		}
	})
}

// FuzzParseID: ParseID never panics, and what it accepts is a positive
// key whose FormatID it reads back.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"sch-1", "sch-0", "sch--1", "sch-+5", "sch-9223372036854775808", "sch-", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		n, ok := ParseID(id)
		if !ok {
			return
		}
		if n <= 0 || FormatID(n) != id {
			t.Fatalf("ParseID(%q) accepted %d", id, n)
		}
		if back, ok := ParseID(FormatID(n)); !ok || back != n {
			t.Fatalf("ParseID(FormatID(%d)) = %d, %v", n, back, ok)
		}
	})
}

// values is r as the stores write its Columns (Create's INSERT, with
// the id the table gave it).
func values(r Row) []any {
	return []any{r.ID, r.Owner, r.Target, string(r.Timing.Kind), int64(r.Timing.Every / time.Second), r.Timing.Expr,
		int64(r.Timing.Offset / time.Second), r.AtNS(), r.Expires.UnixNano(), int64(r.MaxFires), int64(r.Fires), bool(r.Wake),
		r.Message, r.Created.UnixNano(), r.Next.UnixNano()}
}

// fakeRow is one result row, scanned as a driver scans into the
// pointer types Scan passes.
type fakeRow struct {
	vals []any
	err  error
}

func (f fakeRow) Scan(dest ...any) error {
	if f.err != nil {
		return f.err
	}
	if len(dest) != len(f.vals) {
		return fmt.Errorf("%d destinations for %d columns", len(dest), len(f.vals))
	}
	for i, d := range dest {
		switch d := d.(type) {
		case *int64:
			*d = f.vals[i].(int64)
		case *string:
			*d = f.vals[i].(string)
		case *bool:
			*d = f.vals[i].(bool)
		default:
			return fmt.Errorf("column %d: cannot scan into %T", i, d)
		}
	}
	return nil
}

var t0 = time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)

// TestScan: Scan reads each timing kind back from its columns, and
// answers a scanner's error as it is.
func TestScan(t *testing.T) {
	interval := Row{ID: 1, Owner: "root", Target: "sub:root/a", Message: "tick", Timing: schedule.Timing{Kind: schedule.Interval, Every: time.Hour},
		Expires: t0.Add(48 * time.Hour), Created: t0, Next: t0.Add(time.Hour), MaxFires: 10, Fires: 3, Wake: schedule.WakesIdle}
	cron := Row{ID: 2, Owner: "root", Target: "root", Message: "daily", Timing: schedule.Timing{Kind: schedule.Cron, Expr: "0 9 * * *", Offset: -5 * time.Hour},
		Expires: t0.Add(72 * time.Hour), Created: t0, Next: t0.Add(2 * time.Hour)}
	once := Row{ID: 3, Owner: "root", Target: "root", Message: "once", Timing: schedule.Timing{Kind: schedule.Once, At: t0.Add(time.Minute)},
		Expires: t0.Add(time.Minute), Created: t0, Next: t0.Add(time.Minute), MaxFires: 1}
	for _, want := range []Row{interval, cron, once} {
		got, err := Scan(fakeRow{vals: values(want)})
		if err != nil {
			t.Fatalf("Scan(%s): %v", want.Timing.Kind, err)
		}
		if got != want {
			t.Errorf("Scan(%s) = %+v; want %+v", want.Timing.Kind, got, want)
		}
	}
	// A one-shot's at_ns is the only place its instant is kept; 0 is none.
	if v := values(interval); v[7] != int64(0) {
		t.Errorf("an interval's at_ns = %v; want 0", v[7])
	}
	boom := errors.New("boom")
	if _, err := Scan(fakeRow{err: boom}); err != boom {
		t.Errorf("Scan on a failing row: %v; want %v", err, boom)
	}
	if n := strings.Count(Columns, ",") + 1; n != len(values(once)) {
		t.Errorf("Columns names %d columns; Scan reads %d", n, len(values(once)))
	}
}

// TestScanReadsBackWhatIsWritten: any row as a store keeps it (whole
// seconds of period and offset, UTC times, an instant only on a
// one-shot) is read back as it was written.
func TestScanReadsBackWhatIsWritten(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		at := func(name string) time.Time {
			return time.Unix(0, rapid.Int64Range(1, 4e18).Draw(t, name)).UTC()
		}
		r := Row{
			ID:       rapid.Int64Range(1, math.MaxInt64).Draw(t, "id"),
			Owner:    rapid.String().Draw(t, "owner"),
			Target:   rapid.String().Draw(t, "target"),
			Message:  rapid.String().Draw(t, "message"),
			Expires:  at("expires"),
			Created:  at("created"),
			Next:     at("next"),
			MaxFires: rapid.IntRange(0, math.MaxInt32).Draw(t, "maxFires"),
			Fires:    rapid.IntRange(0, math.MaxInt32).Draw(t, "fires"),
			Wake:     schedule.Wake(rapid.Bool().Draw(t, "wake")),
		}
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0:
			r.Timing = schedule.Timing{Kind: schedule.Interval, Every: time.Duration(rapid.Int64Range(1, 1e9).Draw(t, "every")) * time.Second}
		case 1:
			r.Timing = schedule.Timing{Kind: schedule.Cron, Expr: rapid.String().Draw(t, "expr"),
				Offset: time.Duration(rapid.IntRange(-12*60, 14*60).Draw(t, "offset")) * time.Minute}
		default:
			r.Timing = schedule.Timing{Kind: schedule.Once, At: at("at")}
		}
		got, err := Scan(fakeRow{vals: values(r)})
		if err != nil {
			t.Fatal(err)
		}
		if got != r {
			t.Fatalf("Scan(values(r)) = %+v; want %+v", got, r)
		}
	})
}

// TestAdmit: Admit passes the request's own refusal through, refuses
// one that expires before it first fires, plans the first fire, and
// grants Wake only as far as the grant allows.
func TestAdmit(t *testing.T) {
	l := schedule.Limits{}.Normalized()
	base := schedule.Request{Strand: "root", Target: "root", Message: "hi", At: t0, Expires: t0.Add(24 * time.Hour),
		Timing: schedule.Timing{Kind: schedule.Interval, Every: time.Hour}}
	with := func(f func(*schedule.Request)) schedule.Request { r := base; f(&r); return r }
	tests := []struct {
		name  string
		req   schedule.Request
		grant schedule.Wake
		code  tool.Code // "" admits
		next  time.Time
		wake  schedule.Wake
	}{
		{"interval", base, schedule.WakesIdle, "", t0.Add(time.Hour), schedule.SteersOnly},
		{"wake granted", with(func(r *schedule.Request) { r.Wake = schedule.WakesIdle }), schedule.WakesIdle, "", t0.Add(time.Hour), schedule.WakesIdle},
		{"wake withheld", with(func(r *schedule.Request) { r.Wake = schedule.WakesIdle }), schedule.SteersOnly, "", t0.Add(time.Hour), schedule.SteersOnly},
		{"once", with(func(r *schedule.Request) {
			r.Timing = schedule.Timing{Kind: schedule.Once, At: t0.Add(time.Minute)}
			r.Expires, r.MaxFires = t0.Add(time.Minute), 1
		}), schedule.SteersOnly, "", t0.Add(time.Minute), schedule.SteersOnly},
		{"interval below the minimum", with(func(r *schedule.Request) { r.Timing.Every = time.Second }), schedule.SteersOnly, schedule.CodeIntervalOutOfBounds, time.Time{}, false},
		{"first fire at the expiry", with(func(r *schedule.Request) { r.Expires = t0.Add(time.Hour) }), schedule.SteersOnly, schedule.CodeExpiryOutOfBounds, time.Time{}, false},
		{"cron expiring before it matches", with(func(r *schedule.Request) {
			r.Timing = schedule.Timing{Kind: schedule.Cron, Expr: "0 9 29 2 *"} // next 29 February is in 2028
			r.Expires = t0.Add(7 * 24 * time.Hour)
		}), schedule.SteersOnly, schedule.CodeExpiryOutOfBounds, time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Admit(tt.req, l, tt.grant)
			if tool.CodeOf(err) != tt.code {
				t.Fatalf("Admit: %v; want code %q", err, tt.code)
			}
			if tt.code != "" {
				if r != (Row{}) {
					t.Errorf("a refused Admit answered %+v", r)
				}
				return
			}
			want := Row{Owner: tt.req.Strand, Target: tt.req.Target, Message: tt.req.Message, Timing: tt.req.Timing, Expires: tt.req.Expires,
				Next: tt.next, MaxFires: tt.req.MaxFires, Wake: tt.wake}
			if r != want {
				t.Errorf("Admit = %+v; want %+v", r, want)
			}
		})
	}
}

// TestRowFire: each fire raises Fires and plans the next by the
// cadence; the last fire (count, expiry, one-shot) plans none.
func TestRowFire(t *testing.T) {
	tests := []struct {
		name       string
		r          Row
		now        time.Time
		wantFires  int
		wantFollow time.Time
	}{
		{"interval keeps its cadence", Row{Timing: schedule.Timing{Kind: schedule.Interval, Every: time.Hour}, Expires: t0.Add(24 * time.Hour), Next: t0, Fires: 0},
			t0, 1, t0.Add(time.Hour)},
		{"a late fire coalesces the missed ones", Row{Timing: schedule.Timing{Kind: schedule.Interval, Every: time.Hour}, Expires: t0.Add(24 * time.Hour), Next: t0},
			t0.Add(150 * time.Minute), 1, t0.Add(3 * time.Hour)},
		{"the count's last fire", Row{Timing: schedule.Timing{Kind: schedule.Interval, Every: time.Hour}, Expires: t0.Add(24 * time.Hour), Next: t0, MaxFires: 2, Fires: 1},
			t0, 2, time.Time{}},
		{"none at the expiry", Row{Timing: schedule.Timing{Kind: schedule.Interval, Every: time.Hour}, Expires: t0.Add(time.Hour), Next: t0},
			t0, 1, time.Time{}},
		{"a one-shot fires once", Row{Timing: schedule.Timing{Kind: schedule.Once, At: t0}, Expires: t0, Next: t0, MaxFires: 1},
			t0, 1, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.r
			next := r.Fire(tt.now, time.Minute)
			if r.Fires != tt.wantFires || !next.Equal(tt.wantFollow) {
				t.Errorf("Fire = %v with %d fires; want %v with %d", next, r.Fires, tt.wantFollow, tt.wantFires)
			}
		})
	}
}

// TestAdmittedAndListed: a row answers Create and List with its id's
// text and its cadence.
func TestAdmittedAndListed(t *testing.T) {
	r := Row{ID: 7, Owner: "root", Target: "sub:root/a", Message: "m", Timing: schedule.Timing{Kind: schedule.Interval, Every: time.Hour},
		Expires: t0.Add(24 * time.Hour), Created: t0, Next: t0.Add(time.Hour), MaxFires: 5, Fires: 2, Wake: schedule.WakesIdle}
	cad := schedule.Cadence{Kind: schedule.CadenceInterval, EverySeconds: 3600, Expires: t0.Add(24 * time.Hour).Unix()}
	if got, want := r.Admitted(), (schedule.Created{ID: "sch-7", Target: "sub:root/a", Wake: schedule.WakesIdle, Cadence: cad, Next: t0.Add(time.Hour), MaxFires: 5}); got != want {
		t.Errorf("Admitted = %+v; want %+v", got, want)
	}
	if got, want := r.Listed(), (schedule.Row{ID: "sch-7", Owner: "root", Target: "sub:root/a", Wake: schedule.WakesIdle, Cadence: cad,
		Next: t0.Add(time.Hour), Fires: 2, MaxFires: 5, Message: "m"}); got != want {
		t.Errorf("Listed = %+v; want %+v", got, want)
	}
}
