// Package execution is a background program's side of code_mode's
// launch mode: say when it is ready for input, name the endpoints it
// reads, and receive what the send mode delivers to them.
//
// A program launched with mode "launch" keeps running after the call
// that launched it answered. Until it calls Ready, a send to it is
// refused ("execution_not_ready"); Ready also registers the endpoint
// "default", the one a send names when it names none. Receive takes the
// oldest input sent to an endpoint, waiting for one at most the wait it
// is given (a wait of at most 60 s; 0 does not wait, a longer one fails
// with "invalid_capability_arguments"); ok is false when none came in
// time. Inputs come from the model's send calls, between its turns: loop
// on Receive (ok false is no error) rather than expect an input the
// moment you are ready.
//
// In a foreground run (mode "run") nothing can send: Ready and Register
// succeed and change nothing, and Receive fails with "not_background".
// Other codes: "unknown_endpoint" (Receive of an endpoint not
// registered), "invalid_capability_arguments" (a bad endpoint name, too
// many endpoints).
//
// Example:
//
//	if err := execution.Ready(ctx); err != nil {
//		panic(err)
//	}
//	in, ok, err := execution.Receive(ctx, "default", time.Second)
//	var e *execution.Error
//	if errors.As(err, &e) && e.Code == "not_background" {
//		fmt.Println("run in the foreground: nothing to receive")
//	} else if err != nil {
//		panic(err)
//	} else if ok {
//		fmt.Printf("received %s\n", in)
//	}
package execution

import (
	"context"
	"time"

	"cap/internal/client"
)

// Error is the error every cap package returns: execution.Error,
// fs.Error and the rest are one type. Fields: Cap (e.g.
// "execution.receive"), Code (a stable snake_case word to switch on),
// Message. See fs.Error for the codes.
type Error = client.Error

// Ready declares the program ready for input and registers the endpoint
// "default". Calling it again changes nothing. "default" counts against
// the host's bound on endpoints: when Register has already reached it,
// Ready fails with "invalid_capability_arguments".
func Ready(ctx context.Context) error {
	_, err := client.Call(ctx, "execution.ready", map[string]any{})
	return err
}

// Register adds the endpoint name (letters, digits, '-' and '_') to those
// a send may name. Registering a name twice changes nothing.
func Register(ctx context.Context, name string) error {
	_, err := client.Call(ctx, "execution.register", map[string]any{"endpoint": name})
	return err
}

// Receive returns the oldest input sent to endpoint, waiting up to wait
// for one; ok is false when none came.
func Receive(ctx context.Context, endpoint string, wait time.Duration) (input []byte, ok bool, err error) {
	const name = "execution.receive"
	args := map[string]any{"endpoint": endpoint}
	if wait > 0 {
		args["wait_ms"] = max(wait.Milliseconds(), 1)
	}
	m, err := client.Call(ctx, name, args)
	if err != nil {
		return nil, false, err
	}
	r := client.Read(m)
	input, ok = r.Bytes("input"), r.Bool("received")
	if err := r.Err(name); err != nil {
		return nil, false, err
	}
	return input, ok, nil
}
