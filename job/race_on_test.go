//go:build race

package job_test

// raceEnabled: under the race detector every jailed command re-executes
// the instrumented test binary as its jail helper, which costs about a
// tenth of a second per start.
const raceEnabled = true
