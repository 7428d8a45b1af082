package tool_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/tool"
)

func TestCursorTokenRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := tool.JobID(rapid.StringMatching(`j[0-9]{1,6}-[0-9a-f]{4}`).Draw(t, "id"))
		c := tool.Cursors{
			Stdout: rapid.Int64Range(0, math.MaxInt64).Draw(t, "stdout"),
			Stderr: rapid.Int64Range(0, math.MaxInt64).Draw(t, "stderr"),
		}
		tok := c.Token(id)
		if len(tok) > tool.MaxCursorTokenBytes {
			t.Fatalf("token %q is longer than %d", tok, tool.MaxCursorTokenBytes)
		}
		got, err := tool.ParseCursor(id, tok)
		if err != nil || got != c {
			t.Fatalf("ParseCursor(Token(%+v)) = %+v, %v", c, got, err)
		}
		other := tool.JobID(string(id) + "x")
		if _, err := tool.ParseCursor(other, tok); err == nil {
			t.Fatalf("a token of %s parsed for %s", id, other)
		}
	})
}

func TestParseCursorRefuses(t *testing.T) {
	good := tool.Cursors{Stdout: 5, Stderr: 9}.Token("j1-aaaa")
	for _, tc := range []struct{ name, token string }{
		{"digits", "12"},
		{"wrong version", "c2." + strings.TrimPrefix(good, "c1.")},
		{"bad base64", "c1.!!!!"},
		{"empty body", "c1."},
		{"check only", "c1.AAAAAA"},
		{"truncated", good[:len(good)-2]},
		{"extended", good + "A"},
		{"one past the length bound", "c1." + strings.Repeat("A", tool.MaxCursorTokenBytes-2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tool.ParseCursor("j1-aaaa", tc.token)
			var ce *tool.CursorError
			if !errors.As(err, &ce) || ce.Code() != tool.InvalidCursorCode {
				t.Fatalf("ParseCursor(%q) = %v, want a CursorError", tc.token, err)
			}
		})
	}
	if c, err := tool.ParseCursor("j1-aaaa", ""); err != nil || c != (tool.Cursors{}) {
		t.Fatalf("empty token = %+v, %v; want the start", c, err)
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add("j1-aaaa", tool.Cursors{Stdout: 5, Stderr: 9}.Token("j1-aaaa"))
	f.Add("j1-aaaa", "c1.AAAAAAA")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, id, token string) {
		c, err := tool.ParseCursor(tool.JobID(id), token)
		if err != nil {
			return
		}
		if c.Stdout < 0 || c.Stderr < 0 {
			t.Fatalf("ParseCursor(%q) = %+v: negative offsets", token, c)
		}
		if token != "" && c.Token(tool.JobID(id)) != token {
			t.Fatalf("ParseCursor(%q) = %+v, which renders as %q: two tokens for one cursor", token, c, c.Token(tool.JobID(id)))
		}
	})
}

func TestCheckLifetime(t *testing.T) {
	for _, tc := range []struct {
		strand   string
		lifetime tool.JobLifetime
		refused  bool
	}{
		{"main", "", false},
		{"main", tool.LifetimeDefault, false},
		{"main", tool.LifetimeSession, false},
		{"sub:main/a-0123456789abcdef", tool.LifetimeDefault, false},
		{"sub:main/a-0123456789abcdef", tool.LifetimeSession, true},
		{"sub:", tool.LifetimeSession, true},
		{"subagent", tool.LifetimeSession, false},
		{"main", "forever", true},
	} {
		err := tool.CheckLifetime(tc.strand, tc.lifetime)
		var le *tool.LifetimeError
		if tc.refused != errors.As(err, &le) || (tc.refused && le.Code() != tool.LifetimeRefusedCode) {
			t.Errorf("CheckLifetime(%q, %q) = %v, want refused %v", tc.strand, tc.lifetime, err, tc.refused)
		}
	}
}

func TestNoJobsRefusesWithItsCode(t *testing.T) {
	j := tool.NoJobs()
	ctx := context.Background()
	_, err := j.Attend(ctx, tool.JobOwner{}, tool.JobSpec{})
	if code, ok := tool.JobRefusal(err); !ok || code != tool.NoJobsPlane || j.MaxWait() != 0 {
		t.Fatalf("NoJobs().Attend = %v", err)
	}
	if !errors.Is(err, &tool.JobError{Code: tool.NoJobsPlane}) || errors.Is(err, &tool.JobError{Code: tool.JobUnknown}) {
		t.Fatalf("errors.Is does not match by code: %v", err)
	}
}
