package agent

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultBlockCooldown is a Guard's cooldown when NewGuard is given none:
// after a block reaches a primary, another block to it within this long
// is downgraded to a nudge.
const DefaultBlockCooldown = 2 * time.Minute

// maxAdviceRemembered bounds the advice texts a Guard remembers per
// primary to drop repeats; past it the oldest is forgotten.
const maxAdviceRemembered = 256

// Door is what a host does with advice a Guard lets through.
type Door interface {
	// Interrupt stops primary now with text (a block). It answers
	// AckDelivered, or an error.
	Interrupt(ctx context.Context, primary, text string) (Ack, error)
	// Enqueue queues text for primary's next stop (a nudge). It answers
	// AckQueued, or AckWoke when the queue went out at once onto an idle
	// primary, or an error.
	Enqueue(ctx context.Context, primary, text string) (Ack, error)
}

// Guard is the reference Advice: the emission guard in front of a host's
// Door. For each primary it drops advice already given (the same text,
// whatever its verdict) with AckDropped, and downgrades a block raised
// within the cooldown of the last block that reached the primary to a
// nudge, answering AckDowngraded whatever the queue did (a AckWoke is appended
// to the reason). A quiet verdict is AckAcknowledged and changes nothing.
// Time is the request's At (the call's clock). A Guard is safe for
// concurrent use; it holds its lock across the Door's call, so verdicts
// are judged one at a time, in memory for the session.
type Guard struct {
	door      Door
	primaryOf func(advisor string) (string, bool)
	cooldown  time.Duration

	mu        sync.Mutex
	primaries map[string]*guarded
}

// guarded is what a Guard remembers of one primary.
type guarded struct {
	blocked   bool // a block has reached it
	lastBlock time.Time
	given     map[string]bool
	order     []string // given's texts, oldest first
}

// NewGuard returns a Guard over door. primaryOf names the primary an
// advisor strand watches (false: it watches none, and its verdicts are
// refused with CodeAdviceUnavailable). A cooldown of zero or less means
// DefaultBlockCooldown.
func NewGuard(door Door, primaryOf func(advisor string) (primary string, ok bool), cooldown time.Duration) *Guard {
	if cooldown <= 0 {
		cooldown = DefaultBlockCooldown
	}
	return &Guard{door: door, primaryOf: primaryOf, cooldown: cooldown, primaries: map[string]*guarded{}}
}

// Cooldown is the guard's cooldown between two blocks to one primary.
func (g *Guard) Cooldown() time.Duration { return g.cooldown }

// Judge implements Advice.
func (g *Guard) Judge(ctx context.Context, r AdviceRequest) (Ack, error) {
	primary, ok := "", false
	if g.primaryOf != nil {
		primary, ok = g.primaryOf(r.Advisor)
	}
	if !ok {
		return Ack{}, refuse(CodeAdviceUnavailable, "strand %s watches no primary", quote(r.Advisor))
	}
	if r.Verdict.Kind == Quiet {
		return Ack{Kind: AckAcknowledged}, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.primaries[primary]
	if p == nil {
		p = &guarded{given: map[string]bool{}}
		g.primaries[primary] = p
	}
	if p.given[r.Verdict.Text] {
		return Ack{Kind: AckDropped, Reason: "the primary was already given this advice"}, nil
	}
	var ack Ack
	var err error
	switch {
	case r.Verdict.Kind == Block && p.blocked && r.At.Sub(p.lastBlock) < g.cooldown:
		ago := r.At.Sub(p.lastBlock).Round(time.Second)
		ack, err = g.door.Enqueue(ctx, primary, r.Verdict.Text)
		if err != nil {
			return Ack{}, err
		}
		reason := fmt.Sprintf("a block reached the primary %s ago, within the %s cooldown; it was queued as a nudge", ago, g.cooldown)
		if ack.Kind == AckWoke {
			reason += fmt.Sprintf(", and the queue went out at once onto the idle primary%s with %d nudges", by(ack.How), ack.Nudges)
		}
		ack = Ack{Kind: AckDowngraded, Reason: reason}
	case r.Verdict.Kind == Block:
		if ack, err = g.door.Interrupt(ctx, primary, r.Verdict.Text); err != nil {
			return Ack{}, err
		}
		if ack.Kind == AckDelivered {
			p.blocked, p.lastBlock = true, r.At
		}
	default:
		if ack, err = g.door.Enqueue(ctx, primary, r.Verdict.Text); err != nil {
			return Ack{}, err
		}
	}
	if ack.Kind != AckDropped {
		p.remember(r.Verdict.Text)
	}
	return ack, nil
}

func (p *guarded) remember(text string) {
	p.given[text] = true
	p.order = append(p.order, text)
	if len(p.order) > maxAdviceRemembered {
		delete(p.given, p.order[0])
		p.order = p.order[1:]
	}
}
