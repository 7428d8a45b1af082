package schedule

import (
	"testing"
	"time"
)

// TestFireAfter: the one firing rule every store keeps.
func TestFireAfter(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 19, 30, 0, 0, time.UTC)
	minute := Timing{Kind: Interval, Every: time.Minute}
	everyMinute := Timing{Kind: Cron, Expr: "* * * * *"}
	far := t0.Add(24 * time.Hour)
	for _, tc := range []struct {
		name            string
		t               Timing
		expires         time.Time
		maxFires, fires int
		due, now        time.Time
		minInterval     time.Duration
		want            time.Time
	}{
		{"once fires once", Timing{Kind: Once, At: t0}, far, 0, 1, t0, t0, 0, time.Time{}},
		{"max fires reached", minute, far, 2, 2, t0, t0, 0, time.Time{}},
		{"the next interval", minute, far, 3, 1, t0, t0, 0, t0.Add(time.Minute)},
		{"missed fires coalesce: one late fire, then the cadence from now", minute, far, 0, 1, t0, t0.Add(10*time.Minute + 5*time.Second), 0, t0.Add(11 * time.Minute)},
		{"cron keeps its minimum gap", everyMinute, far, 0, 1, t0, t0, 5 * time.Minute, t0.Add(5 * time.Minute)},
		{"cron without a gap: the next match", everyMinute, far, 0, 1, t0, t0, time.Minute, t0.Add(time.Minute)},
		{"no fire at the expiry", minute, t0.Add(time.Minute), 0, 1, t0, t0, 0, time.Time{}},
		{"a fire before the expiry", minute, t0.Add(time.Minute + time.Second), 0, 1, t0, t0, 0, t0.Add(time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FireAfter(tc.t, tc.expires, tc.maxFires, tc.fires, tc.due, tc.now, tc.minInterval); !got.Equal(tc.want) {
				t.Errorf("FireAfter = %v, want %v", got, tc.want)
			}
		})
	}
}
