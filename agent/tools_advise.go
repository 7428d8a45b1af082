package agent

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloom/loom/tool"
)

// AdviseToolName is the name of the tool AdviseTool builds.
const AdviseToolName = "advise"

// MaxAdviceBytes bounds the text of one nudge or block.
const MaxAdviceBytes = 2000

// VerdictKind is one point of the advisor's scale, ordered by what it
// costs the primary: nothing, a paragraph read when it next stops, an
// interruption now.
type VerdictKind string

// The three verdicts.
const (
	Quiet VerdictKind = "quiet"
	Nudge VerdictKind = "nudge"
	Block VerdictKind = "block"
)

// Verdict is one piece of advice: its kind and its text, decoded as one
// pair (DecodeVerdict). A quiet verdict has no text; a nudge and a block
// have some, at most MaxAdviceBytes.
type Verdict struct {
	Kind VerdictKind
	Text string
}

// DecodeVerdict decodes kind and text as one Verdict. It is total: any
// pair that is not a verdict is refused with a *Refusal coded
// CodeUnknownVerdict, CodeQuietWithText, CodeAdviceWithoutText or
// CodeAdviceTooLong. The text of a nudge or block is kept as given;
// blank text counts as none.
func DecodeVerdict(kind, text string) (Verdict, error) {
	blank := strings.TrimSpace(text) == ""
	switch VerdictKind(kind) {
	case Quiet:
		if !blank {
			return Verdict{}, refuse(CodeQuietWithText, "a quiet verdict says nothing; send nudge or block to say something")
		}
		return Verdict{Kind: Quiet}, nil
	case Nudge, Block:
		if blank {
			return Verdict{}, refuse(CodeAdviceWithoutText, "a %s needs text saying what the primary should do; send quiet when there is nothing to say", kind)
		}
		if len(text) > MaxAdviceBytes || !utf8.ValidString(text) {
			return Verdict{}, refuse(CodeAdviceTooLong, "advice is %d bytes; at most %d bytes of UTF-8", len(text), MaxAdviceBytes)
		}
		return Verdict{Kind: VerdictKind(kind), Text: text}, nil
	}
	return Verdict{}, refuse(CodeUnknownVerdict, "verdict %s is not quiet, nudge or block", quote(kind))
}

// AckKind says what the host did with one verdict.
type AckKind string

// The acknowledgements of the Advice seam.
const (
	// AckDelivered: the advice reached the primary; Ack.How says by which
	// door.
	AckDelivered AckKind = "delivered"
	// AckQueued: the nudge waits for the primary's next stop.
	AckQueued AckKind = "queued"
	// AckWoke: the nudge queue was drained onto an idle primary at once,
	// through Ack.How, carrying Ack.Nudges nudges (the queue drains
	// whole).
	AckWoke AckKind = "woke"
	// AckDowngraded: a block was sent as a nudge instead; the primary was
	// not stopped. Ack.Reason says why (and, when the queue it joined
	// went out at once, that it did).
	AckDowngraded AckKind = "downgraded"
	// AckDropped: nothing was sent; Ack.Reason says why.
	AckDropped AckKind = "dropped"
	// AckAcknowledged: a quiet verdict was taken; nothing was sent.
	AckAcknowledged AckKind = "acknowledged"
)

// Ack is what the host did with one verdict.
type Ack struct {
	Kind AckKind
	// How names the door of AckDelivered and AckWoke.
	How string
	// Nudges is how many nudges an AckWoke drained (at least 1).
	Nudges int
	// Reason says why a verdict was AckDowngraded or AckDropped; required for
	// those two.
	Reason string
}

// check refuses an Ack outside the vocabulary, so no answer is rendered
// as something it is not.
func (a Ack) check() error {
	switch a.Kind {
	case AckDelivered, AckQueued, AckAcknowledged:
	case AckWoke:
		if a.Nudges < 1 {
			return refuse(CodeAdviceUnavailable, "the host answered woke with %d nudges", a.Nudges)
		}
	case AckDowngraded, AckDropped:
		if strings.TrimSpace(a.Reason) == "" {
			return refuse(CodeAdviceUnavailable, "the host answered %s without a reason", a.Kind)
		}
	default:
		return refuse(CodeAdviceUnavailable, "the host answered %s, which is no acknowledgement", quote(string(a.Kind)))
	}
	return nil
}

// AdviceRequest is one verdict crossing the Advice seam.
type AdviceRequest struct {
	// Advisor is the calling strand, from the tool.Call, never from an
	// argument.
	Advisor string
	// Verdict is the decoded verdict.
	Verdict Verdict
	// At is the call's clock (tool.Call.Clock).
	At time.Time
}

// Advice is the seam behind advise: the host decides which primary the
// advisor watches and what each verdict costs it. Implementations answer
// a well-formed Ack, or an error (a *Refusal, read with tool.CodeOf).
// Guard is the reference, with the emission guard.
type Advice interface {
	Judge(ctx context.Context, r AdviceRequest) (Ack, error)
}

type adviseArgs struct {
	Verdict VerdictKind `json:"verdict"`
	Text    adviceText  `json:"text,omitempty"`
}

type adviceText string

// AdviseDetails is the Details of a successful advise.
type AdviseDetails struct {
	Verdict VerdictKind `json:"verdict"`
	Ack     AckKind     `json:"ack"`
	How     string      `json:"how,omitempty"`
	Nudges  int         `json:"nudges,omitempty"`
	Reason  string      `json:"reason,omitempty"`
}

var adviseDescription = fmt.Sprintf("Give the primary agent you watch your verdict: quiet (all is well, no text), "+
	"nudge (text it reads when it next stops) or block (text that interrupts it now). Text at most %d bytes. The answer "+
	"says what happened: a block may be downgraded to a nudge, repeated advice is dropped.", MaxAdviceBytes)

// cooldowner is an Advice that states its block cooldown (Guard does),
// which advise's description then names.
type cooldowner interface{ Cooldown() time.Duration }

// AdviseTool returns advise over a: an advisor strand's whole outward
// surface. The verdict and its text are decoded as one pair
// (DecodeVerdict) and judged for the calling strand (tool.Call.Strand);
// the answer is the host's Ack, rendered so a downgrade or a drop never
// reads as a delivery. It asks the broker for nothing. It is ReplayNever
// (a replay would say the same thing twice, or burn a cooldown the first
// call paid for) and Exclusive (two verdicts racing for one window would
// make which was downgraded a matter of scheduling). A nil a refuses
// every call with CodeAdviceUnavailable. When a has a Cooldown method
// (as Guard has), the description states the cooldown.
func AdviseTool(a Advice) tool.Tool {
	desc := adviseDescription
	if cd, ok := a.(cooldowner); ok && cd.Cooldown() > 0 {
		desc += fmt.Sprintf(" A block within %s of the last one that reached the primary is downgraded.", cd.Cooldown())
	}
	return tool.Typed(tool.Tool{
		Name:          AdviseToolName,
		Title:         "Advise the primary",
		Description:   desc,
		PromptSnippet: "advise: tell the primary agent quiet, nudge or block",
		Replay:        tool.ReplayNever,
		Mode:          tool.Exclusive,
	}, func(ctx context.Context, c *tool.Call, args adviseArgs) tool.Outcome {
		if a == nil {
			return refusalOutcome(AdviseToolName, refuse(CodeAdviceUnavailable, "this host takes no advice"))
		}
		v, err := DecodeVerdict(string(args.Verdict), string(args.Text))
		if err != nil {
			return refusalOutcome(AdviseToolName, err)
		}
		ack, err := a.Judge(ctx, AdviceRequest{Advisor: c.Strand, Verdict: v, At: c.Clock()})
		if err == nil {
			err = ack.check()
		}
		if err != nil {
			if tool.CodeOf(err) == "" {
				err = &Refusal{Code: CodeAdviceUnavailable, Reason: "the host failed: " + err.Error(), Err: err}
			}
			return refusalOutcome(AdviseToolName, err)
		}
		return tool.Success(renderAck(v, ack)).WithDetails(AdviseDetails{
			Verdict: v.Kind, Ack: ack.Kind, How: ack.How, Nudges: ack.Nudges, Reason: ack.Reason})
	},
		tool.TypeSchema{Type: reflect.TypeFor[VerdictKind](), Schema: &jsonschema.Schema{Type: "string",
			Enum: []any{string(Quiet), string(Nudge), string(Block)}}},
		tool.TypeSchema{Type: reflect.TypeFor[adviceText](), Schema: &jsonschema.Schema{Type: "string",
			Description: fmt.Sprintf("for nudge and block only, at most %d bytes", MaxAdviceBytes)}})
}

// renderAck is the text advise answers for verdict v acknowledged by a.
// Only AckDelivered and AckWoke say the primary got the advice; a AckDowngraded
// block says the primary was not stopped.
func renderAck(v Verdict, a Ack) string {
	switch a.Kind {
	case AckDelivered:
		return fmt.Sprintf("Your %s was delivered to the primary%s.", v.Kind, by(a.How))
	case AckQueued:
		return fmt.Sprintf("Your %s is queued: the primary reads it when it next stops.", v.Kind)
	case AckWoke:
		return fmt.Sprintf("Your %s woke the idle primary%s, with %d queued nudges.", v.Kind, by(a.How), a.Nudges)
	case AckDowngraded:
		return fmt.Sprintf("Your block was downgraded to a nudge: the primary was NOT stopped. Reason: %s", a.Reason)
	case AckDropped:
		return fmt.Sprintf("Your %s was dropped: nothing was sent. Reason: %s", v.Kind, a.Reason)
	case AckAcknowledged:
		return fmt.Sprintf("Your %s was acknowledged; nothing was sent.", v.Kind)
	}
	return fmt.Sprintf("The host answered %s.", quote(string(a.Kind)))
}

func by(how string) string {
	if how == "" {
		return ""
	}
	return " by " + how
}
