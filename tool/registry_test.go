package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

type echoArgs struct {
	Say   string `json:"say" jsonschema:"what to echo"`
	Times int    `json:"times,omitempty"`
}

func echoTool(name string) Tool {
	return Typed(Tool{Name: name, Description: "echo", PromptSnippet: name + ": echoes"},
		func(_ context.Context, _ *Call, a echoArgs) Outcome {
			return Success(strings.Repeat(a.Say, max(a.Times, 1)))
		})
}

func TestRegisterRefusals(t *testing.T) {
	good := echoTool("echo")
	noRun := good
	noRun.Run = nil
	badSchema := good
	badSchema.Name = "bad"
	badSchema.Schema = json.RawMessage(`{"type":"string"}`)
	unnamed := good
	unnamed.Name = ""
	cases := []struct {
		name string
		tool Tool
		code Code
	}{
		{"empty name", unnamed, "empty_name"},
		{"no run", noRun, "no_run"},
		{"bad schema", badSchema, "bad_schema"},
		{"duplicate", good, "duplicate_name"},
	}
	r, err := NewRegistry(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var re *RegisterError
			if err := r.Register(tc.tool); !errors.As(err, &re) || re.Code != tc.code {
				t.Fatalf("Register = %v, want code %s", err, tc.code)
			}
		})
	}
}

func TestRegistryOrders(t *testing.T) {
	r, err := NewRegistry(echoTool("zeta"), echoTool("alpha"), echoTool("mid"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alpha", "mid", "zeta"}, r.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	var order []string
	for _, tl := range r.Registered() {
		order = append(order, tl.Name)
	}
	if diff := cmp.Diff([]string{"zeta", "alpha", "mid"}, order); diff != "" {
		t.Errorf("Registered (-want +got):\n%s", diff)
	}
	snips := r.Snippets()
	if len(snips) != 3 || snips[0].Name != "zeta" || snips[0].Line != "zeta: echoes" {
		t.Errorf("Snippets = %+v", snips)
	}
}

func TestSnippetsOmitEmpty(t *testing.T) {
	quiet := echoTool("quiet")
	quiet.PromptSnippet = ""
	r, _ := NewRegistry(echoTool("loud"), quiet)
	if s := r.Snippets(); len(s) != 1 || s[0].Name != "loud" {
		t.Errorf("Snippets = %+v, want only loud", s)
	}
	if out := r.Dispatch(context.Background(), nil, "quiet", json.RawMessage(`{"say":"x"}`)); out.IsError || out.Text != "x" {
		t.Errorf("a tool without snippet must stay callable: %+v", out)
	}
}

func TestDeclarations(t *testing.T) {
	w := echoTool("w")
	w.Replay, w.Mode = ReplayNever, Exclusive
	r, _ := NewRegistry(echoTool("r"), w)
	d := r.Declarations()
	if got, ok := d.Declared("w"); !ok || got != (Declaration{ReplayNever, Exclusive}) {
		t.Errorf("Declared(w) = %+v, %v", got, ok)
	}
	if got, ok := d.Declared("r"); !ok || got != (Declaration{ReplaySafe, Concurrent}) {
		t.Errorf("Declared(r) = %+v, %v", got, ok)
	}
	r.Register(echoTool("later"))
	if _, ok := d.Declared("later"); ok {
		t.Error("a projection must not change after later registrations")
	}
}

func TestDispatchIsTotal(t *testing.T) {
	boom := Typed(Tool{Name: "boom"}, func(context.Context, *Call, struct{}) Outcome { panic("kaboom") })
	r, _ := NewRegistry(echoTool("echo"), boom)
	ctx := context.Background()

	out := r.Dispatch(ctx, nil, "nope", nil)
	if !out.IsError || out.Details != nil || !strings.Contains(out.Text, "boom, echo") {
		t.Errorf("unknown tool: %+v", out)
	}
	out = r.Dispatch(ctx, nil, "boom", nil)
	if !out.IsError || !strings.Contains(out.Text, "kaboom") {
		t.Errorf("panic: %+v", out)
	}
	if d, ok := out.Details.(PanicDetails); !ok || out.Code != CodeToolPanicked || d.Stack == "" {
		t.Errorf("panic details: %#v", out.Details)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if out := r.Dispatch(cctx, nil, "echo", json.RawMessage(`{"say":"x"}`)); !out.IsError {
		t.Errorf("cancelled context must not run the tool: %+v", out)
	}
}

func TestArguments(t *testing.T) {
	r, _ := NewRegistry(echoTool("echo"))
	cases := []struct {
		name, args string
		code       Code // "" means success
		mention    []string
	}{
		{"ok", `{"say":"hi"}`, "", nil},
		{"optional given", `{"say":"hi","times":2}`, "", nil},
		{"unknown property names the known ones", `{"say":"hi","tiems":2}`, "unknown_property", []string{`"tiems"`, "say, times"}},
		{"missing required", `{}`, "invalid_arguments", []string{"say"}},
		{"null means empty object", `null`, "invalid_arguments", []string{"say"}},
		{"wrong type", `{"say":3}`, "invalid_arguments", []string{"say"}},
		{"not an object", `[1,2]`, "arguments_not_object", []string{"one JSON object"}},
		{"broken json", `{"say":`, "arguments_not_object", []string{"not valid JSON"}},
		{"null property", `{"say":null}`, "invalid_arguments", []string{`"say" is null`, "omit it", "string"}},
		{"number out of range", `{"say":"x","times":1e309}`, "invalid_arguments", []string{`"times"`, "1e309", "does not fit"}},
		{"integer overflow", `{"say":"x","times":1e30}`, "invalid_arguments", []string{"times", "does not fit"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := r.Dispatch(context.Background(), nil, "echo", json.RawMessage(tc.args))
			if tc.code == "" {
				if out.IsError {
					t.Fatalf("unexpected error: %s", out.Text)
				}
				return
			}
			d, ok := out.Details.(ArgErrorDetails)
			if !out.IsError || !ok || out.Code != tc.code || (out.Code == CodeUnknownProperty && len(d.Unknown) == 0) {
				t.Fatalf("got %+v, want code %s", out, tc.code)
			}
			for _, m := range tc.mention {
				if !strings.Contains(out.Text, m) {
					t.Errorf("text %q does not mention %q", out.Text, m)
				}
			}
		})
	}
}

// TestArgumentRefusalsAreBounded: a huge value in the wrong place never
// comes back whole; the refusal still names the property.
func TestArgumentRefusalsAreBounded(t *testing.T) {
	r, _ := NewRegistry(echoTool("echo"))
	huge := strings.Repeat("z", 1<<20)
	for name, args := range map[string]string{
		"wrong type":     `{"say":["` + huge + `"]}`,
		"long number":    `{"say":"x","times":1` + strings.Repeat("0", 1<<20) + `}`,
		"unknown tool":   "",
		"broken json":    `{"say":"` + huge,
		"wrong int type": `{"say":"x","times":"` + huge + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			tool := "echo"
			if args == "" {
				tool, args = huge, "{}"
			}
			out := r.Dispatch(context.Background(), nil, tool, json.RawMessage(args))
			if !out.IsError || out.Code == "" {
				t.Fatalf("accepted: %.200s", out.Text)
			}
			if len(out.Text) > 2*MaxReasonBytes {
				t.Errorf("answer is %d bytes: %.300s…", len(out.Text), out.Text)
			}
		})
	}
}

func TestArgumentsTooLarge(t *testing.T) {
	r, _ := NewRegistry(echoTool("echo"))
	at := `{"say":"` + strings.Repeat("a", MaxArgumentBytes-10) + `"}`
	if out := r.Dispatch(context.Background(), nil, "echo", json.RawMessage(at)); out.IsError {
		t.Fatalf("arguments of exactly the bound refused: %.200s", out.Text)
	}
	over := `{"say":"` + strings.Repeat("a", MaxArgumentBytes-9) + `"}`
	out := r.Dispatch(context.Background(), nil, "echo", json.RawMessage(over))
	if _, ok := out.Details.(ArgErrorDetails); !ok || out.Code != CodeArgumentsTooLarge {
		t.Fatalf("one byte past the bound: %+v", out.Details)
	}
}

func TestSchemaComesFromTheStruct(t *testing.T) {
	var s struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
		Additional *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(echoTool("echo").Schema, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || !cmp.Equal(s.Required, []string{"say"}) || len(s.Properties) != 2 {
		t.Errorf("schema = %+v", s)
	}
	for _, tl := range FileTools() {
		if len(tl.Schema) == 0 {
			t.Errorf("%s has no schema", tl.Name)
		}
	}
}

// countingTool is a tool that records each run, so a test can tell a
// refused call from one that ran.
func countingTool(name string, runs *atomic.Int64) Tool {
	return Typed(Tool{Name: name, Description: "counts"}, func(context.Context, *Call, struct{}) Outcome {
		runs.Add(1)
		return Success("ran " + name)
	})
}

// TestDispatchGate: a gated registry runs a call only for a strand that
// holds the tool; a refusal names the tool, the strand and the held tools
// (bounded), and the tool never runs. No gate, or a gate removed, means
// every strand holds every tool.
func TestDispatchGate(t *testing.T) {
	t.Parallel()
	held := map[string][]string{
		"main":  nil, // every tool
		"child": {"read"},
		"none":  {},
	}
	gate := func(_ context.Context, strand, tool string) bool {
		tools, ok := held[strand]
		return ok && (tools == nil || slices.Contains(tools, tool))
	}
	cases := []struct {
		name     string
		gate     HoldsFunc
		strand   string
		tool     string
		ran      bool
		wantHeld []string
	}{
		{"no gate runs anything", nil, "child", "bash", true, nil},
		{"every tool held", gate, "main", "bash", true, nil},
		{"held tool", gate, "child", "read", true, nil},
		{"tool not held", gate, "child", "bash", false, []string{"read"}},
		{"strand holding nothing", gate, "none", "read", false, []string{}},
		{"unknown strand fails closed", gate, "stranger", "read", false, []string{}},
		{"empty strand fails closed", gate, "", "read", false, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var runs atomic.Int64
			r, err := NewRegistry(countingTool("bash", &runs), countingTool("read", &runs))
			if err != nil {
				t.Fatal(err)
			}
			r.SetHolds(tc.gate)
			out := r.Dispatch(context.Background(), &Call{Strand: tc.strand}, tc.tool, json.RawMessage(`{}`))
			if got := runs.Load() == 1; got != tc.ran || out.IsError == tc.ran {
				t.Fatalf("ran=%v (outcome %+v), want ran=%v", got, out, tc.ran)
			}
			if tc.ran {
				return
			}
			d, ok := out.Details.(NotHeldDetails)
			if !ok || out.Code != CodeToolNotHeld || d.Tool != tc.tool || d.Strand != tc.strand || !slices.Equal(d.Held, tc.wantHeld) {
				t.Fatalf("details %#v, want tool_not_held for %s/%q holding %v", out.Details, tc.tool, tc.strand, tc.wantHeld)
			}
			for _, m := range append([]string{tc.tool, fmt.Sprintf("%q", tc.strand)}, tc.wantHeld...) {
				if !strings.Contains(out.Text, m) {
					t.Errorf("refusal %q does not mention %q", out.Text, m)
				}
			}
		})
	}
}

// TestDispatchGateUnknownAndRemoved: an unknown tool stays "unknown"
// under a gate, and SetHolds(nil) lifts the gate.
func TestDispatchGateUnknownAndRemoved(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	r, _ := NewRegistry(countingTool("bash", &runs))
	r.SetHolds(func(context.Context, string, string) bool { return false })
	if out := r.Dispatch(context.Background(), &Call{Strand: "s"}, "nope", nil); !out.IsError || out.Details != nil || !strings.Contains(out.Text, "unknown tool") {
		t.Fatalf("unknown tool under a gate: %+v", out)
	}
	if out := r.Dispatch(context.Background(), &Call{Strand: "s"}, "bash", json.RawMessage(`{}`)); !out.IsError || runs.Load() != 0 {
		t.Fatalf("gate closed: %+v, %d runs", out, runs.Load())
	}
	r.SetHolds(nil)
	if out := r.Dispatch(context.Background(), &Call{Strand: "s"}, "bash", json.RawMessage(`{}`)); out.IsError || runs.Load() != 1 {
		t.Fatalf("gate removed: %+v, %d runs", out, runs.Load())
	}
}

// TestDispatchGateListIsBounded: a refusal lists at most maxHeldListed
// held tools and counts the rest.
func TestDispatchGateListIsBounded(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	var tools []Tool
	for i := range maxHeldListed + 5 {
		tools = append(tools, countingTool(fmt.Sprintf("t%03d", i), &runs))
	}
	tools = append(tools, countingTool("withheld", &runs))
	r, err := NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	r.SetHolds(func(_ context.Context, _, tool string) bool { return tool != "withheld" })
	out := r.Dispatch(context.Background(), &Call{Strand: "s"}, "withheld", json.RawMessage(`{}`))
	d, ok := out.Details.(NotHeldDetails)
	if !ok || len(d.Held) != maxHeldListed || d.HeldMore != 5 || runs.Load() != 0 {
		t.Fatalf("details %+v (%d runs), want %d listed and 5 more", out.Details, runs.Load(), maxHeldListed)
	}
	if !strings.Contains(out.Text, "and 5 more") {
		t.Errorf("refusal %q does not count the tools left off", out.Text)
	}
}

// TestHoldsIsDispatchsCheck: Holds answers what Dispatch enforces, and
// nobody holds a tool the registry does not offer.
func TestHoldsIsDispatchsCheck(t *testing.T) {
	t.Parallel()
	r, err := NewRegistry(Tool{Name: "a", Schema: json.RawMessage(`{"type":"object"}`), Run: func(context.Context, *Call, json.RawMessage) Outcome { return Outcome{Text: "ran"} }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if !r.Holds(ctx, "s", "a") || r.Holds(ctx, "s", "b") {
		t.Fatal("ungated: every strand holds every registered tool, and no other")
	}
	r.SetHolds(func(_ context.Context, strand, _ string) bool { return strand == "main" })
	for _, strand := range []string{"main", "other"} {
		ran := !r.Dispatch(ctx, &Call{Strand: strand}, "a", json.RawMessage(`{}`)).IsError
		if held := r.Holds(ctx, strand, "a"); held != ran {
			t.Errorf("strand %s: Holds = %v, Dispatch ran = %v", strand, held, ran)
		}
	}
}

// rawTool is a tool that answers out whatever its arguments: the probe
// of the outcome bound, since no built-in tool answers past it.
func rawTool(name string, out Outcome) Tool {
	return Tool{Name: name, Schema: json.RawMessage(`{"type":"object"}`),
		Run: func(context.Context, *Call, json.RawMessage) Outcome { return out }}
}

// withinOutcomeBound reports how o exceeds the outcome bounds, or "".
func withinOutcomeBound(o Outcome) (over string) {
	defer func() {
		if p := recover(); p != nil {
			over = fmt.Sprintf("details panic when encoded: %v", p)
		}
	}()
	var why []string
	if len(o.Text) > MaxOutcomeBytes {
		why = append(why, fmt.Sprintf("text is %d bytes", len(o.Text)))
	}
	if o.Details != nil {
		b, err := json.Marshal(o.Details)
		if err != nil {
			why = append(why, fmt.Sprintf("details do not encode: %v", err))
		} else if len(b) > MaxOutcomeBytes {
			why = append(why, fmt.Sprintf("details encode to %d bytes", len(b)))
		}
	}
	total := 0
	for _, img := range o.Images {
		total += len(img.Data)
	}
	if len(o.Images) > MaxOutcomeImages || total > MaxOutcomeImageBytes {
		why = append(why, fmt.Sprintf("%d images of %d bytes", len(o.Images), total))
	}
	return strings.Join(why, "; ")
}

// TestDispatchBoundsText: Text up to MaxOutcomeBytes comes back whole;
// longer Text is cut to fit, on a rune boundary, saying where it was cut
// and how long it was, keeping the code. The raw outcome of each case is
// over the bound (the control), Dispatch's is not.
func TestDispatchBoundsText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		text string
		cut  bool
	}{
		{"at the bound", strings.Repeat("a", MaxOutcomeBytes), false},
		{"one past", strings.Repeat("a", MaxOutcomeBytes+1), true},
		{"15 MiB", strings.Repeat("z", 15<<20), true},
		{"runes across the cut", strings.Repeat("é", MaxOutcomeBytes), true},
		{"four-byte runes", strings.Repeat("𝄞", MaxOutcomeBytes/3), true},
		{"not UTF-8", strings.Repeat("\xff\x80", MaxOutcomeBytes), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := Fail(CodeNotFound, tc.text)
			r, _ := NewRegistry(rawTool("big", raw))
			out := r.Dispatch(context.Background(), nil, "big", json.RawMessage(`{}`))
			if why := withinOutcomeBound(out); why != "" {
				t.Fatalf("Dispatch answered past the bound: %s", why)
			}
			if (withinOutcomeBound(raw) != "") != tc.cut {
				t.Fatalf("control: the raw outcome is over the bound = %v, want %v", !tc.cut, tc.cut)
			}
			if !out.IsError || out.Code != CodeNotFound {
				t.Errorf("code lost: IsError=%v Code=%q", out.IsError, out.Code)
			}
			if !tc.cut {
				if out.Text != tc.text {
					t.Fatalf("a text within the bound was changed (%d bytes, want %d)", len(out.Text), len(tc.text))
				}
				return
			}
			head, note, ok := strings.Cut(out.Text, "\n[answer cut: ")
			if !ok {
				t.Fatalf("no cut note at the end of %.100q…%q", out.Text, out.Text[max(0, len(out.Text)-200):])
			}
			if !strings.HasPrefix(tc.text, head) || len(head) < MaxOutcomeBytes-256 {
				t.Errorf("the head kept (%d bytes) is not the longest prefix that fits", len(head))
			}
			if utf8.ValidString(tc.text) && !utf8.ValidString(head) {
				t.Errorf("cut inside a rune: the head ends %q", head[len(head)-4:])
			}
			if want := fmt.Sprintf("the first %d of its %d bytes are shown", len(head), len(tc.text)); !strings.Contains(note, want) {
				t.Errorf("note %q does not say %q", note, want)
			}
		})
	}
}

// TestDispatchBoundsDetails: Details whose JSON is at most
// MaxOutcomeBytes come back as they were; longer ones, or ones that
// cannot be encoded (even by panicking), are replaced by OmittedDetails
// naming their type, and the text and code are kept.
func TestDispatchBoundsDetails(t *testing.T) {
	t.Parallel()
	at := strings.Repeat("a", MaxOutcomeBytes-2) // "…" quoted: the bound exactly
	cases := []struct {
		name    string
		details any
		want    any
	}{
		{"none", nil, nil},
		{"at the bound", at, at},
		{"one past", at + "a", OmittedDetails{Type: "string", Bytes: MaxOutcomeBytes + 1}},
		{"a struct past", PanicDetails{Stack: strings.Repeat("<", MaxOutcomeBytes/6+1)}, OmittedDetails{Type: "tool.PanicDetails", Bytes: len(`{"stack":""}`) + 6*(MaxOutcomeBytes/6+1)}},
		{"not encodable", make(chan int), OmittedDetails{Type: "chan int", Error: "json: unsupported type: chan int"}},
		{"encoder panics", panicky{}, OmittedDetails{Type: "tool.panicky", Error: "encoding panicked: marshal boom"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := NewRegistry(rawTool("d", Fail(CodeNotFound, "text kept").WithDetails(tc.details)))
			out := r.Dispatch(context.Background(), nil, "d", json.RawMessage(`{}`))
			if why := withinOutcomeBound(out); why != "" {
				t.Fatalf("Dispatch answered past the bound: %s", why)
			}
			if out.Text != "text kept" || out.Code != CodeNotFound || !out.IsError {
				t.Errorf("text or code changed: %+v", out)
			}
			if s, ok := tc.want.(string); ok {
				if got, _ := out.Details.(string); got != s {
					t.Fatalf("details within the bound changed (%d bytes)", len(got))
				}
				return
			}
			if diff := cmp.Diff(tc.want, out.Details); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
		})
	}
}

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("marshal boom") }

// TestDispatchBoundsImages: images are kept in order while at most
// MaxOutcomeImages of them total at most MaxOutcomeImageBytes; the text
// says how many were left out.
func TestDispatchBoundsImages(t *testing.T) {
	t.Parallel()
	img := func(n int) Image { return Image{MIME: "image/png", Data: make([]byte, n)} }
	half := MaxOutcomeImageBytes / 2
	cases := []struct {
		name   string
		images []Image
		kept   int
	}{
		{"one of the most bytes", []Image{img(MaxOutcomeImageBytes)}, 1},
		{"one past the bytes", []Image{img(MaxOutcomeImageBytes + 1)}, 0},
		{"two halves", []Image{img(half), img(MaxOutcomeImageBytes - half)}, 2},
		{"the second crosses", []Image{img(half), img(half + 1), img(1)}, 1},
		{"the most images", slices.Repeat([]Image{img(1)}, MaxOutcomeImages), MaxOutcomeImages},
		{"one image too many", slices.Repeat([]Image{img(1)}, MaxOutcomeImages+1), MaxOutcomeImages},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := NewRegistry(rawTool("i", Outcome{Text: "images", Images: tc.images}))
			out := r.Dispatch(context.Background(), nil, "i", json.RawMessage(`{}`))
			if why := withinOutcomeBound(out); why != "" {
				t.Fatalf("Dispatch answered past the bound: %s", why)
			}
			if len(out.Images) != tc.kept {
				t.Fatalf("kept %d images, want %d", len(out.Images), tc.kept)
			}
			for i := range out.Images {
				if len(out.Images[i].Data) != len(tc.images[i].Data) {
					t.Fatalf("image %d is not the one given at %d", i, i)
				}
			}
			left := len(tc.images) - tc.kept
			if left == 0 {
				if out.Text != "images" {
					t.Errorf("text changed: %q", out.Text)
				}
				return
			}
			if want := fmt.Sprintf("[%d of %d images left out", left, len(tc.images)); !strings.HasPrefix(out.Text, "images\n"+want) {
				t.Errorf("text %q does not say %q", out.Text, want)
			}
		})
	}
	t.Run("a full text keeps the note", func(t *testing.T) {
		t.Parallel()
		r, _ := NewRegistry(rawTool("i", Outcome{Text: strings.Repeat("a", MaxOutcomeBytes), Images: []Image{img(MaxOutcomeImageBytes + 1)}}))
		out := r.Dispatch(context.Background(), nil, "i", json.RawMessage(`{}`))
		if why := withinOutcomeBound(out); why != "" {
			t.Fatalf("Dispatch answered past the bound: %s", why)
		}
		if !strings.HasSuffix(out.Text, "images of 8388608 bytes together]") || !strings.Contains(out.Text, "\n[answer cut: ") {
			t.Errorf("text ends %q", out.Text[len(out.Text)-300:])
		}
	})
}

// TestDispatchBoundsItsOwnAnswers: the answers Dispatch makes itself,
// an unknown tool's and a recovered panic's (whose value may be as large
// as the tool liked), are bounded too.
func TestDispatchBoundsItsOwnAnswers(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("p", 3*MaxOutcomeBytes)
	boom := Tool{Name: "boom", Schema: json.RawMessage(`{"type":"object"}`),
		Run: func(context.Context, *Call, json.RawMessage) Outcome { panic(huge) }}
	r, _ := NewRegistry(boom)
	out := r.Dispatch(context.Background(), nil, "boom", json.RawMessage(`{}`))
	if why := withinOutcomeBound(out); why != "" {
		t.Fatalf("panic: %s", why)
	}
	if d, ok := out.Details.(PanicDetails); !ok || out.Code != CodeToolPanicked || !strings.Contains(d.Stack, "panic") {
		t.Errorf("panic: code %q, details %T", out.Code, out.Details)
	}
	if !strings.Contains(out.Text, "failed internally") || !strings.Contains(out.Text, fmt.Sprintf("of its %d bytes", len(huge)+len("tool boom failed internally (a bug in the tool, not in your arguments): "))) {
		t.Errorf("panic text: %.200q…", out.Text)
	}
	out = r.Dispatch(context.Background(), nil, huge, nil)
	if why := withinOutcomeBound(out); why != "" || out.Code != CodeUnknownTool || len(out.Text) > 2*MaxReasonBytes {
		t.Errorf("unknown tool: %s, code %q, %d bytes", why, out.Code, len(out.Text))
	}
}

// TestBoundTextProperties: for any text, note and bound, boundText's
// answer fits the bound, ends with the note, and is either text whole or
// a prefix of it that splits no rune, followed by a line saying how much
// was shown of how much.
func TestBoundTextProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.OneOf(
			rapid.String(),
			rapid.StringOfN(rapid.SampledFrom([]rune("aé𝄞€")), 0, 300, -1),
			rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 600), func(b []byte) string { return string(b) }),
		).Draw(t, "text")
		note := rapid.SampledFrom([]string{"", "\n[2 of 3 images left out]"}).Draw(t, "note")
		limit := rapid.IntRange(200, 700).Draw(t, "limit")
		got := boundText(text, note, limit)
		if len(got) > limit || !strings.HasSuffix(got, note) {
			t.Fatalf("%d bytes, bound %d, note kept %v", len(got), limit, strings.HasSuffix(got, note))
		}
		if len(text)+len(note) <= limit {
			if got != text+note {
				t.Fatalf("a fitting text was changed: %q", got)
			}
			return
		}
		head, rest, ok := strings.Cut(got, "\n[answer cut: ")
		if !ok || !strings.HasPrefix(text, head) {
			t.Fatalf("no cut note after a prefix: %q", got)
		}
		if utf8.ValidString(text) && !utf8.ValidString(head) {
			t.Fatalf("the cut split a rune: %q", head)
		}
		if want := fmt.Sprintf("the first %d of its %d bytes", len(head), len(text)); !strings.HasPrefix(rest, want) {
			t.Fatalf("note %q does not say %q", rest, want)
		}
		// The longest such prefix: what is left unused is at most a split
		// rune and the digits the note reserved but did not need.
		if unused, most := limit-len(got), utf8.UTFMax-1+len(strconv.Itoa(limit))-len(strconv.Itoa(len(head))); unused > most {
			t.Fatalf("%d bytes of the bound unused, at most %d may be", unused, most)
		}
	})
}

// TestModelText: an outcome reads as its text, an error's after
// "error <code>: ", or "error: " when it has no code.
func TestModelText(t *testing.T) {
	for _, tc := range []struct {
		o    Outcome
		want string
	}{
		{Success("ok"), "ok"},
		{Outcome{}, ""},
		{Fail(CodeInvalidArguments, "path is required"), "error invalid_arguments: path is required"},
		{Outcome{IsError: true, Text: "no code"}, "error: no code"},
		{Outcome{Code: CodeInvalidArguments, Text: "a code without IsError is no error"}, "a code without IsError is no error"},
	} {
		if got := tc.o.ModelText(); got != tc.want {
			t.Errorf("%+v.ModelText() = %q, want %q", tc.o, got, tc.want)
		}
	}
}
