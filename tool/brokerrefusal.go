package tool

import (
	"errors"

	"github.com/agentloom/loom/broker"
)

// brokerDenial returns the *broker.Denial a broker refusal holds (the
// broker's Clear, Compose and Ledger.Admit return one inside an error,
// found with errors.As). It never returns nil for a non-nil err: an error
// that holds no denial, which the broker's contract rules out, is reported
// as a jail failure wrapping it, so a caller fails closed. For a nil err
// it returns nil.
func brokerDenial(err error) *broker.Denial {
	if err == nil {
		return nil
	}
	var d *broker.Denial
	if errors.As(err, &d) {
		return d
	}
	return broker.NewDenial(broker.DenialJailFailed, err.Error(), err)
}
