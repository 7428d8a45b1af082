package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/tool"
)

// door is a Door that records what reached it; woke makes Enqueue answer
// AckWoke, fail makes every call fail.
type door struct {
	interrupts, enqueues []string
	woke                 bool
	fail                 error
}

func (d *door) Interrupt(_ context.Context, primary, text string) (Ack, error) {
	if d.fail != nil {
		return Ack{}, d.fail
	}
	d.interrupts = append(d.interrupts, primary+":"+text)
	return Ack{Kind: AckDelivered, How: "interrupt"}, nil
}

func (d *door) Enqueue(_ context.Context, primary, text string) (Ack, error) {
	if d.fail != nil {
		return Ack{}, d.fail
	}
	d.enqueues = append(d.enqueues, primary+":"+text)
	if d.woke {
		return Ack{Kind: AckWoke, How: "wake", Nudges: 1}, nil
	}
	return Ack{Kind: AckQueued}, nil
}

// watches routes advisor "adv" to primary "main" and "adv2" to "other".
func watches(advisor string) (string, bool) {
	switch advisor {
	case "adv":
		return "main", true
	case "adv2":
		return "other", true
	}
	return "", false
}

func TestAdviseDecodeVerdict(t *testing.T) {
	long := strings.Repeat("x", MaxAdviceBytes+1)
	for _, tc := range []struct {
		kind, text string
		want       Verdict
		code       tool.Code
	}{
		{"quiet", "", Verdict{Kind: Quiet}, ""},
		{"quiet", "  \n", Verdict{Kind: Quiet}, ""},
		{"nudge", "run the tests", Verdict{Nudge, "run the tests"}, ""},
		{"block", "stop: wrong file", Verdict{Block, "stop: wrong file"}, ""},
		{"block", strings.Repeat("x", MaxAdviceBytes), Verdict{Block, strings.Repeat("x", MaxAdviceBytes)}, ""},
		{"quiet", "all good", Verdict{}, CodeQuietWithText},
		{"nudge", "", Verdict{}, CodeAdviceWithoutText},
		{"nudge", " \t", Verdict{}, CodeAdviceWithoutText},
		{"block", "", Verdict{}, CodeAdviceWithoutText},
		{"block", long, Verdict{}, CodeAdviceTooLong},
		{"nudge", "\xff", Verdict{}, CodeAdviceTooLong},
		{"shout", "hey", Verdict{}, CodeUnknownVerdict},
		{"", "", Verdict{}, CodeUnknownVerdict},
		{"Quiet", "", Verdict{}, CodeUnknownVerdict},
	} {
		t.Run(tc.kind+"/"+tc.text[:min(len(tc.text), 10)], func(t *testing.T) {
			v, err := DecodeVerdict(tc.kind, tc.text)
			if got := tool.CodeOf(err); got != tc.code {
				t.Fatalf("code %q, want %q (%v)", got, tc.code, err)
			}
			if v != tc.want {
				t.Fatalf("verdict %+v, want %+v", v, tc.want)
			}
		})
	}
}

func TestAdviseRenderAck(t *testing.T) {
	nudge, block := Verdict{Nudge, "n"}, Verdict{Block, "b"}
	for _, tc := range []struct {
		v     Verdict
		a     Ack
		wants []string
	}{
		{block, Ack{Kind: AckDelivered, How: "interrupt"}, []string{"delivered", "by interrupt"}},
		{nudge, Ack{Kind: AckQueued}, []string{"queued", "next stops"}},
		{nudge, Ack{Kind: AckWoke, How: "wake", Nudges: 3}, []string{"woke", "by wake", "3 queued nudges"}},
		{block, Ack{Kind: AckDowngraded, Reason: "cooldown"}, []string{"downgraded to a nudge", "NOT stopped", "cooldown"}},
		{nudge, Ack{Kind: AckDropped, Reason: "repeat"}, []string{"dropped", "nothing was sent", "repeat"}},
		{Verdict{Kind: Quiet}, Ack{Kind: AckAcknowledged}, []string{"quiet was acknowledged", "nothing was sent"}},
	} {
		t.Run(string(tc.a.Kind), func(t *testing.T) {
			got := renderAck(tc.v, tc.a)
			for _, w := range tc.wants {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		})
	}
}

// TestAdviseDowngradeIsNeverADelivery: a block inside the cooldown whose
// queue went out at once still answers downgraded, and its text claims
// neither a delivery nor a wake.
func TestAdviseDowngradeIsNeverADelivery(t *testing.T) {
	d := &door{woke: true}
	r, err := tool.NewRegistry(AdviseTool(NewGuard(d, watches, time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &tool.Call{Strand: "adv", Now: func() time.Time { return now }}
	first := r.Dispatch(context.Background(), c, AdviseToolName, json.RawMessage(`{"verdict":"block","text":"stop"}`))
	if first.IsError || first.Details.(AdviseDetails).Ack != AckDelivered {
		t.Fatalf("first block: %+v", first)
	}
	now = now.Add(59 * time.Second)
	second := r.Dispatch(context.Background(), c, AdviseToolName, json.RawMessage(`{"verdict":"block","text":"stop now"}`))
	det := second.Details.(AdviseDetails)
	if second.IsError || det.Ack != AckDowngraded {
		t.Fatalf("second block: %+v", second)
	}
	low := strings.ToLower(second.Text)
	if strings.Contains(low, "delivered") || strings.Contains(low, "woke") || !strings.Contains(second.Text, "NOT stopped") {
		t.Errorf("a downgrade reads as a delivery: %q", second.Text)
	}
	if !strings.Contains(det.Reason, "1m0s cooldown") || !strings.Contains(det.Reason, "went out at once") {
		t.Errorf("reason %q does not say the cooldown and the wake", det.Reason)
	}
	if len(d.interrupts) != 1 || len(d.enqueues) != 1 {
		t.Errorf("interrupts %v, enqueues %v", d.interrupts, d.enqueues)
	}
	now = now.Add(time.Second) // past the cooldown: a block goes through again
	if o := r.Dispatch(context.Background(), c, AdviseToolName, json.RawMessage(`{"verdict":"block","text":"third"}`)); o.Details.(AdviseDetails).Ack != AckDelivered {
		t.Errorf("block after the cooldown: %+v", o)
	}
}

// advice is an Advice answering a fixed Ack or error.
type advice struct {
	ack Ack
	err error
	got AdviceRequest
}

func (a *advice) Judge(_ context.Context, r AdviceRequest) (Ack, error) {
	a.got = r
	return a.ack, a.err
}

// TestAdviseCodes: every failure of advise carries its code, the strand
// judged is the call's whatever the arguments say, and a seam's Ack
// outside the vocabulary is refused, not rendered.
func TestAdviseCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Advice
		args string
		code tool.Code
	}{
		{"no seam", nil, `{"verdict":"quiet"}`, CodeAdviceUnavailable},
		{"quiet with text", &advice{}, `{"verdict":"quiet","text":"fine"}`, CodeQuietWithText},
		{"nudge without text", &advice{}, `{"verdict":"nudge"}`, CodeAdviceWithoutText},
		{"too long", &advice{}, fmt.Sprintf(`{"verdict":"nudge","text":%q}`, strings.Repeat("y", MaxAdviceBytes+1)), CodeAdviceTooLong},
		{"unknown verdict", &advice{}, `{"verdict":"shout","text":"x"}`, tool.CodeInvalidArguments},
		{"strand argument", &advice{}, `{"verdict":"quiet","strand":"main"}`, tool.CodeUnknownProperty},
		{"seam failed", &advice{err: errors.New("gone")}, `{"verdict":"nudge","text":"x"}`, CodeAdviceUnavailable},
		{"seam refused", &advice{err: refuse(CodeAdviceWithoutText, "x")}, `{"verdict":"nudge","text":"x"}`, CodeAdviceWithoutText},
		{"ack unknown", &advice{ack: Ack{Kind: "sent"}}, `{"verdict":"nudge","text":"x"}`, CodeAdviceUnavailable},
		{"downgrade without reason", &advice{ack: Ack{Kind: AckDowngraded}}, `{"verdict":"block","text":"x"}`, CodeAdviceUnavailable},
		{"woke without nudges", &advice{ack: Ack{Kind: AckWoke}}, `{"verdict":"nudge","text":"x"}`, CodeAdviceUnavailable},
		{"no primary", NewGuard(&door{}, watches, 0), `{"verdict":"nudge","text":"x"}`, CodeAdviceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tool.NewRegistry(AdviseTool(tc.a))
			if err != nil {
				t.Fatal(err)
			}
			o := r.Dispatch(context.Background(), &tool.Call{Strand: "lonely"}, AdviseToolName, json.RawMessage(tc.args))
			if !o.IsError || o.Code != tc.code {
				t.Fatalf("outcome %+v, want code %s", o, tc.code)
			}
		})
	}
	a := &advice{ack: Ack{Kind: AckQueued}}
	r, _ := tool.NewRegistry(AdviseTool(a))
	o := r.Dispatch(context.Background(), &tool.Call{Strand: "adv"}, AdviseToolName, json.RawMessage(`{"verdict":"nudge","text":"x"}`))
	if o.IsError || a.got.Advisor != "adv" || a.got.Verdict != (Verdict{Nudge, "x"}) || a.got.At.IsZero() {
		t.Errorf("outcome %+v, request %+v", o, a.got)
	}
}

func TestAdviseDeclaration(t *testing.T) {
	tl := AdviseTool(nil)
	if tl.Replay != tool.ReplayNever || tl.Mode != tool.Exclusive || tl.ReadOnly {
		t.Errorf("advise: replay %v, mode %v, read-only %v", tl.Replay, tl.Mode, tl.ReadOnly)
	}
	if !strings.Contains(tl.Description, fmt.Sprint(MaxAdviceBytes)) || !strings.Contains(string(tl.Schema), fmt.Sprint(MaxAdviceBytes)) {
		t.Errorf("the bound is not stated: %s %s", tl.Description, tl.Schema)
	}
	if strings.Contains(tl.Description, "within") {
		t.Errorf("a seam stating no cooldown gets one described: %s", tl.Description)
	}
	if d := AdviseTool(NewGuard(&door{}, watches, 90*time.Second)).Description; !strings.Contains(d, "within 1m30s") {
		t.Errorf("the guard's cooldown is not stated: %s", d)
	}
}

// TestGuardMatchesModel: under any sequence of verdicts from two advisors
// watching two primaries, at any times, the Guard answers what a simple
// model of the emission guard says, and the Door sees exactly the
// verdicts the model lets through, by the door the model names.
func TestGuardMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		const cooldown = time.Minute
		d := &door{}
		g := NewGuard(d, watches, cooldown)
		type primary struct {
			blocked bool
			last    time.Time
			given   map[string]bool
		}
		model := map[string]*primary{"main": {given: map[string]bool{}}, "other": {given: map[string]bool{}}}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := range steps {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(3*cooldown/2)).Draw(rt, "advance")))
			advisor := rapid.SampledFrom([]string{"adv", "adv2"}).Draw(rt, "advisor")
			kind := rapid.SampledFrom([]VerdictKind{Quiet, Nudge, Block}).Draw(rt, "kind")
			text := ""
			if kind != Quiet {
				text = rapid.SampledFrom([]string{"a", "b", "c", "d", "e"}).Draw(rt, "text")
			}
			d.woke = rapid.Bool().Draw(rt, "woke")
			ints, enqs := len(d.interrupts), len(d.enqueues)
			ack, err := g.Judge(context.Background(), AdviceRequest{Advisor: advisor, Verdict: Verdict{kind, text}, At: now})
			if err != nil {
				rt.Fatalf("step %d: %v", i, err)
			}
			p := model[map[string]string{"adv": "main", "adv2": "other"}[advisor]]
			want, door := AckAcknowledged, ""
			switch {
			case kind == Quiet:
			case p.given[text]:
				want = AckDropped
			case kind == Block && p.blocked && now.Sub(p.last) < cooldown:
				want, door = AckDowngraded, "enqueue"
			case kind == Block:
				want, door = AckDelivered, "interrupt"
				p.blocked, p.last = true, now
			default:
				want, door = AckQueued, "enqueue"
				if d.woke {
					want = AckWoke
				}
			}
			if kind != Quiet && want != AckDropped {
				p.given[text] = true
			}
			if ack.Kind != want {
				rt.Fatalf("step %d: %s %s %q at %v: ack %+v, want %s", i, advisor, kind, text, now, ack, want)
			}
			gotDoor := ""
			switch {
			case len(d.interrupts) > ints && len(d.enqueues) == enqs:
				gotDoor = "interrupt"
			case len(d.enqueues) > enqs && len(d.interrupts) == ints:
				gotDoor = "enqueue"
			case len(d.enqueues) > enqs || len(d.interrupts) > ints:
				gotDoor = "both"
			}
			if gotDoor != door {
				rt.Fatalf("step %d: door %q, want %q", i, gotDoor, door)
			}
			if err := ack.check(); err != nil {
				rt.Fatalf("step %d: the guard answered a malformed ack %+v: %v", i, ack, err)
			}
		}
	})
}

func TestGuardDoorFailure(t *testing.T) {
	d := &door{fail: errors.New("primary gone")}
	g := NewGuard(d, watches, 0)
	if g.Cooldown() != DefaultBlockCooldown {
		t.Errorf("cooldown %v, want %v", g.Cooldown(), DefaultBlockCooldown)
	}
	now := time.Now()
	if _, err := g.Judge(context.Background(), AdviceRequest{Advisor: "adv", Verdict: Verdict{Block, "x"}, At: now}); err == nil {
		t.Fatal("a failed door answered no error")
	}
	d.fail = nil
	// The failed block was neither remembered nor started the cooldown.
	ack, err := g.Judge(context.Background(), AdviceRequest{Advisor: "adv", Verdict: Verdict{Block, "x"}, At: now})
	if err != nil || ack.Kind != AckDelivered {
		t.Errorf("retry: %+v, %v", ack, err)
	}
}
