package job_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

func TestCursorTokenRoundTrip(t *testing.T) {
	for range rapidRounds(t) {
		rapid.Check(t, func(t *rapid.T) {
			id := job.ID(rapid.StringMatching(`j[0-9]{1,6}-[0-9a-f]{4}`).Draw(t, "id"))
			c := job.Cursors{
				Stdout: rapid.Int64Range(0, math.MaxInt64).Draw(t, "stdout"),
				Stderr: rapid.Int64Range(0, math.MaxInt64).Draw(t, "stderr"),
			}
			tok := c.Token(id)
			if len(tok) > job.MaxCursorTokenBytes {
				t.Fatalf("token %q is longer than %d", tok, job.MaxCursorTokenBytes)
			}
			got, err := job.ParseCursor(id, tok)
			if err != nil || got != c {
				t.Fatalf("ParseCursor(Token(%+v)) = %+v, %v", c, got, err)
			}
			other := job.ID(string(id) + "x")
			if _, err := job.ParseCursor(other, tok); err == nil {
				t.Fatalf("a token of %s parsed for %s", id, other)
			}
		})
	}
}

func TestParseCursorRefuses(t *testing.T) {
	good := job.Cursors{Stdout: 5, Stderr: 9}.Token("j1-aaaa")
	for _, tc := range []struct{ name, token string }{
		{"digits", "12"},
		{"wrong version", "c2." + strings.TrimPrefix(good, "c1.")},
		{"bad base64", "c1.!!!!"},
		{"empty body", "c1."},
		{"check only", "c1.AAAAAA"},
		{"truncated", good[:len(good)-2]},
		{"extended", good + "A"},
		{"one past the length bound", "c1." + strings.Repeat("A", job.MaxCursorTokenBytes-2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := job.ParseCursor("j1-aaaa", tc.token)
			var ce *job.CursorError
			if !errors.As(err, &ce) || ce.Code != job.CodeInvalidCursor {
				t.Fatalf("ParseCursor(%q) = %v, want a CursorError", tc.token, err)
			}
		})
	}
	if c, err := job.ParseCursor("j1-aaaa", ""); err != nil || c != (job.Cursors{}) {
		t.Fatalf("empty token = %+v, %v; want the start", c, err)
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add("j1-aaaa", job.Cursors{Stdout: 5, Stderr: 9}.Token("j1-aaaa"))
	f.Add("j1-aaaa", "c1.AAAAAAA")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, id, token string) {
		c, err := job.ParseCursor(job.ID(id), token)
		if err != nil {
			return
		}
		if c.Stdout < 0 || c.Stderr < 0 {
			t.Fatalf("ParseCursor(%q) = %+v: negative offsets", token, c)
		}
		if token != "" && c.Token(job.ID(id)) != token {
			t.Fatalf("ParseCursor(%q) = %+v, which renders as %q: two tokens for one cursor", token, c, c.Token(job.ID(id)))
		}
	})
}

func TestCheckLifetime(t *testing.T) {
	for _, tc := range []struct {
		strand   string
		lifetime job.Lifetime
		refused  bool
	}{
		{"main", "", false},
		{"main", job.LifetimeDefault, false},
		{"main", job.LifetimeSession, false},
		{"sub:main/a-0123456789abcdef", job.LifetimeDefault, false},
		{"sub:main/a-0123456789abcdef", job.LifetimeSession, true},
		{"sub:", job.LifetimeSession, true},
		{"subagent", job.LifetimeSession, false},
		{"main", "forever", true},
	} {
		err := job.CheckLifetime(tc.strand, tc.lifetime)
		var le *job.LifetimeError
		if tc.refused != errors.As(err, &le) || (tc.refused && le.Code != job.CodeLifetimeRefused) {
			t.Errorf("CheckLifetime(%q, %q) = %v, want refused %v", tc.strand, tc.lifetime, err, tc.refused)
		}
	}
}

func TestNoPlaneRefusesWithItsCode(t *testing.T) {
	j := job.NoPlane()
	ctx := context.Background()
	_, err := j.Attend(ctx, job.Owner{}, job.Spec{})
	if code := tool.CodeOf(err); code != job.CodeNoJobPlane || j.MaxWait() != 0 {
		t.Fatalf("NoPlane().Attend = %v", err)
	}
	if !errors.Is(err, &job.Error{Code: job.CodeNoJobPlane}) || errors.Is(err, &job.Error{Code: job.CodeUnknownJob}) {
		t.Fatalf("errors.Is does not match by code: %v", err)
	}
}
