package plane

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/schedule/sqlite"
	"github.com/agentloom/loom/tool"
)

// TestScheduleToolsAreOptIn: a Schedules seam brings its three tools
// together under FamilyHost, and only there; through the plane a strand
// schedules itself and its sub-agent, never another root, and a
// steer-only reference scheduler says so.
func TestScheduleToolsAreOptIn(t *testing.T) {
	t.Parallel()
	_, cfg := testDirs(t)
	sch, err := sqlite.Open(filepath.Join(filepath.Dir(filepath.Dir(cfg.HistoryPath)), "schedules.sqlite"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sch.Close() })
	want := namesOf(schedule.Tools(nil))
	for _, tt := range []struct {
		name string
		fam  Family
		has  bool
	}{
		{"default", 0, false},
		{"host", FamilyHost, true},
		{"everything", AllFamilies | FamilyHost, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, c := testDirs(t)
			c.Families, c.Schedules = tt.fam, sch
			p := newTestPlane(t, c)
			names := namesOf(p.Registry.Registered())
			for _, n := range want {
				if slices.Contains(names, n) != tt.has {
					t.Errorf("%s registered: %v, want %v (%v)", n, !tt.has, tt.has, names)
				}
			}
		})
	}
	cfg.Families, cfg.Schedules = FamilyHost, sch
	p := newTestPlane(t, cfg)
	if diff := cmp.Diff(want, namesOf(p.Registry.Registered())); diff != "" {
		t.Fatalf("FamilyHost with only Schedules (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		strand, name, args string
		code               tool.Code
		says               string
	}{
		{DefaultStrand, schedule.CreateToolName, `{"every_seconds":600,"message":"check the build","wake":true}`, "", "only steer"},
		{DefaultStrand, schedule.CreateToolName, `{"in_seconds":60,"message":"look","target":"sub:main/w-1"}`, "", "once at"},
		{DefaultStrand, schedule.CreateToolName, `{"in_seconds":60,"message":"look","target":"other"}`, "not_descendant", ""},
		{DefaultStrand, schedule.CreateToolName, `{"in_seconds":60,"at":"2030-01-01T00:00:00Z","message":"look"}`, schedule.CodeOneTiming, ""},
		{DefaultStrand, schedule.ListToolName, `{}`, "", "sub:main/w-1"},
		{"other", schedule.ListToolName, `{}`, "", "No live schedules."},
	} {
		call := p.CallFor(c.strand, "op-1")
		call.Now = func() time.Time { return time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC) }
		o := p.Registry.Dispatch(context.Background(), call, c.name, json.RawMessage(c.args))
		if o.Code != c.code || !strings.Contains(o.Text, c.says) {
			t.Errorf("%s %s %s: %+v, want code %q saying %q", c.strand, c.name, c.args, o, c.code, c.says)
		}
	}
}

// TestCodeModeOffersScheduleWithItsTools: code mode's workspace seam
// offers cap/schedule exactly when the plane registers the schedule
// tools, and cap:// lists it then (the index lists every package).
func TestCodeModeOffersScheduleWithItsTools(t *testing.T) {
	t.Parallel()
	for _, with := range []bool{false, true} {
		_, cfg := testDirs(t)
		cfg.Families = FamilyFiles | FamilyCodeMode | FamilyHost
		if with {
			sch, err := sqlite.Open(filepath.Join(filepath.Dir(filepath.Dir(cfg.HistoryPath)), "schedules.sqlite"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sch.Close() })
			cfg.Schedules = sch
		}
		p := newTestPlane(t, cfg)
		if got := slices.Contains(p.CodeMode.Seams()[0].Packages, "cap/schedule"); got != with {
			t.Errorf("with schedules %v: the workspace seam offers %v", with, p.CodeMode.Seams()[0].Packages)
		}
		index := p.Registry.Dispatch(context.Background(), p.Call.At("op", "s", 0), "fs_read", []byte(`{"path":"cap://"}`))
		if with && !strings.Contains(index.Text, "cap/schedule") {
			t.Errorf("with schedules %v, cap:// lists:\n%s", with, index.Text)
		}
	}
}
