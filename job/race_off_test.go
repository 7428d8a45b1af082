//go:build !race

package job_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
