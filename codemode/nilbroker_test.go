package codemode

import (
	"testing"

	"github.com/agentloom/loom/broker"
)

// TestTypedNilBrokerRunsOnTheEngines: a host's call whose Broker holds
// a nil *broker.Broker (a nil broker variable assigned to the
// tool.Broker interface) runs on the Engine's broker, as a nil Broker
// does, through Execute called directly (not through Dispatch); it
// never panics into the host.
func TestTypedNilBrokerRunsOnTheEngines(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	var none *broker.Broker
	c := *s.call
	c.Broker = none
	s.call = &c
	res := s.mustRun(t, mainWith([]string{"fmt"}, `fmt.Println("ran")`))
	if string(res.Stdout) != "ran\n" {
		t.Fatalf("stdout %q", res.Stdout)
	}
}
