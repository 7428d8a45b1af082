package mcpserve

import (
	"context"
	"sync"
	"time"

	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProgressInterval is the least time between two progress notifications
// for one call. Output observed in between is coalesced: the next
// notification carries the latest tail, never a backlog.
const ProgressInterval = 200 * time.Millisecond

// MetaStream is the _meta key of a progress notification naming the
// stream ("stdout" or "stderr") whose tail the message carries.
const MetaStream = "agentloom/stream"

// progress relays a running command's rolling output tail to a client
// that sent a progress token. Observe never blocks on the client: it
// records the latest tail and wakes a sender goroutine, which sends at
// most one notification per interval. stop ends the sender and waits for
// it, so no notification follows the call's result.
type progress struct {
	notify   func(context.Context, *mcp.ProgressNotificationParams) error
	token    any
	interval time.Duration

	mu      sync.Mutex
	latest  tool.OutputTail
	totals  map[string]int64
	pending bool

	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

func startProgress(ctx context.Context, token any, interval time.Duration, notify func(context.Context, *mcp.ProgressNotificationParams) error) *progress {
	p := &progress{
		notify:   notify,
		token:    token,
		interval: interval,
		totals:   map[string]int64{},
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	p.wg.Add(1)
	go p.run(ctx)
	return p
}

// Observe is a tool.Call.ObserveOutput.
func (p *progress) Observe(t tool.OutputTail) {
	p.mu.Lock()
	p.latest = t
	if t.TotalBytes > p.totals[t.Stream] {
		p.totals[t.Stream] = t.TotalBytes
	}
	p.pending = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *progress) run(ctx context.Context) {
	defer p.wg.Done()
	var sent float64
	for {
		select {
		case <-p.done:
			return
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		p.mu.Lock()
		if !p.pending {
			p.mu.Unlock()
			continue
		}
		p.pending = false
		t := p.latest
		var total int64
		for _, n := range p.totals {
			total += n
		}
		p.mu.Unlock()
		// Progress must increase with every notification; the byte count
		// across both streams does whenever there is new output.
		if float64(total) > sent {
			sent = float64(total)
			_ = p.notify(ctx, &mcp.ProgressNotificationParams{
				Meta:          mcp.Meta{MetaStream: t.Stream},
				ProgressToken: p.token,
				Progress:      sent,
				Message:       t.Tail,
			})
		}
		select {
		case <-p.done:
			return
		case <-ctx.Done():
			return
		case <-time.After(p.interval):
		}
	}
}

// stop ends the sender and waits for it.
func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
}
