package history

import (
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
)

// day0 is the fixed time test entries are written at.
var day0 = time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)

// wantCode fails the test unless err carries code ("" for no error).
func wantCode(t testing.TB, err error, code tool.Code) {
	t.Helper()
	if got := tool.CodeOf(err); got != code || (code == "" && err != nil) {
		t.Fatalf("got code %q (err %v), want %q", got, err, code)
	}
}
