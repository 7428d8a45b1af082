package schedule

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

var now = time.Date(2026, 12, 7, 19, 30, 15, 500_000_000, time.UTC)

func TestDecodeRefusesEachMistakeWithItsCode(t *testing.T) {
	const me = "main"
	child := "sub:main/look-abc123"
	tests := []struct {
		name string
		s    Spec
		code tool.Code
	}{
		{"no timing", Spec{Message: "m"}, CodeOneTiming},
		{"two timings", Spec{EverySeconds: 60, Cron: "* * * * *", Message: "m"}, CodeOneTiming},
		{"four timings", Spec{EverySeconds: 60, Cron: "* * * * *", At: "x", InSeconds: 5, Message: "m"}, CodeOneTiming},
		{"offset beside every", Spec{EverySeconds: 60, UTCOffset: "+01:00", Message: "m"}, CodeOffsetWithoutCron},
		{"offset beside at", Spec{At: "2026-12-08T00:00:00Z", UTCOffset: "+01:00", Message: "m"}, CodeOffsetWithoutCron},
		{"offset a zone name", Spec{Cron: "0 9 * * *", UTCOffset: "Europe/Paris", Message: "m"}, CodeBadUTCOffset},
		{"offset past +14", Spec{Cron: "0 9 * * *", UTCOffset: "+14:30", Message: "m"}, CodeBadUTCOffset},
		{"offset minutes 60", Spec{Cron: "0 9 * * *", UTCOffset: "+01:60", Message: "m"}, CodeBadUTCOffset},
		{"cron six fields", Spec{Cron: "0 0 9 * * *", Message: "m"}, CodeBadCron},
		{"cron descriptor", Spec{Cron: "@hourly", Message: "m"}, CodeBadCron},
		{"cron every descriptor", Spec{Cron: "@every 1s", Message: "m"}, CodeBadCron},
		{"cron zone prefix", Spec{Cron: "TZ=UTC 0 9 * * *", Message: "m"}, CodeBadCron},
		{"cron zone prefix without space", Spec{Cron: "TZ=UTC", Message: "m"}, CodeBadCron},
		{"cron never fires", Spec{Cron: "0 0 30 2 *", Message: "m"}, CodeBadCron},
		{"cron garbage", Spec{Cron: "soon", Message: "m"}, CodeBadCron},
		{"at not RFC 3339", Spec{At: "tomorrow", Message: "m"}, CodeBadAt},
		{"at in the past", Spec{At: "2020-01-01T00:00:00Z", Message: "m"}, CodeAtInPast},
		{"at now", Spec{At: now.Truncate(time.Second).Format(time.RFC3339), Message: "m"}, CodeAtInPast},
		{"at too far", Spec{At: now.Add(DefaultMaxLifetime + time.Hour).Format(time.RFC3339), Message: "m"}, CodeTooFarAhead},
		{"in_seconds negative", Spec{InSeconds: -5, Message: "m"}, CodeAtInPast},
		{"in_seconds too far", Spec{InSeconds: int64(DefaultMaxLifetime/time.Second) + 1, Message: "m"}, CodeTooFarAhead},
		{"interval too short", Spec{EverySeconds: 59, Message: "m"}, CodeIntervalOutOfBounds},
		{"interval negative", Spec{EverySeconds: -60, Message: "m"}, CodeIntervalOutOfBounds},
		{"interval too long", Spec{EverySeconds: int64(DefaultMaxLifetime/time.Second) + 1, Message: "m"}, CodeIntervalOutOfBounds},
		{"max_fires negative", Spec{EverySeconds: 60, MaxFires: -1, Message: "m"}, CodeMaxFiresOutOfBounds},
		{"max_fires too many", Spec{EverySeconds: 60, MaxFires: DefaultMaxFires + 1, Message: "m"}, CodeMaxFiresOutOfBounds},
		{"max_fires on a one-shot", Spec{InSeconds: 60, MaxFires: 2, Message: "m"}, CodeMaxFiresOutOfBounds},
		{"expiry on a one-shot", Spec{InSeconds: 60, ExpiresAfter: 600, Message: "m"}, CodeExpiryOutOfBounds},
		{"expiry negative", Spec{EverySeconds: 60, ExpiresAfter: -1, Message: "m"}, CodeExpiryOutOfBounds},
		{"expiry too long", Spec{EverySeconds: 60, ExpiresAfter: int64(DefaultMaxLifetime/time.Second) + 1, Message: "m"}, CodeExpiryOutOfBounds},
		{"expiry before the first fire", Spec{EverySeconds: 3600, ExpiresAfter: 1, Message: "m"}, CodeExpiryOutOfBounds},
		{"message blank", Spec{EverySeconds: 60, Message: " \n"}, CodeMessageOutOfBounds},
		{"message too long", Spec{EverySeconds: 60, Message: strings.Repeat("m", MaxMessageBytes+1)}, CodeMessageOutOfBounds},
		{"message not UTF-8", Spec{EverySeconds: 60, Message: "\xff"}, CodeMessageOutOfBounds},
		{"target a sibling root", Spec{EverySeconds: 60, Message: "m", Target: "other"}, agent.CodeNotDescendant},
		{"target the parent", Spec{EverySeconds: 60, Message: "m", Target: "sub:other/x-1"}, agent.CodeNotDescendant},
		{"target a prefix lookalike", Spec{EverySeconds: 60, Message: "m", Target: "sub:mainframe/x-1"}, agent.CodeNotDescendant},
		// controls: each shape admitted.
		{"every", Spec{EverySeconds: 60, Message: "m"}, ""},
		{"cron with offset", Spec{Cron: "0 9 * * 1-5", UTCOffset: "-05:30", Message: "m"}, ""},
		{"at", Spec{At: "2026-12-08T09:00:00+01:00", Message: "m"}, ""},
		{"in_seconds", Spec{InSeconds: 1, Message: "m", MaxFires: 1}, ""},
		{"target a child", Spec{EverySeconds: 60, Message: "m", Target: child}, ""},
		{"target a grandchild", Spec{EverySeconds: 60, Message: "m", Target: child + "/deeper-def456"}, ""},
		{"target self named", Spec{EverySeconds: 60, Message: "m", Target: me}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Decode(tt.s, me, now, Limits{})
			if got := tool.CodeOf(err); got != tt.code {
				t.Fatalf("code %q (%v), want %q", got, err, tt.code)
			}
			if err != nil {
				if len(err.Error()) > 600 {
					t.Errorf("refusal is %d bytes", len(err.Error()))
				}
				return
			}
			if r.Strand != me || r.Target == "" || r.Message != tt.s.Message || !r.At.Equal(now) {
				t.Errorf("request %+v", r)
			}
			if next := r.Timing.Next(now); next.IsZero() || !next.After(now) || next.After(r.Expires) {
				t.Errorf("first fire %v, expires %v", next, r.Expires)
			}
		})
	}
}

func TestDecodeResolvesTimings(t *testing.T) {
	r, err := Decode(Spec{InSeconds: 90, Message: "m"}, "main", now, Limits{})
	if err != nil || r.Timing.Kind != Once || !r.Timing.At.Equal(time.Date(2026, 12, 7, 19, 31, 45, 0, time.UTC)) || !r.Expires.Equal(r.Timing.At) {
		t.Fatalf("in_seconds: %+v, %v", r, err)
	}
	r, err = Decode(Spec{Cron: "0 9 * * *", UTCOffset: "+02:00", Message: "m"}, "main", now, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if next := r.Timing.Next(now); !next.Equal(time.Date(2026, 12, 8, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("09:00 at +02:00 next %v, want 07:00Z the next day", next)
	}
	if !r.Expires.Equal(now.Add(DefaultMaxLifetime)) {
		t.Errorf("default expiry %v", r.Expires)
	}
	c := CadenceOf(r.Timing, r.Expires)
	if c.Kind != CadenceCron || c.UTCOffset != "+02:00" || c.Cron != "0 9 * * *" || c.Expires != r.Expires.Unix() {
		t.Errorf("cadence %+v", c)
	}
	r, err = Decode(Spec{EverySeconds: 3600, ExpiresAfter: 7200, Message: "m"}, "main", now, Limits{})
	if err != nil || r.Timing.Next(now) != time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC) || !r.Expires.Equal(now.Add(2*time.Hour)) {
		t.Fatalf("every: %+v %v", r, err)
	}
	// Limits are the caller's: a host's MinInterval of an hour refuses a
	// minute.
	if _, err := Decode(Spec{EverySeconds: 60, Message: "m"}, "main", now, Limits{MinInterval: time.Hour}); tool.CodeOf(err) != CodeIntervalOutOfBounds {
		t.Errorf("limits not applied: %v", err)
	}
}

func TestAdmits(t *testing.T) {
	for _, tt := range []struct {
		strand, target string
		want           bool
	}{
		{"main", "main", true},
		{"main", "sub:main/a-1", true},
		{"main", "sub:main/a-1/b-2", true},
		{"sub:main/a-1", "sub:main/a-1/b-2", true},
		{"sub:main/a-1", "sub:main/a-1", true},
		{"sub:main/a-1", "main", false},
		{"sub:main/a-1", "sub:main/a-2", false},
		{"sub:main/a-1", "sub:main/a-10", false},
		{"main", "sub:mainx/a-1", false},
		{"main", "other", false},
		{"", "", false},
		{"main", "", false},
	} {
		if got := Admits(tt.strand, tt.target); got != tt.want {
			t.Errorf("Admits(%q, %q) = %v", tt.strand, tt.target, got)
		}
	}
}

func TestOffsetRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := time.Duration(rapid.IntRange(-12*60, 14*60).Draw(t, "minutes")) * time.Minute
		got, err := ParseOffset(FormatOffset(d))
		if err != nil || got != d {
			t.Fatalf("%v -> %q -> %v, %v", d, FormatOffset(d), got, err)
		}
	})
}

// TestIntervalNextIsTheFirstAlignedInstantAfter: an interval fires at
// the first whole multiple of its period strictly after the instant
// asked, never at or before it.
func TestIntervalNextIsTheFirstAlignedInstantAfter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		every := time.Duration(rapid.Int64Range(1, 1e6).Draw(t, "every")) * time.Second
		after := time.Unix(0, rapid.Int64Range(-1e18, 4e18).Draw(t, "after"))
		next := Timing{Kind: Interval, Every: every}.Next(after)
		if !next.After(after) || next.Unix()%int64(every/time.Second) != 0 || next.Sub(after) > every {
			t.Fatalf("every %v after %v: next %v", every, after, next)
		}
	})
}

// TestCronNextNeverBeforeItsTime: a cron's next fire is after the
// instant asked and matches the fields on the offset clock.
func TestCronNextNeverBeforeItsTime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		minute := rapid.IntRange(0, 59).Draw(t, "minute")
		hour := rapid.IntRange(0, 23).Draw(t, "hour")
		off := time.Duration(rapid.IntRange(-12*4, 14*4).Draw(t, "quarters")) * 15 * time.Minute
		after := time.Unix(rapid.Int64Range(0, 4e9).Draw(t, "after"), 0)
		tm := Timing{Kind: Cron, Expr: strings.Join([]string{strconv.Itoa(minute), strconv.Itoa(hour), "*", "*", "*"}, " "), Offset: off}
		next := tm.Next(after)
		local := next.Add(off)
		if !next.After(after) || next.Sub(after) > 24*time.Hour || local.Minute() != minute || local.Hour() != hour || next.Second() != 0 {
			t.Fatalf("%q at %v after %v: next %v", tm.Expr, off, after.UTC(), next)
		}
	})
}

// FuzzDecode: Decode is total, and what it admits is one well-formed
// timing that fires after the clock and not after its expiry.
func FuzzDecode(f *testing.F) {
	f.Add(int64(60), "", "", "", int64(0), 0, int64(0), "m", "")
	f.Add(int64(0), "0 9 * * 1-5", "+05:30", "", int64(0), 3, int64(3600), "m", "sub:main/a-1")
	f.Add(int64(0), "TZ=Europe/Paris", "", "", int64(0), 0, int64(0), "m", "")
	f.Add(int64(0), "", "", "2026-12-08T00:00:00Z", int64(0), 1, int64(0), "m", "")
	f.Add(int64(0), "", "", "", int64(30), 0, int64(0), "m", "main")
	f.Fuzz(func(t *testing.T, every int64, cronExpr, offset, at string, in int64, maxFires int, expires int64, msg, target string) {
		s := Spec{EverySeconds: every, Cron: cronExpr, UTCOffset: offset, At: at, InSeconds: in, MaxFires: maxFires, ExpiresAfter: expires, Message: msg, Target: target}
		r, err := Decode(s, "main", now, Limits{})
		if err != nil {
			if tool.CodeOf(err) == "" {
				t.Fatalf("uncoded refusal %v", err)
			}
			return
		}
		if s.Timings() != 1 || (offset != "" && cronExpr == "") || !Admits("main", r.Target) {
			t.Fatalf("admitted %+v", s)
		}
		next := r.Timing.Next(now)
		if next.IsZero() || !next.After(now) || next.After(r.Expires) || r.MaxFires < 0 {
			t.Fatalf("admitted %+v: next %v, expires %v", s, next, r.Expires)
		}
		if err := r.Check(Limits{}); err != nil {
			t.Fatalf("Decode admitted %+v, which Check refuses: %v", s, err)
		}
	})
}

// TestRedteamCronIsBounded: a cron's length was unbounded, so one of
// megabytes ("0,0,0,…") was admitted, stored, and parsed again at every
// planning of its next fire (about a second per 8 MB). Control: the
// longest list a field can usefully hold is still accepted.
func TestRedteamCronIsBounded(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	minutes := make([]string, 60)
	for i := range minutes {
		minutes[i] = strconv.Itoa(i)
	}
	long := strings.Join(minutes, ",") + " * * * *"
	if _, err := Decode(Spec{Cron: long, Message: "m"}, "main", now, Limits{}); err != nil {
		t.Fatalf("every minute listed (%d bytes): %v", len(long), err)
	}
	huge := strings.Repeat("0,", 1<<16) + "0 * * * *"
	_, err := Decode(Spec{Cron: huge, Message: "m"}, "main", now, Limits{})
	if tool.CodeOf(err) != CodeBadCron {
		t.Fatalf("a %d-byte cron: %v, want %s", len(huge), err, CodeBadCron)
	}
	if len(err.Error()) > 1024 {
		t.Errorf("the refusal is %d bytes", len(err.Error()))
	}
}

// TestRedteamTargetIsANameAStrandCouldHave: a descendant target was
// only a prefix match, so one of megabytes, one holding terminal escapes
// (handed raw to the host's Fire and its logs), or one naming no child
// ("sub:main/") was admitted. Control: a minted descendant's name is.
func TestRedteamTargetIsANameAStrandCouldHave(t *testing.T) {
	for _, tt := range []struct {
		target string
		want   bool
	}{
		{"sub:main/a-1", true},
		{"sub:main/a-1/b-2", true},
		{"sub:main/", false},
		{"sub:main/a-1/", false},
		{"sub:main/a\x1b]0;owned\x07", false},
		{"sub:main/a\nfire 1 of 9 to main", false},
		{"sub:main/\xff", false},
		{"sub:main/" + strings.Repeat("a", 1<<20), false},
	} {
		if got := Admits("main", tt.target); got != tt.want {
			t.Errorf("Admits(main, %.40q) = %v, want %v", tt.target, got, tt.want)
		}
	}
}
