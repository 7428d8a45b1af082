package history

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestRedact(t *testing.T) {
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----"
	tests := []struct {
		in, want string
	}{
		{"key sk-abcdefghijklmnop1234 here", "key [REDACTED] here"},
		{"sk-ant-api03-" + strings.Repeat("x", 40), "[REDACTED]"},
		{"short sk-abc stays", "short sk-abc stays"},
		{"ghp_" + strings.Repeat("A", 36), "[REDACTED]"},
		{"github_pat_" + strings.Repeat("B", 30), "[REDACTED]"},
		{"AKIAIOSFODNN7EXAMPLE", "[REDACTED]"},
		{"xoxb-1234567890-abcdef", "[REDACTED]"},
		{"AIza" + strings.Repeat("C", 35), "[REDACTED]"},
		{"jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIx.SflKxwRJSMeKKF2Q", "jwt [REDACTED]"},
		{"Authorization: Bearer abc123def456", "Authorization: Bearer [REDACTED]"},
		{"the bearer of bad news", "the bearer of bad news"},
		{"before\n" + pem + "\nafter", "before\n[REDACTED]\nafter"},
		{"-----BEGIN PRIVATE KEY-----\ntruncated", "[REDACTED]"},
		{"OPENAI_API_KEY=abc123", "OPENAI_API_KEY=[REDACTED]"},
		{"password: hunter2", "password: [REDACTED]"},
		{`DB_PASSWORD="two words"`, "DB_PASSWORD=[REDACTED]"},
		{"client_secret = 'x y'", "client_secret = [REDACTED]"},
		{"AUTH_TOKEN=abc SECRET_KEY=def", "AUTH_TOKEN=[REDACTED] SECRET_KEY=[REDACTED]"},
		{"max_tokens=4096 author=Bob", "max_tokens=4096 author=Bob"},
		{"nothing secret here", "nothing secret here"},
	}
	for _, tt := range tests {
		if got := redact(tt.in); got != tt.want {
			t.Errorf("redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// secretGen draws one secret of a shape redact must remove.
func secretGen() *rapid.Generator[string] {
	alnum := rapid.StringMatching(`[A-Za-z0-9]{40}`)
	return rapid.Custom(func(t *rapid.T) string {
		tail := alnum.Draw(t, "tail")
		switch rapid.IntRange(0, 4).Draw(t, "shape") {
		case 0:
			return "sk-" + tail
		case 1:
			return "ghp_" + tail
		case 2:
			return "API_KEY=" + tail
		case 3:
			return "Bearer 9" + tail
		default:
			return "-----BEGIN EC PRIVATE KEY-----\n" + tail + "\n-----END EC PRIVATE KEY-----"
		}
	})
}

func TestRedactProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prose := rapid.StringMatching(`[a-z .,\n]{0,40}`)
		before, after := prose.Draw(t, "before"), prose.Draw(t, "after")
		secret := secretGen().Draw(t, "secret")
		text := before + " " + secret + " " + after
		once := redact(text)
		// The secret's distinctive tail never survives.
		tail := secret[len(secret)-20:]
		if strings.HasSuffix(secret, "-----") {
			tail = secret[31:51]
		}
		if strings.Contains(once, tail) {
			t.Fatalf("secret survived: %q -> %q", text, once)
		}
		if !strings.Contains(once, redactedMark) {
			t.Fatalf("no mark in %q", once)
		}
		// Idempotent.
		if twice := redact(once); twice != once {
			t.Fatalf("not idempotent: %q -> %q", once, twice)
		}
	})
}

func TestRedactIdempotentOnAnyText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		once := redact(s)
		if twice := redact(once); twice != once {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, once, twice)
		}
	})
}
