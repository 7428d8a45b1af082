package broker

import (
	"os"
	"sync"

	"github.com/agentloom/loom/sandbox"
)

// outputBound counts the bytes a command's two streams deliver against
// the command's output bound. The first byte past the bound trips it:
// nothing more is delivered and onTrip (which stops the command's tree)
// runs once.
type outputBound struct {
	mu      sync.Mutex
	left    int64
	tripped bool
	onTrip  func()
}

func newOutputBound(limit int64, onTrip func()) *outputBound {
	return &outputBound{left: limit, onTrip: onTrip}
}

// take returns how many of n bytes just read may be delivered: all of
// them while they fit, what is left of the bound when they do not (and
// the bound trips), nothing once it tripped. Output of exactly the bound
// is delivered whole and does not trip it.
func (o *outputBound) take(n int) int {
	o.mu.Lock()
	if o.tripped {
		o.mu.Unlock()
		return 0
	}
	if int64(n) <= o.left {
		o.left -= int64(n)
		o.mu.Unlock()
		return n
	}
	k := int(o.left)
	o.left = 0
	o.tripped = true
	o.mu.Unlock()
	o.onTrip()
	return k
}

// limited reports whether the bound tripped.
func (o *outputBound) limited() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tripped
}

// maxOutputBytes is the bound on what spec's command may write to stdout
// and stderr together: spec.MaxOutputBytes (defaultMaxOutputBytes when
// zero or less), lowered to Options.MaxOutputBytes when the host set one.
func (b *Broker) maxOutputBytes(spec sandbox.CallSpec) int64 {
	n := spec.MaxOutputBytes
	if n <= 0 {
		n = defaultMaxOutputBytes
	}
	if c := b.opts.MaxOutputBytes; c > 0 {
		n = min(n, c)
	}
	return n
}

// pump copies one pipe into feed in chunks of at most outputChunkBytes,
// delivering only what bound admits. Past the bound it keeps reading (and
// drops what it reads) until the pipe ends, so the command's last writers
// never block on a full pipe while its tree is being killed.
func pump(wg *sync.WaitGroup, r *os.File, s sandbox.Stream, feed sandbox.Feed, bound *outputBound) {
	defer wg.Done()
	buf := make([]byte, outputChunkBytes)
	for {
		n, err := r.Read(buf)
		if k := bound.take(n); k > 0 {
			feed.Send(sandbox.Output{Stream: s, Bytes: append([]byte(nil), buf[:k]...)})
		}
		if err != nil {
			return
		}
	}
}
