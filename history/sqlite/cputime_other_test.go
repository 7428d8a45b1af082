//go:build !unix

package sqlite

import "time"

// cpuTime is unknown here; rates per CPU-second then read as +Inf.
func cpuTime() time.Duration { return 0 }
