package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

// fakeSchedules grants wake per its policy and records what it was
// asked.
type fakeSchedules struct {
	limits Limits
	grant  Wake
	got    []Request
	err    error
	listed Listed
}

func (f *fakeSchedules) Limits() Limits { return f.limits }

func (f *fakeSchedules) Create(_ context.Context, r Request) (Created, error) {
	if f.err != nil {
		return Created{}, f.err
	}
	f.got = append(f.got, r)
	return Created{ID: fmt.Sprint("sch-", len(f.got)), Target: r.Target, Wake: r.Wake && f.grant,
		Cadence: CadenceOf(r.Timing, r.Expires), Next: r.Timing.Next(r.At), MaxFires: r.MaxFires}, nil
}

func (f *fakeSchedules) List(context.Context, string) (Listed, error) { return f.listed, f.err }

func (f *fakeSchedules) Cancel(_ context.Context, _, id string) (Cancelled, error) {
	if id != "sch-1" {
		return Cancelled{}, Refuse(CodeUnknownSchedule, "no schedule %s", quote(id))
	}
	return Cancelled{ID: id, Target: "main", Fires: 2}, nil
}

func registry(t *testing.T, s Schedules) *tool.Registry {
	t.Helper()
	r, err := tool.NewRegistry(Tools(s)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func call(strand string) *tool.Call {
	return &tool.Call{Strand: strand, Now: func() time.Time { return now }}
}

func TestToolsDeclareTheirModes(t *testing.T) {
	want := map[string][2]string{
		CreateToolName: {"never", "exclusive"},
		ListToolName:   {"safe", "concurrent"},
		CancelToolName: {"never", "exclusive"},
	}
	ts := Tools(nil)
	if len(ts) != 3 {
		t.Fatalf("%d tools", len(ts))
	}
	for _, tl := range ts {
		w := want[tl.Name]
		replay, mode := "safe", "concurrent"
		if tl.Replay == tool.ReplayNever {
			replay = "never"
		}
		if tl.Mode == tool.Exclusive {
			mode = "exclusive"
		}
		if replay != w[0] || mode != w[1] {
			t.Errorf("%s: replay %s mode %s, want %v", tl.Name, replay, mode, w)
		}
		if (tl.Name == ListToolName) != tl.ReadOnly {
			t.Errorf("%s: ReadOnly %v", tl.Name, tl.ReadOnly)
		}
	}
}

func TestCreateSaysWhatWasGranted(t *testing.T) {
	const child = "sub:main/watch-abc"
	tests := []struct {
		name, strand, args string
		grant              Wake
		wake               bool
		note               string
	}{
		{"granted wake", "main", `{"every_seconds":60,"message":"check","wake":true}`, WakesIdle, true, "starts a run"},
		{"steer-only policy", "main", `{"every_seconds":60,"message":"check","wake":true}`, SteersOnly, false, "only steer"},
		{"self without wake", "main", `{"in_seconds":60,"message":"check"}`, WakesIdle, false, "will not start a run"},
		{"child without wake", "main", `{"in_seconds":60,"message":"check","target":"` + child + `"}`, WakesIdle, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSchedules{grant: tt.grant}
			o := registry(t, f).Dispatch(context.Background(), call(tt.strand), CreateToolName, json.RawMessage(tt.args))
			if o.IsError {
				t.Fatalf("%+v", o)
			}
			d, ok := o.Details.(CreateDetails)
			if !ok || bool(d.Wake) != tt.wake || d.When == "" || d.Cadence.Kind == "" {
				t.Fatalf("details %#v", o.Details)
			}
			for _, n := range []string{"starts a run", "only steer", "will not start a run"} {
				if has := strings.Contains(o.Text, n); has != (n == tt.note) {
					t.Errorf("text %q: has %q = %v", o.Text, n, has)
				}
			}
			if f.got[0].Strand != tt.strand {
				t.Errorf("strand %q", f.got[0].Strand)
			}
			raw, _ := json.Marshal(o.Details)
			if !strings.Contains(string(raw), fmt.Sprintf(`"wake":%v`, tt.wake)) || !strings.Contains(string(raw), `"cadence":{"kind":`) {
				t.Errorf("details JSON %s", raw)
			}
		})
	}
}

func TestToolsRefuseInBand(t *testing.T) {
	f := &fakeSchedules{}
	r := registry(t, f)
	for _, tt := range []struct {
		strand, name, args string
		code               tool.Code
	}{
		{"main", CreateToolName, `{"message":"m"}`, CodeOneTiming},
		{"main", CreateToolName, `{"every_seconds":60,"cron":"* * * * *","message":"m"}`, CodeOneTiming},
		{"main", CreateToolName, `{"every_seconds":60,"message":"m","target":"other"}`, agent.CodeNotDescendant},
		{"sub:main/a-1", CreateToolName, `{"every_seconds":60,"message":"m","target":"main"}`, agent.CodeNotDescendant},
		{"main", CreateToolName, `{"every_seconds":60,"message":"m","when":"now"}`, tool.CodeUnknownProperty},
		{"main", CancelToolName, `{"id":"sch-9"}`, CodeUnknownSchedule},
		{"main", CancelToolName, `{"id":""}`, CodeUnknownSchedule},
		{"main", CancelToolName, `{"id":"sch-1"}`, ""},
		{"main", ListToolName, `{}`, ""},
	} {
		o := r.Dispatch(context.Background(), call(tt.strand), tt.name, json.RawMessage(tt.args))
		if o.Code != tt.code {
			t.Errorf("%s %s: %+v, want %q", tt.name, tt.args, o, tt.code)
		}
		if o.IsError {
			if d, ok := o.Details.(RefusalDetails); ok && d.Reason == "" {
				t.Errorf("%s: empty reason", tt.name)
			}
		}
	}
	if len(f.got) != 0 {
		t.Errorf("the seam was asked %d times for refused requests", len(f.got))
	}
	f.err = errors.New("disk gone")
	o := r.Dispatch(context.Background(), call("main"), CreateToolName, json.RawMessage(`{"every_seconds":60,"message":"m"}`))
	if o.Code != CodeSchedulesUnavailable || !strings.Contains(o.Text, "disk gone") {
		t.Errorf("host failure: %+v", o)
	}
	f.err = Refuse(CodeScheduleLimit, "full")
	if o := r.Dispatch(context.Background(), call("main"), CreateToolName, json.RawMessage(`{"every_seconds":60,"message":"m"}`)); o.Code != CodeScheduleLimit {
		t.Errorf("seam refusal: %+v", o)
	}
	nilr := registry(t, nil)
	for _, n := range []string{CreateToolName, ListToolName, CancelToolName} {
		o := nilr.Dispatch(context.Background(), call("main"), n, json.RawMessage(`{"every_seconds":60,"message":"m","id":"x"}`))
		if n == CreateToolName {
			o = nilr.Dispatch(context.Background(), call("main"), n, json.RawMessage(`{"every_seconds":60,"message":"m"}`))
		} else if n == CancelToolName {
			o = nilr.Dispatch(context.Background(), call("main"), n, json.RawMessage(`{"id":"x"}`))
		} else {
			o = nilr.Dispatch(context.Background(), call("main"), n, json.RawMessage(`{}`))
		}
		if o.Code != CodeSchedulesUnavailable {
			t.Errorf("nil seam %s: %+v", n, o)
		}
	}
}

func TestDescriptionsStateTheHostsLimits(t *testing.T) {
	l := Limits{MinInterval: 5 * time.Minute, MaxLifetime: 48 * time.Hour, MaxFires: 77, MaxLive: 3}
	create := Tools(&fakeSchedules{limits: l})[0]
	for _, want := range []string{"300 to 172800", "most 172800", "at most 77", "at most 3 live"} {
		if !strings.Contains(create.Description, want) {
			t.Errorf("description %q lacks %q", create.Description, want)
		}
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(create.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"every_seconds", "cron", "utc_offset", "at", "in_seconds", "max_fires", "expires_after_s", "wake", "target", "message"} {
		if _, ok := schema.Properties[p]; !ok {
			t.Errorf("schema lacks %s", p)
		}
	}
	if !strings.Contains(string(schema.Properties["utc_offset"]), "not a time zone") {
		t.Errorf("utc_offset's doc does not say it is no time zone: %s", schema.Properties["utc_offset"])
	}
	total := 0
	for _, tl := range Tools(&fakeSchedules{limits: l}) {
		total += len(tl.Description) + len(tl.Schema)
	}
	t.Logf("the schedule tools cost %d bytes of description and schema", total)
	if total > maxSurfaceBytes {
		t.Errorf("the schedule tools cost %d bytes, past %d", total, maxSurfaceBytes)
	}
}

// maxSurfaceBytes bounds what the three tools cost the model. They are
// opt-in (plane.FamilyHost), outside the default plane's budget.
const maxSurfaceBytes = 2560

func TestListIsBounded(t *testing.T) {
	var rows []Row
	for i := range MaxListed + 5 {
		rows = append(rows, Row{ID: fmt.Sprint("sch-", i), Owner: "main", Target: "main", Message: strings.Repeat("x", 5000),
			Cadence: Cadence{Kind: CadenceInterval, EverySeconds: 60, Expires: now.Unix()}, Next: now})
	}
	o := registry(t, &fakeSchedules{listed: Listed{Schedules: rows, More: 1}}).Dispatch(context.Background(), call("main"), ListToolName, json.RawMessage(`{}`))
	d := o.Details.(ListDetails)
	if o.IsError || len(d.Schedules) != MaxListed || d.More != 6 || len(d.Schedules[0].Message) != MaxListedMessageBytes || d.Schedules[0].When == "" {
		t.Fatalf("%d rows, more %d, %.200q", len(d.Schedules), d.More, o.Text)
	}
	if !strings.Contains(o.Text, "6 more not shown") || len(o.Text) > MaxListed*(tool.MaxQuotedBytes+400) {
		t.Errorf("text is %d bytes: %.300q", len(o.Text), o.Text)
	}
}

// TestToolsRefuseBadInputWithOneCode: a value of the wrong type in any
// property, an unknown property and a non-object are refused in band
// with one code, and never reach the seam.
func TestToolsRefuseBadInputWithOneCode(t *testing.T) {
	f := &fakeSchedules{}
	r := registry(t, f)
	for _, tl := range Tools(f) {
		var schema struct {
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(tl.Schema, &schema); err != nil {
			t.Fatal(err)
		}
		bad := []string{`[1]`, `"x"`, `{"no_such_property":1}`}
		for name, p := range schema.Properties {
			wrong := `{"x":1}`
			if p.Type == "object" {
				wrong = `"x"`
			}
			bad = append(bad, fmt.Sprintf(`{%q:%s}`, name, wrong))
		}
		for _, args := range bad {
			o := r.Dispatch(context.Background(), call("main"), tl.Name, json.RawMessage(args))
			if !o.IsError || o.Code == "" || len(o.Text) > 4<<10 {
				t.Errorf("%s %s: %+v", tl.Name, args, o)
			}
		}
	}
	if len(f.got) != 0 {
		t.Errorf("bad input reached the seam %d times", len(f.got))
	}
}
