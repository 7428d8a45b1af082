package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/tool"
)

// A call whose context has ended is refused tool.CodeCancelled, naming
// the cause: not busy, which would tell the model to send the call again.
func TestEndedContextIsCancelledNotBusy(t *testing.T) {
	t.Parallel()
	s := openTest(t, Options{})
	mustIndex(t, s, entry("s1", "e1", "some words"))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	past, stop := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer stop()
	for name, ctx := range map[string]context.Context{"cancelled": cancelled, "past its deadline": past} {
		_, err := s.Search(ctx, history.Query{Text: "words", Limit: 5})
		wantCode(t, err, tool.CodeCancelled)
		_, err = s.Recent(ctx, "s1", 5)
		wantCode(t, err, tool.CodeCancelled)
		wantCode(t, s.Index(ctx, entry("s1", "e2", "more")), tool.CodeCancelled)
		wantCode(t, second(s.Remember(ctx, testNote())), tool.CodeCancelled)
		if history.Transient(tool.CodeOf(err)) {
			t.Errorf("%s: a cancelled call is called transient", name)
		}
	}
}
