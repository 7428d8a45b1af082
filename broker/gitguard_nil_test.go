package broker

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentloom/loom/sandbox"
)

// TestNilBrokerGuardToolWriteRefusesWithADenial: a nil *Broker's
// GuardToolWrite (the guard's checks with no memory) refuses as a
// Broker's does, with a *sandbox.Denial carrying its code: a path
// outside the root is DenialInvalidPolicy, never an uncoded error.
func TestNilBrokerGuardToolWriteRefusesWithADenial(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	outside := filepath.Join(t.TempDir(), "f")
	for name, b := range map[string]*Broker{"nil": nil, "broker": New(Options{})} {
		_, err := b.GuardToolWrite(ws, outside)
		var d *sandbox.Denial
		if !errors.As(err, &d) || d.Code != sandbox.DenialInvalidPolicy {
			t.Errorf("%s: GuardToolWrite(%s, %s) = %v (%T), want a %s denial", name, ws, outside, err, err, sandbox.DenialInvalidPolicy)
		}
		if b != nil {
			b.Close()
		}
	}
}
