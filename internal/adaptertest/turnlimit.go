package adaptertest

import (
	"errors"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

// TurnLimit is the MaxTurns of a turn-limit test's Runner.
const TurnLimit = 2

// TurnLimitCase is one case of an adapter's turn-limit test: a Runner
// with MaxTurns TurnLimit runs a model that calls the probe in each
// reply before reply AnswerAt (counted from 1) and answers without calls
// in it.
type TurnLimitCase struct {
	Name     string
	AnswerAt int
	WantErr  bool // the run ends with a *agent.TurnLimitError
}

// TurnLimitCases are a model still calling tools in its last allowed
// reply, whose run ends with a *agent.TurnLimitError and whose last
// calls are not run, and the control, a model answering in its last
// allowed reply, whose run ends normally.
var TurnLimitCases = []TurnLimitCase{
	{Name: "still calling at the limit", AnswerAt: TurnLimit + 1, WantErr: true},
	{Name: "answers at the limit", AnswerAt: TurnLimit, WantErr: false},
}

// Check fails tb unless the run ended as tc says, coded
// agent.CodeTurnLimit when it erred, after TurnLimit model replies and
// one probe call.
func (tc TurnLimitCase) Check(tb testing.TB, err error, replies, calls int) {
	tb.Helper()
	var limit *agent.TurnLimitError
	if got := errors.As(err, &limit); got != tc.WantErr {
		tb.Fatalf("Run error = %v; want a agent.TurnLimitError: %v", err, tc.WantErr)
	}
	if tc.WantErr && (limit.MaxTurns != TurnLimit || tool.CodeOf(err) != agent.CodeTurnLimit) {
		tb.Errorf("error = %+v (code %q); want MaxTurns %d, code %s", limit, tool.CodeOf(err), TurnLimit, agent.CodeTurnLimit)
	}
	if replies != TurnLimit || calls != 1 {
		tb.Errorf("model replies = %d, probe calls = %d; want %d and 1", replies, calls, TurnLimit)
	}
}
