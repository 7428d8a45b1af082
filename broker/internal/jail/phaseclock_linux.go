package jail

import "golang.org/x/sys/unix"

// monotonicNow is CLOCK_MONOTONIC in nanoseconds: one clock for the
// broker and every helper it starts.
func monotonicNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
