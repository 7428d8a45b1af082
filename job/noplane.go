package job

import (
	"context"
	"time"
)

// NoPlane returns a Jobs for a host that runs no job plane: every call is
// refused with CodeNoJobPlane, and MaxWait is 0. A tool built with a nil
// Jobs uses it.
func NoPlane() Jobs { return noPlane{} }

type noPlane struct{}

func refuseNoPlane() error {
	return &Error{Code: CodeNoJobPlane, Reason: "this host runs no background jobs"}
}

func (noPlane) Start(context.Context, Owner, Spec) (Started, error) {
	return Started{}, refuseNoPlane()
}
func (noPlane) Attend(context.Context, Owner, Spec) (Started, error) {
	return Started{}, refuseNoPlane()
}
func (noPlane) Poll(context.Context, Owner, ID, Cursors, time.Duration) (Polled, error) {
	return Polled{}, refuseNoPlane()
}
func (noPlane) Release(context.Context, Owner, ID) (Releasing, error) { return 0, refuseNoPlane() }
func (noPlane) Kill(context.Context, Owner, ID) (Row, error)          { return Row{}, refuseNoPlane() }
func (noPlane) Send(context.Context, Owner, ID, []byte, StdinEnd) (Sent, error) {
	return Sent{}, refuseNoPlane()
}
func (noPlane) List(context.Context, Owner) (Listed, error) { return Listed{}, refuseNoPlane() }
func (noPlane) MaxWait() time.Duration                      { return 0 }

// orNoPlane returns j, or NoPlane when j is nil.
func orNoPlane(j Jobs) Jobs {
	if j == nil {
		return NoPlane()
	}
	return j
}
