package history

import (
	"regexp"
	"strings"
)

// redactedMark replaces every secret redact finds.
const redactedMark = "[REDACTED]"

// secretPatterns are the shapes of secret redact removes. Each match is
// replaced whole by redactedMark, except keyValueSecret, which keeps the
// key. None of them matches redactedMark itself, so redact is idempotent.
var secretPatterns = []*regexp.Regexp{
	// PEM private keys, with or without their END line.
	regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?s:.*?)(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`),
	// Provider API keys: OpenAI/Anthropic-style sk-..., GitHub tokens,
	// AWS access key ids, Slack tokens, Google API keys, JSON web tokens.
	regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{16,}`),
	regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`),
	regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`),
	regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9\-]{10,}`),
	regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`),
}

// bearerToken matches an Authorization-style bearer credential; the word
// Bearer is kept. bearerValue decides whether what follows looks like a
// credential rather than an English word.
var bearerToken = regexp.MustCompile(`(?i)\b(bearer)(\s+)([A-Za-z0-9._~+/\-]{8,}=*)`)

// bearerValue reports whether v looks like a credential: long, or mixing
// letters with digits or punctuation.
func bearerValue(v string) bool {
	if len(v) >= 24 {
		return true
	}
	return strings.ContainsAny(v, "0123456789._~+/-=")
}

// keyValueSecret matches KEY=value or KEY: value where the key's name says
// it holds a secret; the key is kept and the value replaced.
var keyValueSecret = regexp.MustCompile(`(?i)\b([A-Za-z0-9_.\-]*(?:secret|token|passw(?:or)?d|pwd|api[_\-]?key|access[_\-]?key|private[_\-]?key|credentials?)(?:[_\-]?key)?)(\s*[:=]\s*)("[^"\n]*"|'[^'\n]*'|[^\s"']+)`)

// redact returns s with every secret it recognises replaced by
// redactedMark: PEM private keys, provider API keys and tokens (sk-...,
// ghp_..., AKIA..., xoxb-..., AIza..., JWTs), bearer tokens, and the value
// of KEY=value or KEY: value pairs whose key names a secret (PASSWORD,
// API_KEY, CLIENT_SECRET, AUTH_TOKEN, ...). It is idempotent.
func redact(s string) string {
	for _, re := range secretPatterns {
		s = re.ReplaceAllLiteralString(s, redactedMark)
	}
	s = bearerToken.ReplaceAllStringFunc(s, func(m string) string {
		sub := bearerToken.FindStringSubmatch(m)
		if !bearerValue(sub[3]) {
			return m
		}
		return sub[1] + sub[2] + redactedMark
	})
	s = keyValueSecret.ReplaceAllStringFunc(s, func(m string) string {
		sub := keyValueSecret.FindStringSubmatch(m)
		if sub[3] == redactedMark {
			return m
		}
		return sub[1] + sub[2] + redactedMark
	})
	return s
}
