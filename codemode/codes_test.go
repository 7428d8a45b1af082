package codemode

import (
	"fmt"
	"testing"

	"github.com/agentloom/loom/tool"
)

// TestCodeOfReadsTheInternalErrors: the coded errors no host receives as
// such (the channel fault, rendered into RunResult.Fault; the describe
// failure, rendered into a cap:// outcome) still carry their codes to
// tool.CodeOf, wrapped once, as every exported coded error does (package
// tool's TestCodeOfReadsEveryCodedError).
func TestCodeOfReadsTheInternalErrors(t *testing.T) {
	t.Parallel()
	_, describeErr := describeSeam(embeddedPrelude(), Seam{Name: "probe", Packages: []string{"cap/nope"}})
	for _, tt := range []struct {
		err  error
		want tool.Code
	}{
		{&channelFault{Reason: "r"}, CodeChannelFault},
		{describeErr, CodeUnknownCapPackage},
	} {
		if tt.err == nil {
			t.Fatal("no error constructed")
		}
		if got := tool.CodeOf(fmt.Errorf("wrap: %w", tt.err)); got != tt.want {
			t.Errorf("CodeOf(wrap(%T)) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
