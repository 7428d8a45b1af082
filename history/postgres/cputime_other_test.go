//go:build !unix

package postgres

import "time"

// cpuTime is unknown here; rates per CPU-second then read as +Inf.
func cpuTime() time.Duration { return 0 }
