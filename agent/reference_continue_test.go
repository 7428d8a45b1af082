package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// transcriptOf is what a Runner shows its model for t: each earlier run's
// prompt and report, then the new prompt. It is the contract Turn.Earlier
// states, in the shape a host renders it.
func transcriptOf(t Turn) []string {
	var m []string
	for _, e := range t.Earlier {
		m = append(m, "user: "+e.Prompt, "assistant: "+e.Report)
	}
	return append(m, "user: "+t.Prompt)
}

// scriptedModel answers from the transcript alone: asked for the
// codeword, it finds the one it was told earlier in the transcript, or
// says it does not know.
func scriptedModel(transcript []string) string {
	last := transcript[len(transcript)-1]
	if !strings.Contains(last, "What was the codeword?") {
		return "noted"
	}
	for _, m := range transcript[:len(transcript)-1] {
		if _, word, ok := strings.Cut(m, "The codeword is "); ok {
			return "The codeword was " + strings.TrimSuffix(strings.Fields(word)[0], ".")
		}
	}
	return "I do not know the codeword"
}

// scripted is a Runner over scriptedModel, shown what shown makes of the
// turn.
func scripted(shown func(Turn) []string) Runner {
	return RunnerFunc(func(_ context.Context, t Turn) (string, error) {
		return scriptedModel(shown(t)), nil
	})
}

func TestContinuedChildAnswersAboutItsFirstRun(t *testing.T) {
	cases := []struct {
		name  string
		shown func(Turn) []string
		want  string
	}{
		{"earlier runs shown", transcriptOf, "The codeword was heron"},
		// The control: a runner shown only the new prompt cannot answer,
		// so the case above fails if the Agency stops passing Earlier.
		{"control: new prompt only", func(t Turn) []string { return []string{"user: " + t.Prompt} }, "I do not know the codeword"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAgency(scripted(tc.shown), Options{})
			defer a.Close()
			c := root("main", 1)
			sp, err := a.Spawn(bg, c, SpawnRequest{Purpose: "keep a word", Prompt: "The codeword is heron. Say noted."})
			if err != nil {
				t.Fatal(err)
			}
			if w := waitOne(t, a, c, sp.Handle); w.Report != "noted" {
				t.Fatalf("first run: %+v", w)
			}
			d, err := a.Send(bg, c, SendRequest{To: sp.Handle.Strand, Message: "What was the codeword?"})
			if err != nil || d.Kind != Started {
				t.Fatalf("continue: %+v, %v", d, err)
			}
			if w := waitOne(t, a, c, d.Handle); w.Report != tc.want {
				t.Fatalf("continued run reported %q, want %q", w.Report, tc.want)
			}
		})
	}
}

func TestEarlierRecordsInboxAndReports(t *testing.T) {
	turns := make(chan Turn, 4)
	release := make(chan struct{})
	runner := RunnerFunc(func(ctx context.Context, t Turn) (string, error) {
		turns <- t
		if t.Operation == "run-1" {
			<-release
			t.Inbox()
			return "first report", nil
		}
		return "second report", nil
	})
	a := NewAgency(runner, Options{})
	defer a.Close()
	c := root("main", 1)
	sp := mustSpawn(t, a, c, "x")
	if first := <-turns; len(first.Earlier) != 0 || first.EarlierOmitted != 0 {
		t.Fatalf("a first run has no earlier runs: %+v", first.Earlier)
	}
	if _, err := a.Send(bg, c, SendRequest{To: sp.Handle.Strand, Message: "and this too"}); err != nil {
		t.Fatal(err)
	}
	close(release)
	waitOne(t, a, c, sp.Handle)
	d, err := a.Send(bg, c, SendRequest{To: sp.Handle.Strand, Message: "next"})
	if err != nil {
		t.Fatal(err)
	}
	second := <-turns
	want := []Exchange{{Operation: "run-1", Prompt: "work on x\n\nand this too", Report: "first report", State: Completed}}
	if fmt.Sprint(second.Earlier) != fmt.Sprint(want) || second.EarlierOmitted != 0 {
		t.Fatalf("earlier %+v (omitted %d), want %+v", second.Earlier, second.EarlierOmitted, want)
	}
	waitOne(t, a, c, d.Handle)
}

func TestEarlierBound(t *testing.T) {
	big := strings.Repeat("p", maxExchangeBytes+10)
	cases := []struct {
		name        string
		runs        []*run
		wantKept    int
		wantOmitted int
		wantCut     bool
	}{
		{"none", nil, 0, 0, false},
		{"small runs all kept", []*run{{op: "run-1", prompt: "a", report: "b"}, {op: "run-2", prompt: "c", report: "d"}}, 2, 0, false},
		{"a long report is cut", []*run{{op: "run-1", prompt: "a", report: big}}, 1, 0, true},
		// Each run is maxExchangeBytes of prompt and as much of report: two
		// fit in MaxEarlierBytes, the older ones are counted out.
		{"newest kept, oldest omitted", func() []*run {
			var rs []*run
			for i := range 5 {
				rs = append(rs, &run{op: fmt.Sprint("run-", i+1), prompt: big[:maxExchangeBytes], report: big})
			}
			return rs
		}(), 2, 3, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, omitted := earlierOf(tc.runs)
			if len(got) != tc.wantKept || omitted != tc.wantOmitted {
				t.Fatalf("kept %d omitted %d, want %d and %d", len(got), omitted, tc.wantKept, tc.wantOmitted)
			}
			total := 0
			for i, e := range got {
				total += len(e.Prompt) + len(e.Report)
				if len(e.Report) > maxExchangeBytes || e.Cut != tc.wantCut {
					t.Fatalf("exchange %d: report %d bytes, cut %v", i, len(e.Report), e.Cut)
				}
				if want := tc.runs[omitted+i].op; e.Operation != want {
					t.Fatalf("exchange %d is %s, want %s (oldest first)", i, e.Operation, want)
				}
			}
			if total > MaxEarlierBytes {
				t.Fatalf("%d bytes, over %d", total, MaxEarlierBytes)
			}
		})
	}
}
