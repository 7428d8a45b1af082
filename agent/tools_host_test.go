package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
)

// gauge is a Gauge answering a fixed report for the strand it was asked
// about.
type gauge struct {
	r     ContextReport
	err   error
	asked string
}

func (g *gauge) Report(_ context.Context, strand string) (ContextReport, error) {
	g.asked = strand
	return g.r, g.err
}

func TestContextRemainingRender(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     ContextReport
		wants []string
	}{
		{"first window, no checkpoint", ContextReport{Window: 1, Size: 200000, Used: 12000, Notes: 2},
			[]string{"Window 1 (0 compactions", "12000 of 200000 tokens in use, 188000 left", "compaction is off", "2 notes"}},
		{"third window, checkpoint", ContextReport{Window: 3, Size: 100000, Used: 70000, Boundary: Boundary{At: 80000, KeepRecent: 20000}},
			[]string{"Window 3 (2 compactions", "30000 left", "compacts at 80000 tokens, keeping the newest 20000", "0 notes"}},
		{"over the window", ContextReport{Window: 1, Size: 1000, Used: 1200},
			[]string{"1200 of 1000 tokens in use, 0 left"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := renderContext(tc.r)
			for _, w := range tc.wants {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		})
	}
}

func TestContextRemainingTool(t *testing.T) {
	tl := ContextTool(nil)
	if !tl.ReadOnly || tl.Replay != tool.ReplaySafe || tl.Mode != tool.Concurrent || tl.Requirements != nil {
		t.Errorf("context_remaining: read-only %v, replay %v, mode %v, requirements set %v", tl.ReadOnly, tl.Replay, tl.Mode, tl.Requirements != nil)
	}
	good := ContextReport{Window: 2, Size: 1000, Used: 10, Notes: 1}
	for _, tc := range []struct {
		name string
		g    Gauge
		args string
		code tool.Code
	}{
		{"answers", &gauge{r: good}, `{}`, ""},
		{"no seam", nil, `{}`, CodeContextUnavailable},
		{"seam failed", &gauge{err: errors.New("gone")}, `{}`, CodeContextUnavailable},
		{"window zero", &gauge{r: ContextReport{Size: 1}}, `{}`, CodeContextUnavailable},
		{"no size", &gauge{r: ContextReport{Window: 1}}, `{}`, CodeContextUnavailable},
		{"negative used", &gauge{r: ContextReport{Window: 1, Size: 1, Used: -1}}, `{}`, CodeContextUnavailable},
		{"strand argument", &gauge{r: good}, `{"strand":"main"}`, tool.CodeUnknownProperty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tool.NewRegistry(ContextTool(tc.g))
			if err != nil {
				t.Fatal(err)
			}
			o := r.Dispatch(context.Background(), &tool.Call{Strand: "sub:main/x-1"}, ContextToolName, json.RawMessage(tc.args))
			if o.IsError != (tc.code != "") || o.Code != tc.code {
				t.Fatalf("outcome %+v, want code %q", o, tc.code)
			}
			if g, ok := tc.g.(*gauge); ok && tc.code == "" {
				if g.asked != "sub:main/x-1" || o.Details != good {
					t.Errorf("asked %q, details %+v", g.asked, o.Details)
				}
			}
		})
	}
}

// proposals is a Proposals answering a fixed receipt or error.
type proposals struct {
	config string
	r      Proposed
	err    error
	got    Proposal
}

func (p *proposals) Configuration() string { return p.config }
func (p *proposals) Propose(_ context.Context, pr Proposal) (Proposed, error) {
	p.got = pr
	return p.r, p.err
}

func TestProposeDescription(t *testing.T) {
	with := ProposeTool(&proposals{config: "/etc/loom/config.toml"})
	without := ProposeTool(&proposals{})
	if !strings.Contains(with.Description, "/etc/loom/config.toml") || !strings.Contains(string(with.Schema), `"configuration"`) {
		t.Errorf("the configuration is not named: %s %s", with.Description, with.Schema)
	}
	if strings.Contains(without.Description, "configuration") || strings.Contains(string(without.Schema), "configuration") {
		t.Errorf("a host without a configuration speaks of one: %s %s", without.Description, without.Schema)
	}
	for _, n := range []int{MaxProposalBytes, MaxProposalReasonBytes, MaxProposalsQueued} {
		if !strings.Contains(without.Description, fmt.Sprint(n)) {
			t.Errorf("the description does not state %d: %s", n, without.Description)
		}
	}
	if with.Replay != tool.ReplayNever || with.Mode != tool.Exclusive || with.ReadOnly {
		t.Errorf("propose: replay %v, mode %v", with.Replay, with.Mode)
	}
}

func TestProposeCodes(t *testing.T) {
	long := strings.Repeat("x", MaxProposalBytes+1)
	for _, tc := range []struct {
		name string
		p    Proposals
		args string
		code tool.Code
	}{
		{"queued", &proposals{r: Proposed{ID: "proposal-1", Pending: 1}}, `{"content":"rule","reason":"why"}`, ""},
		{"no seam", nil, `{"content":"rule","reason":"why"}`, CodeProposalsUnavailable},
		{"empty content", &proposals{}, `{"content":"","reason":"why"}`, CodeProposalOutOfBounds},
		{"long content", &proposals{}, fmt.Sprintf(`{"content":%q,"reason":"why"}`, long), CodeProposalOutOfBounds},
		{"blank reason", &proposals{}, `{"content":"rule","reason":" "}`, CodeProposalOutOfBounds},
		{"long reason", &proposals{}, fmt.Sprintf(`{"content":"rule","reason":%q}`, strings.Repeat("r", MaxProposalReasonBytes+1)), CodeProposalOutOfBounds},
		{"configuration without one", &proposals{}, `{"target":"configuration","content":"x","reason":"why"}`, tool.CodeInvalidArguments},
		{"path argument", &proposals{}, `{"path":"/etc/passwd","content":"x","reason":"why"}`, tool.CodeUnknownProperty},
		{"seam failed", &proposals{err: errors.New("disk")}, `{"content":"rule","reason":"why"}`, CodeProposalsUnavailable},
		{"queue full", &proposals{err: refuse(CodeProposalQueueFull, "full")}, `{"content":"rule","reason":"why"}`, CodeProposalQueueFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tool.NewRegistry(ProposeTool(tc.p))
			if err != nil {
				t.Fatal(err)
			}
			o := r.Dispatch(context.Background(), &tool.Call{Strand: "main"}, ProposeToolName, json.RawMessage(tc.args))
			if o.IsError != (tc.code != "") || o.Code != tc.code {
				t.Fatalf("outcome %+v, want code %q", o, tc.code)
			}
			if p, ok := tc.p.(*proposals); ok && tc.code == "" {
				if p.got.Strand != "main" || p.got.Target != TargetRules || !strings.Contains(o.Text, "proposal-1") {
					t.Errorf("proposal %+v, outcome %q", p.got, o.Text)
				}
			}
		})
	}
}

func TestProposalQueue(t *testing.T) {
	dir := t.TempDir()
	rules, config := filepath.Join(dir, "RULES.md"), filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte("a = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	q := NewProposalQueue(rules, config, func(tg Target, b []byte) error {
		if tg == TargetConfiguration && !strings.Contains(string(b), "=") {
			return errors.New("not a setting")
		}
		return nil
	})
	r, err := tool.NewRegistry(ProposeTool(q))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &tool.Call{Strand: "main", Now: func() time.Time { return now }}
	propose := func(args string) tool.Outcome {
		return r.Dispatch(context.Background(), c, ProposeToolName, json.RawMessage(args))
	}
	for _, tc := range []struct {
		args string
		code tool.Code
	}{
		{`{"content":"be brief\n","reason":"the user asked"}`, ""},
		{`{"target":"configuration","content":"a = 2\n","reason":"more"}`, ""},
		{`{"target":"configuration","content":"a = 1\n","reason":"same"}`, CodeProposalUnchanged},
		{`{"target":"configuration","content":"nonsense","reason":"bad"}`, CodeProposalInvalid},
	} {
		if o := propose(tc.args); o.Code != tc.code {
			t.Errorf("%s: %+v, want %q", tc.args, o, tc.code)
		}
	}
	list := q.List()
	if len(list) != 2 || list[0].ID != "proposal-1" || list[1].Target != TargetConfiguration || !list[0].At.Equal(now) {
		t.Fatalf("list %+v", list)
	}
	if err := q.Accept(list[0].ID); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(rules); string(b) != "be brief\n" {
		t.Errorf("rules %q", b)
	}
	if err := q.Accept(list[0].ID); tool.CodeOf(err) != CodeUnknownProposal {
		t.Errorf("accept twice: %v", err)
	}
	if err := q.Reject("proposal-9"); tool.CodeOf(err) != CodeUnknownProposal {
		t.Errorf("reject unknown: %v", err)
	}
	// The configuration changed under the proposal: accept refuses it.
	if err := os.WriteFile(config, []byte("a = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := q.Accept(list[1].ID); tool.CodeOf(err) != CodeProposalStale {
		t.Errorf("stale accept: %v", err)
	}
	if b, _ := os.ReadFile(config); string(b) != "a = 3\n" || len(q.List()) != 0 {
		t.Errorf("config %q, pending %d", b, len(q.List()))
	}
	if fi, _ := os.Stat(rules); fi.Mode().Perm() != 0o644 {
		t.Errorf("new rules mode %v", fi.Mode())
	}
	// The queue holds MaxProposalsQueued, then refuses.
	for i := range MaxProposalsQueued {
		if o := propose(fmt.Sprintf(`{"content":"rule %d","reason":"fill"}`, i)); o.IsError {
			t.Fatalf("proposal %d: %+v", i, o)
		}
	}
	if o := propose(`{"content":"one more","reason":"fill"}`); o.Code != CodeProposalQueueFull {
		t.Errorf("past the depth: %+v", o)
	}
	if err := q.Reject(q.List()[0].ID); err != nil {
		t.Fatal(err)
	}
	if o := propose(`{"content":"one more","reason":"fill"}`); o.IsError {
		t.Errorf("after a reject: %+v", o)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("staging files left behind: %v", entries)
	}
	noConfig := NewProposalQueue(rules, "", nil)
	if _, err := noConfig.Propose(context.Background(), Proposal{Target: TargetConfiguration, Content: "x", Reason: "y"}); tool.CodeOf(err) != CodeNoConfiguration {
		t.Errorf("configuration without one: %v", err)
	}
}

// maxHostSurfaceBytes bounds what advise, context_remaining and propose
// together cost the model in description and schema, the configuration
// named by a path of maxHostSurfacePath bytes. They are an opt-in family
// (plane.FamilyHost), outside the default plane's budget.
const (
	maxHostSurfaceBytes = 1536
	maxHostSurfacePath  = 100
)

func TestHostToolsSurface(t *testing.T) {
	path := "/" + strings.Repeat("c", maxHostSurfacePath-1)
	total := 0
	for _, tl := range []tool.Tool{AdviseTool(NewGuard(nil, nil, 0)), ContextTool(nil), ProposeTool(&proposals{config: path})} {
		total += len(tl.Description) + len(tl.Schema)
		t.Logf("%-18s description %4d + schema %4d", tl.Name, len(tl.Description), len(tl.Schema))
	}
	if total > maxHostSurfaceBytes {
		t.Errorf("the host tools cost %d bytes, past %d", total, maxHostSurfaceBytes)
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(ProposeTool(&proposals{config: path}).Schema, &schema); err != nil {
		t.Fatal(err)
	}
	for name := range schema.Properties {
		if name != "target" && name != "content" && name != "reason" {
			t.Errorf("propose takes %q; it names its file by target only", name)
		}
	}
}
