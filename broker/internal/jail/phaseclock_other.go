//go:build !linux

package jail

import "time"

// clockStart anchors monotonicNow where no helper shares the clock.
var clockStart = time.Now()

// monotonicNow is nanoseconds since this process's clockStart.
func monotonicNow() int64 { return int64(time.Since(clockStart)) }
