package broker

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentloom/loom/sandbox"
)

// TestDenialOf: a wrapped denial is found as it is, a nil error has
// none, and an error holding no denial fails closed as jail_failed.
func TestDenialOf(t *testing.T) {
	t.Parallel()
	d := sandbox.NewDenial(sandbox.DenialOutstandingCapReached, "cap", nil)
	if got := sandbox.DenialOf(fmt.Errorf("clear: %w", d)); got != d {
		t.Errorf("wrapped denial: got %v", got)
	}
	if got := sandbox.DenialOf(nil); got != nil {
		t.Errorf("nil error: got %v", got)
	}
	plain := errors.New("no denial here")
	if got := sandbox.DenialOf(plain); got == nil || got.Code != sandbox.DenialJailFailed || !errors.Is(got, plain) {
		t.Errorf("plain error: got %#v", got)
	}
}
